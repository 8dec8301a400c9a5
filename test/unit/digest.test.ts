// Document digests and a search page's ETag (domain/digest.ts). Every expected value was
// computed outside this code base (Python's hashlib over the same bytes), not with digest.ts.
import t from 'tap';
import { DIGEST_BYTES, digestBytes, digested, pageEtag } from '../../src/hot/domain/digest.js';

// SHA-256("abc") = ba7816bf 8f01cfea 414140de 5dae2223 b00361a3 …
const ABC = Buffer.from('ba7816bf8f01cfea414140de5dae2223', 'hex');
// SHA-256('{"id":"a"}') = 8489a5de b454a360 345c7868 bca8672d …
const DOC = Buffer.from('8489a5deb454a360345c7868bca8672d', 'hex');

// First in the file on purpose: pageEtag() hashes in a scratch buffer of 4096 bytes that it
// grows when an input needs more, and the scratch lives as long as the process. One digest,
// "\n" and 1360 three-byte characters are 16 + 1 + 4080 = 4097 bytes: one byte past it.
t.test('an ETag whose input is one byte longer than the first scratch buffer', async (t) => {
  t.equal(pageEtag(ABC, '€'.repeat(1360)), '"1pe0SOGglnuLvZr8shvWEF"');
});

t.test('digested: the first 128 bits of SHA-256 as four signed big-endian 32-bit integers', async (t) => {
  t.equal(DIGEST_BYTES, 16);
  const buf = Buffer.from('abc');
  const d = digested(buf);
  t.equal(d.buf, buf, 'the document bytes are kept, not copied');
  t.same([d.d0, d.d1, d.d2, d.d3], [-1166534977, -1895706646, 1094795486, 1571693091]);
  const e = digested(Buffer.from('{"id":"a"}'));
  t.same([e.d0, e.d1, e.d2, e.d3], [-2071353890, -1269521568, 878475368, -1129814227]);
  const z = digested(Buffer.alloc(0));
  t.same([z.d0, z.d1, z.d2, z.d3], [-474954686, -1728308204, -1694763832, -1720731356], 'the empty document');
});

t.test('digestBytes: the digests in page order, 16 bytes each', async (t) => {
  const a = digested(Buffer.from('abc'));
  const b = digested(Buffer.from('{"id":"a"}'));
  t.same(Buffer.from(digestBytes([a])), ABC);
  t.same(Buffer.from(digestBytes([a, b])), Buffer.concat([ABC, DOC]));
  t.same(Buffer.from(digestBytes([b, a])), Buffer.concat([DOC, ABC]), 'order kept');
  t.same(Buffer.from(digestBytes([b, a, b])), Buffer.concat([DOC, ABC, DOC]));
  t.equal(digestBytes([]).length, 0, 'an empty page');
});

t.test('pageEtag: SHA-256 over the digests, "\\n" and the Link header, 22 base64url characters, quoted', async (t) => {
  t.equal(pageEtag(new Uint8Array(0), ''), '"AbpHGcgLb-kRsJGnwFEktk"', 'an empty page without Link');
  t.equal(pageEtag(ABC, ''), '"CYeY2Eov_5fCkSRTSF-kSf"');
  t.equal(pageEtag(Buffer.concat([ABC, DOC]), ''), '"jZRmHrvcDqBCP6LEOrDJIj"');
  t.equal(pageEtag(Buffer.concat([DOC, ABC]), ''), '"hzqt69MgPrERhlvw2mEHWS"', 'another order, another tag');
  t.equal(pageEtag(ABC, '</services?page=1>; rel="next"'), '"Y5FMBdYk8jnEQ5RsXbs_v6"', 'the same documents with a Link: another tag');
  t.equal(pageEtag(ABC, '</é€\u{1F600}>'), '"dnnDBxAV5ApY5GkudN7siT"', 'the Link is hashed as UTF-8');
});

t.test('pageEtag: a page larger than the scratch buffer, then a small one again', async (t) => {
  const big = Buffer.concat(Array.from({ length: 300 }, () => ABC));
  t.equal(pageEtag(big, '</x>; rel="next"'), '"g_tRcbdP3p6sZ4Rws8T5cM"', '300 digests: 4800 bytes');
  t.equal(pageEtag(ABC, ''), '"CYeY2Eov_5fCkSRTSF-kSf"', 'nothing of the larger input is left in the hash');
  t.equal(pageEtag(ABC, '</services?page=1>; rel="next"'), '"Y5FMBdYk8jnEQ5RsXbs_v6"');
});
