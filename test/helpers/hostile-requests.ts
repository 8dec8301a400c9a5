// Hostile raw requests for the property tests of the routes and of the metrics listener, as
// bytes no client would repair (sent with helpers/raw-client.ts): path segments (bad %,
// invalid and overlong UTF-8, traversal), query strings, header values, bodies (deep
// nesting, size, bytes that are not UTF-8) and methods; and the check every answer must pass:
// no 5xx (503 with Retry-After excepted), a 4xx with a body carries the contract's error body.
import fc from 'fast-check';
import { nearService } from './hostile.js';
import type { Raw } from './raw-client.js';

/** Bytes a request line can carry: controls, space, DEL and '#' percent-escaped; the rest raw. */
function onTheWire(bytes: Uint8Array): Buffer {
  const out: number[] = [];
  for (const b of bytes) {
    if (b <= 0x20 || b === 0x7f || b === 0x23 || b === 0x3f) out.push(...Buffer.from('%' + b.toString(16).toUpperCase().padStart(2, '0')));
    else out.push(b);
  }
  return Buffer.from(out);
}

const ENCODING_TRICKS = ['%', '%Z', '%ZZ', '%G1', '%00', '%2F', '%2e%2e', '..', '%C0%AE', '%C0%AF', '%E0%80%AF', '%ED%A0%80', '%F4%90%80%80', '%FF', '%FE%FF', '%E2%82', '%F0%9F%98%80', '+', '%20', 'é', '\u{1F600}'];
export const segment = (real: string[]) =>
  fc.oneof(
    { weight: 3, arbitrary: fc.constantFrom(...real).map((s) => Buffer.from(s)) },
    { weight: 2, arbitrary: fc.array(fc.constantFrom(...ENCODING_TRICKS), { minLength: 1, maxLength: 4 }).map((p) => onTheWire(Buffer.from(p.join('')))) },
    { weight: 1, arbitrary: fc.uint8Array({ minLength: 1, maxLength: 40 }).map((b) => onTheWire(b)) },
    { weight: 1, arbitrary: fc.constantFrom('x'.repeat(300), 'x'.repeat(9000), '0'.repeat(36), '00000000-0000-4000-8000-000000000000', 'ZZZZZZZZ-ZZZZ-ZZZZ-ZZZZ-ZZZZZZZZZZZZ', '__proto__', 'constructor').map((s) => Buffer.from(s)) },
  );

const QNAMES = ['capability', 'property', 'deviceClass', 'protocol', 'iotReady', 'healthy', 'limit', 'after', 'lastEventId', 'tier', 'page', 'v', '__proto__'];
const qvalue = fc.oneof(fc.constantFrom(...ENCODING_TRICKS, '0', '-1', '1e3', '99999999999999999999', 'free', 'true'), fc.string({ maxLength: 8 }), fc.stringMatching(/^[a-zA-Z0-9._:-]{1,8}$/));
export const query = fc.oneof(
  fc.constant(null),
  fc.uint8Array({ maxLength: 60 }).map((b) => onTheWire(b)),
  fc.array(fc.tuple(fc.constantFrom(...QNAMES), qvalue), { maxLength: 5 }).map((ps) => onTheWire(Buffer.from(ps.map(([n, v]) => n + '=' + v).join('&')))),
);

/** Header values as bytes: printable ASCII, obs-text (0x80-0xFF, invalid UTF-8), tricks. */
export const headerValue = (real: string[]) =>
  fc.oneof(
    { weight: 3, arbitrary: fc.constantFrom(...real) },
    { weight: 1, arbitrary: fc.constantFrom('', ' ', '%', '%ZZ', '%C0%AE', '-1', '1e400', '99999999999999999999', 'null', '"', '\\', 'W/"x"', '*', 'a=b; a=c', '=;=;', ';;;', '\t') },
    { weight: 1, arbitrary: fc.string({ maxLength: 40 }).map((s) => [...s].filter((ch) => ch.charCodeAt(0) >= 0x20 && ch.charCodeAt(0) !== 0x7f).join('')) },
    { weight: 1, arbitrary: fc.uint8Array({ maxLength: 40 }).map((b) => Buffer.from(b.filter((x) => x >= 0x20 && x !== 0x7f)).toString('latin1')) },
  );

/** JSON nested `depth` levels: arrays, objects or both, optionally wrapped in a body object */
export const deep = fc
  .record({ depth: fc.oneof(fc.integer({ min: 0, max: 40 }), fc.integer({ min: 3000, max: 12000 })), kind: fc.constantFrom('array', 'object', 'mixed'), wrap: fc.boolean() })
  .map(({ depth, kind, wrap }) => {
    let open = '';
    let close = '';
    for (let i = 0; i < depth; i++) {
      const arr = kind === 'array' || (kind === 'mixed' && i % 2 === 0);
      open += arr ? '[' : '{"a":';
      close = (arr ? ']' : '}') + close;
    }
    const v = open + '1' + close;
    return Buffer.from(wrap ? `{"endpoint":"https://d.example.com","capability":"d","properties":${v},"name":${v},"apiKey":${v}}` : v);
  });
const nearBody = nearService(fc.jsonValue({ maxDepth: 4 }));
export const body = fc.oneof(
  fc.constant(null),
  { weight: 3, arbitrary: deep },
  nearBody.map((v) => Buffer.from(JSON.stringify(v))),
  fc.uint8Array({ maxLength: 200 }).map((b) => Buffer.from(b)), // not JSON, not UTF-8
  fc.constantFrom('"\\ud800"', '{"name":"\\udfff"}', '{"a":1,"a":2}', '{"__proto__":{"x":1}}', '[' + '"x",'.repeat(3000) + '"x"]', 'x'.repeat(70_000)).map((s) => Buffer.from(s)),
);

export const METHODS = ['GET', 'HEAD', 'POST', 'PATCH', 'DELETE', 'PUT', 'OPTIONS'];

export function check(r: Raw, what: string): void {
  if (r.status === 0) throw new Error(`${what}: connection closed without an answer`);
  if (r.status >= 500 && !(r.status === 503 && r.headers['retry-after'])) throw new Error(`${what}: ${r.status} ${r.body.slice(0, 300)}`);
  if (r.status >= 400 && r.body !== '') {
    let b: { error?: { code?: unknown; message?: unknown } };
    try {
      b = JSON.parse(r.body) as typeof b;
    } catch {
      throw new Error(`${what}: ${r.status} with a body that is not JSON: ${r.body.slice(0, 200)}`);
    }
    if (typeof b.error?.code !== 'string' || typeof b.error.message !== 'string') throw new Error(`${what}: ${r.status} without the error body: ${r.body.slice(0, 200)}`);
  }
}
