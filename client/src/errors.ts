// Errors the client throws. A response with the contract's error body becomes an ApiError
// whose `code` is one of the document's codes; anything else that is not the expected answer
// (a proxy's HTML 502, a redirect the client did not expect) is an UnexpectedResponseError.
import type { ErrorCode } from './types.js';

export class ApiError extends Error {
  override readonly name = 'ApiError';
  constructor(
    /** HTTP status */
    readonly status: number,
    /** the registry's error code (`error.code` of the body) */
    readonly code: ErrorCode,
    message: string,
    /** for 429 (and 503): how long the server asked to wait, ms (Retry-After); else null */
    readonly retryAfterMs: number | null = null,
  ) {
    super(message);
  }
}

export class UnexpectedResponseError extends Error {
  override readonly name = 'UnexpectedResponseError';
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

/** `err` is an ApiError, with this code when one is given (narrowing in a catch block). */
export function isApiError<C extends ErrorCode>(err: unknown, code?: C): err is ApiError & { code: C } {
  return err instanceof ApiError && (code === undefined || err.code === code);
}
