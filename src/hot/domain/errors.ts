// The one registry of error codes and their HTTP status (model: fastify lib/errors.js).
// A code, once shipped, is never reused for another meaning; retire it instead.
export const ERRORS = {
  BAD_REQUEST: 400,
  BAD_QUERY: 400,
  BAD_JSON: 400,
  VALIDATION_FAILED: 400,
  UNAUTHORIZED: 401,
  CSRF_FAILED: 403,
  NOT_FOUND: 404,
  METHOD_NOT_ALLOWED: 405,
  CONFLICT: 409,
  PAYLOAD_TOO_LARGE: 413,
  UNSUPPORTED_MEDIA_TYPE: 415,
  URI_TOO_LONG: 414,
  RATE_LIMITED: 429,
  INTERNAL: 500,
  UNAVAILABLE: 503,
  OVERLOADED: 503,
} as const;

export type ErrorCode = keyof typeof ERRORS;

export class ApiError extends Error {
  readonly code: ErrorCode;
  readonly status: number;
  readonly headers: Record<string, string>;
  constructor(code: ErrorCode, message: string, headers: Record<string, string> = {}) {
    // a 4xx is an answer, not a fault: no stack trace (capturing one was 22 % of the CPU of
    // an over-limit key's local 429 in a profile); 5xx keep theirs for the logs
    const limit = Error.stackTraceLimit;
    if (ERRORS[code] < 500) Error.stackTraceLimit = 0;
    try {
      super(message);
    } finally {
      Error.stackTraceLimit = limit;
    }
    this.code = code;
    this.status = ERRORS[code];
    this.headers = headers;
  }
}

const bodies = new Map<string, string>();
const BODIES_MAX = 1024;

/**
 * The contract's error body. Kept per code and message (a few hundred distinct ones in
 * practice: a 429's limit and seconds, the fixed texts), so that a stream of the same answer
 * (an over-limit key) does not serialise it every time; emptied when full.
 */
export function errorBody(code: ErrorCode, message: string): string {
  const k = code + '\0' + message;
  let b = bodies.get(k);
  if (b === undefined) {
    b = JSON.stringify({ error: { code, message } });
    if (bodies.size >= BODIES_MAX) bodies.clear();
    bodies.set(k, b);
  }
  return b;
}

export const STATUS_TEXT: Record<number, string> = {
  200: '200 OK',
  201: '201 Created',
  204: '204 No Content',
  302: '302 Found',
  304: '304 Not Modified',
  400: '400 Bad Request',
  401: '401 Unauthorized',
  403: '403 Forbidden',
  404: '404 Not Found',
  405: '405 Method Not Allowed',
  409: '409 Conflict',
  413: '413 Payload Too Large',
  414: '414 URI Too Long',
  415: '415 Unsupported Media Type',
  429: '429 Too Many Requests',
  431: '431 Request Header Fields Too Large',
  500: '500 Internal Server Error',
  503: '503 Service Unavailable',
};
