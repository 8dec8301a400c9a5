import t from 'tap';
import { createHash } from 'node:crypto';
import { bitmapOf, gallop, intersectDense, intersectSorted } from '../../src/workers/intersect.js';
import { intersectFetched, intersectShared } from '../../src/workers/intersect-task.js';
import { sharedSeqArray } from '../../src/workers/buckets.js';
import { joinPage } from '../../src/hot/search/pipeline/join.js';
import { digestBytes, digested, pageEtag } from '../../src/hot/domain/digest.js';
import { prng } from '../../src/admin/seed.js';

const f = (xs: number[]) => Float64Array.from(xs);

t.test('gallop finds the first index not below x', async (t) => {
  const a = f([1, 3, 5, 7, 9, 11]);
  t.equal(gallop(a, 0, 0), 0);
  t.equal(gallop(a, 5, 0), 2);
  t.equal(gallop(a, 6, 0), 3);
  t.equal(gallop(a, 6, 3), 3);
  t.equal(gallop(a, 12, 0), 6);
});

t.test('intersection, bounds and limits', async (t) => {
  t.same(Array.from(intersectSorted([f([1, 2, 3, 4, 5]), f([2, 4, 6]), f([0, 2, 4])], -1, 10)), [2, 4]);
  t.same(Array.from(intersectSorted([f([1, 2, 3, 4, 5]), f([1, 2, 3, 4, 5])], 2, 2)), [3, 4], 'after is exclusive, max caps');
  t.same(Array.from(intersectSorted([f([]), f([1])], -1, 10)), []);
  t.same(Array.from(intersectSorted([f([7])], -1, 10)), [7], 'one array is itself');
});

t.test('matches a naive intersection on random sets', async (t) => {
  const r = prng(7);
  for (let round = 0; round < 1000; round++) {
    const sets = Array.from({ length: 1 + Math.floor(r() * 4) }, () => {
      const s = new Set<number>();
      const n = Math.floor(r() * 400);
      for (let i = 0; i < n; i++) s.add(1 + Math.floor(r() * 500));
      return [...s].sort((a, b) => a - b);
    });
    const after = Math.floor(r() * 100) - 1;
    const max = 1 + Math.floor(r() * 50);
    const naive = sets[0]!.filter((x) => x > after && sets.every((s) => s.includes(x))).slice(0, max);
    t.same(Array.from(intersectSorted(sets.map(f), after, max)), naive, `round ${round}`);
  }
});

t.test('the pool path: sets read from Redis are decoded in the worker, onto shared memory', async (t) => {
  // (bucket, offsets) pairs as near-load-2.lua answers them: bucket 0 holds 3 and 9, bucket 1 holds 4096 + 2
  const be = (...xs: number[]) => Buffer.from(xs.flatMap((x) => [x >> 8, x & 0xff]));
  const raw: [string, Buffer][][] = [[['0', be(3, 9)], ['1', be(2)], ['n', Buffer.from('3')]], [['1', be(2)], ['0', be(9)]]];
  const held = sharedSeqArray(4);
  held.set([1, 9, 4098, 5000]);
  const r = intersectFetched({ sets: [held], raw, after: -1, max: 10 });
  t.same(Array.from(r.hits), [9, 4098], 'held and decoded sets intersected together');
  t.same(r.decoded.map((a) => Array.from(a)), [[3, 9, 4098], [9, 4098]], 'the decoded sets handed back, in order, for the serving thread to keep');
  t.ok(r.decoded.every((a) => a.buffer instanceof SharedArrayBuffer), 'on shared memory: the next task reads them without a copy');
  t.same(Array.from(intersectFetched({ sets: [], raw, after: 9, max: 10 }).hits), [4098], 'from the cursor');
  t.same(Array.from(intersectShared({ sets: [held, r.decoded[0]!], after: -1, max: 1 })), [9], 'held sets alone, at most max');
});

t.test('the join stage: documents joined as they came, with their digests', async (t) => {
  const docs = ['{"a":"x,y"}', '{"b":"line\\nbreak"}'].map((d) => digested(Buffer.from(d)));
  const page = joinPage(docs, true, '9');
  t.equal(page.body.toString(), '[' + docs.map((d) => d.buf.toString()).join(',') + ']');
  JSON.parse(page.body.toString());
  t.same(Buffer.from(page.digests), Buffer.from(digestBytes(docs)), 'the digests in page order, 16 bytes each');
  t.equal(page.more, true);
  t.equal(page.last, '9');
  t.equal(joinPage([], false, '').body.toString(), '[]', 'an empty page');
});

t.test('a page ETag is made of its documents\' digests and its Link', async (t) => {
  const docs = ['{"id":"a"}', '{"id":"b"}', '{"id":"c"}'].map((d) => digested(Buffer.from(d)));
  const link = '</services?after=3>; rel="next"';
  const tag = pageEtag(digestBytes(docs), link);
  t.match(tag, /^"[A-Za-z0-9_-]{22}"$/, 'strong, 128 bits, base64url');
  t.equal(pageEtag(digestBytes([...docs]), link), tag, 'the same documents and Link: the same tag');
  t.not(pageEtag(digestBytes(docs), ''), tag, 'the Link counts');
  t.not(pageEtag(digestBytes([docs[0]!, digested(Buffer.from('{"id":"B"}')), docs[2]!]), link), tag, 'one changed document changes it');
  t.not(pageEtag(digestBytes([docs[1]!, docs[0]!, docs[2]!]), link), tag, 'so does the order');
  t.not(pageEtag(digestBytes(docs.slice(0, 2)), link), tag, 'and a missing document');
  const abc = 'ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad'; // SHA-256("abc")
  t.equal(Buffer.from(digestBytes([digested(Buffer.from('abc'))])).toString('hex'), abc.slice(0, 32), 'a digest is the first 16 bytes of SHA-256');
  t.equal(pageEtag(digestBytes([digested(Buffer.from('abc'))]), 'L'), '"' + createHash('sha256').update(Buffer.from(abc.slice(0, 32), 'hex')).update('\nL').digest('base64url').slice(0, 22) + '"', 'the tag: SHA-256 over the digests, "\\n", the Link');
});

t.test('over bitmaps: the same answers as galloping, dense or not, at any offset', async (t) => {
  const r = prng(11);
  let dense = 0;
  for (let round = 0; round < 1000; round++) {
    const origin = Math.floor(r() * 3) === 0 ? 2 ** 32 - 300 + Math.floor(r() * 600) : Math.floor(r() * 100); // seqs past 2^31 and 2^32 too
    const span = 200 + Math.floor(r() * 3000);
    const sets = Array.from({ length: 1 + Math.floor(r() * 4) }, () => {
      const density = r() < 0.2 ? 0.01 : 0.1 + r() * 0.9;
      const s: number[] = [];
      for (let x = origin; x < origin + span; x++) if (r() < density) s.push(x);
      return f(s);
    });
    if (sets.length > 1 && sets.every((s) => bitmapOf(s))) dense++;
    const after = origin - 2 + Math.floor(r() * span);
    const max = 1 + Math.floor(r() * 120);
    t.same(Array.from(intersectDense(sets, after, max).hits), Array.from(intersectSorted(sets, after, max)), `round ${round}`);
  }
  t.ok(dense > 300, `${dense} rounds over bitmaps`);
  t.equal(bitmapOf(f([1, 1000])), null, 'a sparse set has none');
  t.same(Array.from(intersectDense([f([]), f([1])], -1, 5).hits), []);
});
