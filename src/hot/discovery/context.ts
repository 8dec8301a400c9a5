// What the discovery protocols need of their thread (compose.ts's App meets it), and how a
// request picks its namespace (contract, "Discovery for other tools"): a valid sandbox key
// (`Authorization: Bearer`, or on the Consul routes `X-Consul-Token`) selects that sandbox
// and counts against its limit; anything else selects production.
import type { Config } from '../config.js';
import { PRODUCTION } from '../domain/keys.js';
import type { Headers } from '../http/route.js';
import { bearerKey, type SandboxAuth } from '../sandboxes/index.js';
import type { SearchContext } from '../search/index.js';

export interface DiscoveryContext extends SearchContext {
  cfg: Config;
  auth: SandboxAuth;
  version: string;
}

/** The namespace a request reads, and the rate-limit fields of a sandbox's request. */
export interface Chosen {
  ns: string;
  /** RateLimit fields (a sandbox's admitted request); empty for production */
  rate: Headers;
  /** a credential was sent (valid or not): the answer is private */
  keyed: boolean;
}

const PRODUCTION_CHOSEN: Chosen = { ns: PRODUCTION, rate: [], keyed: false };

/**
 * The namespace of a request from its credentials: `authorization` (Bearer) first, then
 * `token` (X-Consul-Token, "" when the route takes none). An unknown or malformed key reads
 * production, as on /services; a sandbox over its limit throws the 429.
 */
export async function chooseNamespace(app: DiscoveryContext, authorization: string, token = ''): Promise<Chosen> {
  if (!authorization && !token) return PRODUCTION_CHOSEN;
  const key = bearerKey(authorization) || token.trim();
  const uuid = key ? await app.auth.resolve(key) : null;
  if (!uuid) return { ns: PRODUCTION, rate: [], keyed: true };
  return { ns: uuid, rate: await app.auth.limitOrThrow(uuid), keyed: true };
}
