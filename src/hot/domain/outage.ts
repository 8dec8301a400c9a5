// The one classifier of backend errors: which server an error came from (metrics count
// it under that backend) and whether it means "PostgreSQL or Redis cannot serve right now"
// (an outage: 503 with Retry-After and a warning, not a 500 with a stack), whichever route,
// repository or watcher it escaped from. It sits at the bottom of the layers (it imports
// only domain/), so that store/, redis/, sandbox/, the routes and the metrics share it.
import { ApiError } from './errors.js';

// Replies that mean "this Redis cannot serve right now" (loading a dataset, cluster
// reconfiguring, a replica promoted), as opposed to a bug in a script or a command.
const UNAVAILABLE_REPLY = /^(LOADING|CLUSTERDOWN|TRYAGAIN|MASTERDOWN|READONLY|BUSY) /;
const UNAVAILABLE_MESSAGE = /^(Connection is closed\.|Command timed out|Stream isn't writeable|None of startup nodes is available|Failed to refresh slots cache|Cluster isn't ready|Reached the max retries per request limit)/;

/** Is `err` ioredis saying Redis is unreachable or not serving (→ 503, not 500)? */
export function isRedisUnavailable(err: unknown): boolean {
  if (!(err instanceof Error)) return false;
  const e = err as Error & { code?: string };
  if (e.name === 'MaxRetriesPerRequestError' || e.name === 'ClusterAllFailedError') return true;
  if (e.code && ['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'EHOSTUNREACH', 'ENOTCONN'].includes(e.code)) return true;
  return UNAVAILABLE_MESSAGE.test(e.message) || (e.name === 'ReplyError' && UNAVAILABLE_REPLY.test(e.message));
}

// Connection failures, and the server's ways of saying "not now": shutting down or
// restarting (57P01-57P03), too many connections (53300), connection exceptions (08xxx), a
// statement cancelled by statement_timeout (57014: overloaded or blocked, worth a retry).
const UNAVAILABLE_CODES = new Set([
  'ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'ENOTFOUND', 'EPIPE', 'EHOSTUNREACH',
  '57P01', '57P02', '57P03', '57014', '53300', '08000', '08001', '08003', '08006',
]);

export function isPgUnavailable(err: unknown): boolean {
  const e = err as { code?: string; message?: string };
  if (e?.code && UNAVAILABLE_CODES.has(e.code)) return true;
  return /timeout exceeded when trying to connect|Connection terminated|connect ECONNREFUSED|Query read timeout|Client has encountered a connection error|Cannot use a pool after calling end/i.test(e?.message ?? '');
}

/** Does this error come from ioredis? (their classes are not exported in a stable way) */
function isRedisError(err: unknown): boolean {
  const e = err as { name?: string; message?: string } | null;
  if (!e) return false;
  if (e.name === 'ReplyError' || e.name === 'MaxRetriesPerRequestError' || e.name === 'ClusterAllFailedError') return true;
  return /Connection is closed|Command timed out|Stream isn't writeable|enableOfflineQueue|NOSCRIPT|CLUSTERDOWN|MOVED|READONLY/.test(e.message ?? '');
}

/** Is this error PostgreSQL's (a server error with a SQLSTATE, or a pg connection failure)? */
function isPgError(err: unknown): boolean {
  const e = err as { code?: unknown; severity?: unknown; message?: string } | null;
  if (!e) return false;
  if (typeof e.code === 'string' && /^[0-9A-Z]{5}$/.test(e.code) && typeof e.severity === 'string') return true;
  return /Connection terminated|Query read timeout|timeout exceeded when trying to connect|Client has encountered a connection error/.test(e.message ?? '');
}

/** The server an error came from, or null (a bug, a validation error, anything else). */
export function backendOf(err: unknown): 'redis' | 'postgres' | null {
  if (isRedisError(err)) return 'redis';
  if (isPgError(err)) return 'postgres';
  return null;
}

/** The 503 an outage error maps to, or null when `err` is not an outage. */
export function outageError(err: unknown): ApiError | null {
  if (isRedisUnavailable(err)) return new ApiError('REDIS_UNAVAILABLE', [], { 'Retry-After': '2' });
  if (isPgUnavailable(err)) return new ApiError('PG_UNAVAILABLE', [], { 'Retry-After': '5' });
  return null;
}
