// The heartbeat connection's RESP reader (redis/resp-reader.ts): any sequence of replies, cut
// at any bytes as TCP may deliver them, reads whole and in order, as Redis wrote them; bytes
// that are not RESP are refused (the connection is then dropped, test/redis/script-line.test.ts).
import t from 'tap';
import fc from 'fast-check';
import { encodeCommand, LineReplyError, RespReader } from '../../src/hot/redis/resp-reader.js';

/** A reply value and its RESP bytes (as Redis writes them). */
type V = number | string | null | V[] | { err: string };
const valueArb: fc.Arbitrary<V> = fc.letrec<{ v: V }>((tie) => ({
  v: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    fc.integer({ min: -1e12, max: 1e12 }),
    fc.string({ unit: 'grapheme', maxLength: 30 }),
    fc.constant(null),
    fc.record({ err: fc.stringMatching(/^[A-Z]{3,8} [a-z ]{0,20}$/) }),
    fc.array(tie('v'), { maxLength: 5 }),
  ),
})).v;

function resp(v: V, simple: boolean): string {
  if (typeof v === 'number') return `:${v}\r\n`;
  if (typeof v === 'string') return simple && !/[\r\n]/.test(v) ? `+${v}\r\n` : `$${Buffer.byteLength(v)}\r\n${v}\r\n`;
  if (v === null) return '$-1\r\n';
  if (Array.isArray(v)) return `*${v.length}\r\n` + v.map((x) => resp(x, simple)).join('');
  return `-${v.err}\r\n`;
}

const plain = (v: unknown): unknown => (v instanceof LineReplyError ? { err: v.message } : Array.isArray(v) ? v.map(plain) : v);

t.test('RespReader: any replies, cut anywhere, read whole and in order', async (t) => {
  fc.assert(
    fc.property(fc.array(valueArb, { minLength: 1, maxLength: 6 }), fc.boolean(), fc.array(fc.nat(), { maxLength: 8 }), (vs, simple, cuts) => {
      const bytes = Buffer.from(vs.map((v) => resp(v, simple)).join(''));
      const at = [...new Set(cuts.map((c) => c % (bytes.length + 1)))].sort((a, b) => a - b);
      const reader = new RespReader();
      const got: unknown[] = [];
      let from = 0;
      for (const c of [...at, bytes.length]) {
        reader.feed(bytes.subarray(from, c), (v) => got.push(plain(v)));
        from = c;
      }
      return JSON.stringify(got) === JSON.stringify(vs);
    }),
    { numRuns: 400 },
  );
  t.pass('400 runs of replies cut at random read as written');
  t.throws(() => new RespReader().feed(Buffer.from('?x\r\n'), () => undefined), /unknown reply type/);
  t.throws(() => new RespReader().feed(Buffer.from(':12a\r\n'), () => undefined), /not an integer/);
  t.throws(() => new RespReader().feed(Buffer.from('$3\r\nabcde\r\n'), () => undefined), /without its CRLF/);
  t.throws(() => new RespReader().feed(Buffer.from('*1\r\n'.repeat(12) + ':1\r\n'), () => undefined), /nested too deep/);
  t.equal(encodeCommand(['SET', 'k', 'é', 3]), '*4\r\n$3\r\nSET\r\n$1\r\nk\r\n$2\r\né\r\n$1\r\n3\r\n', 'lengths in bytes');
});
