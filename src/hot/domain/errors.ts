// The one registry of error codes (model: fastify lib/errors.js): each code's HTTP status
// and its message template, where `%s` takes the throw site's arguments (errorMessage(),
// ApiError.of()). A throw site may still give a message of its own (`new ApiError(code,
// message)`) when the template says too little. A code, once shipped, is never reused for
// another meaning: retire it (RETIRED) instead. test/unit/errors.test.ts holds both
// directions: every code raised in src is registered, every registered code is raised.
export const REGISTRY = {
  BAD_REQUEST: { status: 400, message: 'bad request: %s' },
  BAD_QUERY: { status: 400, message: 'invalid query: %s' },
  BAD_JSON: { status: 400, message: 'the body is not valid JSON: %s' },
  VALIDATION_FAILED: { status: 400, message: 'invalid body: %s' },
  UNAUTHORIZED: { status: 401, message: 'a valid key is required' },
  CSRF_FAILED: { status: 403, message: 'missing or wrong X-CSRF-Token' },
  NOT_FOUND: { status: 404, message: 'no such %s' },
  METHOD_NOT_ALLOWED: { status: 405, message: '%s is not allowed here; use %s' },
  CONFLICT: { status: 409, message: 'conflict: %s' },
  PAYLOAD_TOO_LARGE: { status: 413, message: 'the body is larger than %s bytes' },
  UNSUPPORTED_MEDIA_TYPE: { status: 415, message: 'the body must be %s' },
  URI_TOO_LONG: { status: 414, message: 'the request target is longer than %s bytes' },
  RATE_LIMITED: { status: 429, message: 'rate limit exceeded: %s' },
  INTERNAL: { status: 500, message: 'internal error' },
  UNAVAILABLE: { status: 503, message: '%s is unavailable; try again shortly' },
  OVERLOADED: { status: 503, message: 'too many %s; try again shortly' },
} as const satisfies Record<string, { status: number; message: string }>;

/** Codes shipped once and retired, with why: never registered again, never raised. */
export const RETIRED: Readonly<Record<string, string>> = {};

export type ErrorCode = keyof typeof REGISTRY;

/** code -> HTTP status */
export const ERRORS = Object.fromEntries(Object.entries(REGISTRY).map(([c, e]) => [c, e.status])) as { readonly [C in ErrorCode]: (typeof REGISTRY)[C]['status'] };

/** A code's message template with its `%s` filled by `args` in order (missing ones: "?"). */
export function errorMessage(code: ErrorCode, ...args: (string | number)[]): string {
  let i = 0;
  return REGISTRY[code].message.replace(/%s/g, () => String(args[i++] ?? '?'));
}

export class ApiError extends Error {
  readonly code: ErrorCode;
  readonly status: number;
  readonly headers: Record<string, string>;
  /** An error with its code's template filled by `args` (errorMessage()). */
  static of(code: ErrorCode, args: (string | number)[] = [], headers: Record<string, string> = {}): ApiError {
    return new ApiError(code, errorMessage(code, ...args), headers);
  }

  /** `message`: the throw site's own, when the template (ApiError.of) says too little. */
  constructor(code: ErrorCode, message: string = errorMessage(code), headers: Record<string, string> = {}) {
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
