// The request as a handler sees it, the header list of an answer and the body reader's test
// hooks: plain types that the routing (route.ts), the body reader (body.ts) and the parts
// below the routes share.
export type Headers = [string, string][];

/** What a handler may know about the request, copied out of uWS's stack-allocated req. */
export interface Req {
  method: string;
  path: string;
  /** query string without '?'; null when the URL had no '?' */
  query: string | null;
  params: string[];
  authorization: string;
  cookie: string;
  csrf: string;
  ifNoneMatch: string;
  /**
   * Prefer (RFC 7240), read only beside an If-None-Match (a held request needs both: the
   * held/ room); "" otherwise
   */
  prefer: string;
  /**
   * the client address of a request that may be held (If-None-Match and Prefer both sent),
   * read whatever the route's `remote` says: held requests are shared out per address. Never
   * logged (the anonymous routes keep `remote` empty); "" otherwise
   */
  waiter: string;
  contentType: string;
  contentLength: number;
  /** Transfer-Encoding, read with the other headers on bearer-only routes without Content-Length (route.ts); otherwise not read here */
  transferEncoding?: string;
  /**
   * the client address: "" unless the route reads it (RouteOptions.remote, body routes); from
   * X-Forwarded-For / X-Real-IP when the connection comes from a trusted proxy
   */
  remote: string;
  startedAt: number;
  /** headers a route asked for through RouteOptions.headers (lower-case names) */
  extra?: Record<string, string>;
  /** deepest JSON nesting a body may have (RouteOptions.maxJsonDepth; body.ts) */
  maxJsonDepth?: number;
}

/** Test hooks of the body reader (RouteOptions.bodyHooks): what reading a request's body cost. */
export interface BodyHooks {
  /** `bytes` of req's body were copied out of uWS */
  read(req: Req, bytes: number): void;
  /** req's whole body went to its handler (to be parsed) */
  handed(req: Req): void;
}
