// Outages of the backing servers, told apart from bugs: an error that means "PostgreSQL or
// Redis cannot serve right now" becomes 503 with Retry-After (and a warning, not an error
// log with a stack), whichever route it escaped from. Anything else stays a 500.
import { ApiError } from '../domain/errors.js';
import { isRedisUnavailable } from '../redis/client.js';
import { isUnavailable as isPgUnavailable } from '../store/pool.js';

/** The 503 an outage error maps to, or null when `err` is not an outage. */
export function outageError(err: unknown): ApiError | null {
  if (isRedisUnavailable(err)) return new ApiError('UNAVAILABLE', 'a backing service is unavailable; try again shortly', { 'Retry-After': '2' });
  if (isPgUnavailable(err)) return new ApiError('UNAVAILABLE', 'the database is unavailable; try again shortly', { 'Retry-After': '5' });
  return null;
}
