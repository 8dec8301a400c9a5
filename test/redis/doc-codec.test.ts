// The documents' stored form (domain/doc-codec.ts) is written in TypeScript and read in both
// languages: what either encodes, both decode to the very bytes serializeService() made, for
// generated services (every field shape: leases, IoT, deprecation, hostile text) and for any
// text without control bytes; a document stored before the codec decodes to itself.
import t from 'tap';
import fc from 'fast-check';
import { decodeDoc, decodeDocBuffer, docCodecLua, encodeDoc } from '../../src/hot/domain/doc-codec.js';
import { serializeService, type ServiceRecord } from '../../src/hot/domain/service.js';
import { date, endpoint, iot, token, value } from '../helpers/arbitraries.js';
import { suiteRedis } from '../helpers/test-data.js';

const record: fc.Arbitrary<ServiceRecord> = fc.record({
  id: fc.stringMatching(/^[A-Za-z0-9]{16}$/),
  ns: fc.constant('production'),
  seq: fc.nat(),
  endpoint,
  capabilities: fc.uniqueArray(token, { maxLength: 5 }),
  properties: fc.dictionary(token, value, { maxKeys: 5 }),
  iot,
  deprecated: fc.boolean(),
  deprecatedAt: fc.constant(null),
  locked: fc.boolean(),
  sunsetDate: date,
  replacementSeqs: fc.constant([]),
  health: fc.option(fc.record({ status: fc.constantFrom('unknown' as const, 'passing' as const, 'critical' as const), ttl: fc.option(fc.integer({ min: 5, max: 86400 }), { nil: null }) }), { nil: undefined }),
});
/** every phrase the codec knows, and pieces of them: text where phrases overlap and touch */
const PHRASES = Array.from({ length: 31 }, (_, i) => decodeDoc(String.fromCharCode(i + 1))).filter((p) => p.length > 1);
const piece = fc.oneof(fc.constantFrom(...PHRASES), fc.constantFrom(...PHRASES).chain((p) => fc.nat(p.length).map((k) => p.slice(k))), fc.string({ maxLength: 12, unit: 'grapheme' }));
/** text as JSON.stringify leaves it: no raw control byte */
// eslint-disable-next-line no-control-regex -- what JSON text never holds raw
const plain = fc.array(piece, { maxLength: 20 }).map((a) => a.join('').replace(/[\u0000-\u001f]/g, ''));

const LUA = docCodecLua();
const luaDecode = `${LUA}\nreturn docDecode(ARGV[1])\n`;
const luaEncode = `${LUA}\nreturn docEncode(ARGV[1])\n`;

t.test('a document round-trips in TypeScript, and shrinks', async (t) => {
  let saved = 0;
  let n = 0;
  fc.assert(
    fc.property(record, (s) => {
      const doc = serializeService(s);
      const enc = encodeDoc(doc);
      if (/[\t\n\r]/.test(enc)) throw new Error('a separator byte in a stored document');
      if (decodeDoc(enc) !== doc || decodeDocBuffer(Buffer.from(enc)).toString() !== doc) throw new Error(`round trip: ${doc}`);
      saved += Buffer.byteLength(doc) - Buffer.byteLength(enc);
      n++;
    }),
    { numRuns: 500 },
  );
  t.ok(saved / n > 60, `${(saved / n).toFixed(0)} bytes saved a document on average`);
  fc.assert(fc.property(plain, (s) => decodeDoc(encodeDoc(s)) === s && decodeDocBuffer(Buffer.from(encodeDoc(s))).toString() === s));
  const raw = Buffer.from('{"id":"x"}');
  t.equal(decodeDocBuffer(raw), raw, 'a document without codes is returned as it is (no copy)');
});

t.test('Lua decodes what TypeScript encodes, and TypeScript what Lua encodes', async (t) => {
  const redis = suiteRedis(t);
  let checked = 0;
  await fc.assert(
    fc.asyncProperty(fc.oneof(record.map(serializeService), plain), async (doc) => {
      const fromTs = String(await redis.eval(luaDecode, 0, encodeDoc(doc)));
      if (fromTs !== doc) throw new Error(`Lua decoding TypeScript's: ${doc}\n got ${fromTs}`);
      const byLua = String(await redis.eval(luaEncode, 0, doc));
      if (decodeDoc(byLua) !== doc) throw new Error(`TypeScript decoding Lua's: ${doc}`);
      if (Buffer.byteLength(byLua) > Buffer.byteLength(doc)) throw new Error('Lua grew a document');
      checked++;
    }),
    { numRuns: 300 },
  );
  t.equal(checked, 300);
  t.equal(String(await redis.eval(luaDecode, 0, '{"id":"plain"}')), '{"id":"plain"}', 'a plain document decodes to itself in Lua');
});
