// The index's compact form of a document (docs/decisions/document-codec.md): every phrase of
// the service object's fixed shape (serializeService(): its keys in their order, the common
// tail of a service without lease or IoT profile) is stored in Redis as one control byte.
// JSON text never holds a raw control byte (JSON.stringify escapes U+0000-U+001F), so the
// code is unambiguous, and decoding is one substitution per code byte, whatever the context
// it stands in. A document without codes (written before the codec, or by hand) decodes to
// itself. PostgreSQL keeps the plain text (services.idx_doc); the bytes a client receives are
// always the plain ones: Lua decodes what its scripts serve or parse (docCodecLua()), the
// near cache decodes what it fetches (decodeDocBuffer()).

/**
 * The phrases, by code. Tab, newline and carriage return (9, 10, 13) are never codes: the
 * scripts' text formats use them as separators. Encoding takes the longest phrase first.
 */
const TABLE: readonly (readonly [code: number, phrase: string])[] = [
  [1, '{"id":"'],
  [2, '","endpoint":"'],
  [3, '","capabilities":["'],
  [4, '"],"properties":{"'],
  [5, ',"deprecated":false,"locked":false,"sunset_date":null,"iotReady":false,"iot":null,"health":{"status":"unknown","ttl":null}}'],
  [6, ',"deprecated":false,"locked":false,"sunset_date":null,"iotReady":true,"iot":{"deviceClasses":["'],
  [7, ',"deprecated":'],
  [8, ',"locked":'],
  [11, ',"sunset_date":'],
  [12, ',"iotReady":false,"iot":null'],
  [14, ',"iotReady":true,"iot":{"deviceClasses":["'],
  [15, '"],"protocols":["'],
  [16, '"]},"health":{"status":"unknown","ttl":null}}'],
  [17, ',"health":{"status":"unknown","ttl":null}}'],
  [18, ',"health":{"status":"passing","ttl":'],
  [19, ',"health":{"status":"critical","ttl":'],
  [20, ',"health":{"status":"'],
  [21, '","'],
  [22, '":"'],
  [23, '"}'],
  [24, '"]'],
  [25, ',"properties":{}'],
  [26, 'false'],
  [27, 'true'],
  [28, 'null'],
  [29, 'https://'],
  [30, 'http://'],
  [31, ',"ttl":'],
];

const BY_LENGTH = [...TABLE].sort((a, b) => b[1].length - a[1].length);
const escapeRe = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
const ENCODE_RE = new RegExp(BY_LENGTH.map(([, p]) => escapeRe(p)).join('|'), 'g');
const CODE_OF = new Map(TABLE.map(([c, p]) => [p, String.fromCharCode(c)]));
const PHRASE: (Buffer | undefined)[] = [];
for (const [c, p] of TABLE) PHRASE[c] = Buffer.from(p);
/** bytes a code byte adds when decoded (its phrase's length - 1), 0 for any other byte */
const GROWTH = new Int32Array(256);
for (const [c, p] of TABLE) GROWTH[c] = Buffer.byteLength(p) - 1;

/** A document's stored form (the plain JSON text in, its phrases as codes out). */
export function encodeDoc(doc: string): string {
  return doc.replace(ENCODE_RE, (p) => CODE_OF.get(p)!);
}

/**
 * A stored document's plain bytes: itself when it holds no code (no copy). Byte by byte:
 * a document's dozen short phrases copied by Buffer.copy() cost twice as much in calls.
 */
export function decodeDocBuffer(b: Buffer): Buffer {
  let grow = 0;
  let codes = false;
  for (let i = 0; i < b.length; i++) {
    if (b[i]! < 32) {
      codes = true;
      grow += GROWTH[b[i]!]!;
    }
  }
  if (!codes) return b;
  const out = Buffer.allocUnsafe(b.length + grow);
  let at = 0;
  for (let i = 0; i < b.length; i++) {
    const c = b[i]!;
    const p = c < 32 ? PHRASE[c] : undefined;
    if (!p) out[at++] = c; // a control byte that is no code is kept (decodeDoc's rule, and Lua's)
    else for (let j = 0; j < p.length; j++) out[at++] = p[j]!;
  }
  return out;
}

/** decodeDocBuffer() of a string. */
export function decodeDoc(doc: string): string {
  // eslint-disable-next-line no-control-regex -- the codes are control bytes
  return doc.replace(/[\x01-\x1f]/g, (c) => PHRASE[c.charCodeAt(0)]?.toString() ?? c);
}

/** A Lua string literal of `s`: every byte outside [A-Za-z] as a three-digit decimal escape. */
const luaString = (s: string) => '"' + [...Buffer.from(s)].map((b) => (/[A-Za-z]/.test(String.fromCharCode(b)) ? String.fromCharCode(b) : '\\' + String(b).padStart(3, '0'))).join('') + '"';
const luaPattern = (s: string) => s.replace(/[\^$()%.[\]*+\-?]/g, '%$&');

/**
 * The same codec in Lua, for the scripts (redis/client.ts GENERATED 'doc-codec.lua'):
 * docDecode(doc) (nil stays nil) and docEncode(doc).
 */
export function docCodecLua(): string {
  const dec = TABLE.map(([c, p]) => `[${luaString(String.fromCharCode(c))}] = ${luaString(p)}`).join(', ');
  const enc = BY_LENGTH.map(([c, p]) => `{ ${luaString(luaPattern(p))}, ${luaString(String.fromCharCode(c))} }`).join(',\n  ');
  return [
    '-- generated from src/hot/domain/doc-codec.ts (docCodecLua): the documents\' stored form',
    `local DOC_PHRASES = { ${dec} }`,
    `local DOC_ENCODE = {\n  ${enc}\n}`,
    'local function docDecode(doc)',
    '  if not doc then return doc end',
    '  return (string.gsub(doc, "[\\1-\\31]", DOC_PHRASES))',
    'end',
    'local function docEncode(doc)',
    '  for i = 1, #DOC_ENCODE do doc = string.gsub(doc, DOC_ENCODE[i][1], DOC_ENCODE[i][2]) end',
    '  return doc',
    'end',
  ].join('\n');
}
