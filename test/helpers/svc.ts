// The one type tests read a service as: the service object the server answers (contract,
// "Service"; serviceObject() in src/hot/domain/service.ts), and the answer that issued a
// heartbeat token.

export interface Svc {
  id: string;
  endpoint: string;
  capabilities: string[];
  properties: Record<string, string>;
  deprecated: boolean;
  locked: boolean;
  sunset_date: string | null;
  iotReady: boolean;
  iot: { deviceClasses: string[]; protocols: string[] } | null;
  health: { status: string; ttl: number | null };
  /** only in the answer to a registration with a ttl, or to a token rotation */
  heartbeatToken?: string;
  /** any other field a test reads (replacements, its own additions) */
  [field: string]: unknown;
}

/** the answer to a registration with a ttl: the service with its heartbeat token (shown once) */
export type Leased = Svc & { heartbeatToken: string };
