// The near cache's whole answers (search/near/results.ts): a page of a query of several sets
// taken from its answer kept whole equals the page joined from the chunks (body, digests,
// "more", last seq) for any cursor and limit, before and after writes; a write drops it;
// documents it lacks are named for a fetch; its bytes count in the budget and go first;
// NEAR_RESULT_ADMIT's count and its 0; the bounds on making one.
import t from 'tap';
import fc from 'fast-check';
import { NearCache } from '../../src/hot/search/near/near-cache.js';
import { NearResults, WHOLE_MAX_DOCS, WHOLE_MAX_HELD, WHOLE_MAX_SMALLEST, worthWhole } from '../../src/hot/search/near/results.js';
import { B, delta, loader } from '../helpers/near-fixtures.js';

const SUFFIXES = ['c:a', 'p:k:v'];
const body = (seq: number, rev: number) => Buffer.from(`{"s":${seq},"r":${rev},"pad":"${'x'.repeat((seq * 7 + rev) % 50)}"}`);

async function cacheOf(a: number[], b: number[], admit: number, maxBytes = 1 << 24) {
  const n = new NearCache(maxBytes, admit);
  await n.set(B, SUFFIXES[0]!, loader(1, [...a].sort((x, y) => x - y)).f);
  await n.set(B, SUFFIXES[1]!, loader(1, [...b].sort((x, y) => x - y)).f);
  return n;
}

const setsOf = (n: NearCache) => SUFFIXES.map((s) => n.setNow(B, s)!);

/** The page the chunks give for `after` and `limit` (as nearBodyNow joins it), copied. */
function joined(n: NearCache, after: number, limit: number) {
  const [a, b] = setsOf(n).map((x) => Array.from(x));
  const hits = a!.filter((s) => b!.includes(s) && s > after);
  const seqs = hits.slice(0, limit);
  const page = n.joinNow(B, Float64Array.from(seqs));
  if (!page) throw new Error(`the chunks lack a document of ${seqs.join(',')}`);
  return { body: Buffer.from(page.body), digests: Buffer.from(page.digests), more: hits.length > limit, last: seqs.length ? String(seqs.at(-1)) : '' };
}

t.test('a page of the whole answer equals the page joined from the chunks, before and after writes', async (t) => {
  // members of both sets, of the first only and of the second only (label 0, 1, 2)
  const membersArb = fc.uniqueArray(fc.tuple(fc.integer({ min: 0, max: 300 }), fc.integer({ min: 0, max: 2 })), { selector: ([v]) => v, maxLength: 150, size: 'medium' });
  let pages = 0;
  await fc.assert(
    fc.asyncProperty(membersArb, fc.array(fc.tuple(fc.integer({ min: -1, max: 301 }), fc.integer({ min: 1, max: 60 }), fc.option(fc.nat(), { nil: undefined })), { minLength: 1, maxLength: 12 }), async (members, asks) => {
        const a = members.filter(([, l]) => l !== 2).map(([v]) => v);
        const b = members.filter(([, l]) => l !== 1).map(([v]) => v);
        const n = await cacheOf(a, b, 1);
        const rev = new Map<number, number>();
        const fetch = async (seqs: number[]) => seqs.map((s) => body(s, rev.get(s) ?? 0));
        await n.documents(B, Float64Array.from([...new Set([...a, ...b])].sort((x, y) => x - y)), fetch);
        let ver = 1;
        for (const [after, limit, write] of asks) {
          if (write !== undefined && a.length) {
            // a write to one member: its document changes (its sets stay): the whole answer
            // is stale, and its new document must be fetched before one is made again
            const seq = a[write % a.length]!;
            rev.set(seq, (rev.get(seq) ?? 0) + 1);
            n.onDelta(delta(++ver, seq, [SUFFIXES[0]!], seq, [SUFFIXES[0]!]));
          }
          // (documents it names are fetched; its next attempt comes RETRY pages later)
          let got = n.resultPage(B, SUFFIXES, setsOf(n), after, limit);
          for (let i = 0; i < 70 && (!got || 'missing' in got); i++) {
            if (got) await n.documents(B, Float64Array.from(got.missing), fetch);
            got = n.resultPage(B, SUFFIXES, setsOf(n), after, limit);
          }
          const want = joined(n, after, limit);
          // an empty answer is not kept (joining nothing costs nothing): the page is joined
          if (!a.some((x) => b.includes(x)) && got === null) continue;
          if (!got || 'missing' in got) return false;
          if (!Buffer.from(got.body).equals(want.body) || !Buffer.from(got.digests).equals(want.digests)) return false;
          if (got.more !== want.more || got.last !== want.last) return false;
          pages++;
        }
        return true;
      }),
    { numRuns: 150 },
  );
  t.ok(pages > 500, `${pages} pages compared`);
});

t.test('admission: the ADMIT-th cold page makes the answer whole; 0 never does; documents it lacks are named', async (t) => {
  const fetch = async (seqs: number[]) => seqs.map((s) => body(s, 0));
  const n = await cacheOf([1, 2, 3, 4], [2, 3, 4, 5], 3);
  await n.documents(B, Float64Array.from([2, 3]), fetch);
  t.equal(n.resultPage(B, SUFFIXES, setsOf(n), -1, 10), null, 'first page: joined from the chunks');
  t.equal(n.resultPage(B, SUFFIXES, setsOf(n), -1, 10), null, 'second');
  t.same(n.resultPage(B, SUFFIXES, setsOf(n), -1, 10), { key: B + '\0' + SUFFIXES.join('\0'), missing: [4] }, 'third: the answer needs 4, not held');
  t.ok(Array.from({ length: 63 }, () => n.resultPage(B, SUFFIXES, setsOf(n), -1, 10)).every((p) => p === null), 'the next 63 pages: joined');
  t.same([n.stats.wholeMisses, n.stats.wholePages], [66, 0], 'each page joined from the chunks counted a miss');
  await n.documents(B, Float64Array.from([4]), fetch);
  const page = n.resultPage(B, SUFFIXES, setsOf(n), 2, 1);
  t.ok(page && 'body' in page, 'made at the next attempt, 64 pages later');
  t.same([n.stats.wholeMisses, n.stats.wholePages], [66, 1], 'and that page a hit');
  if (page && 'body' in page) t.same({ body: String(page.body), more: page.more, last: page.last }, { body: String(body(3, 0)).replace(/^/, '[') + ']', more: true, last: '3' });

  // prefetch(): the documents an answer lacks fetched in the background, then it is tried at once
  const p = await cacheOf([1, 2, 3], [1, 2, 3], 1);
  await p.documents(B, Float64Array.from([1, 3]), fetch);
  const m = p.resultPage(B, SUFFIXES, setsOf(p), -1, 10);
  t.ok(m && 'missing' in m && m.missing.join() === '2', 'lacks 2');
  let fetched: number[] = [];
  if (m && 'missing' in m) p.prefetch(B, m, async (seqs) => ((fetched = seqs), fetch(seqs)));
  if (m && 'missing' in m) p.prefetch(B, m, async () => t.fail('a second fetch while one runs') as never);
  await new Promise((r) => setImmediate(r));
  t.same(fetched, [2], 'fetched in the background');
  const now = p.resultPage(B, SUFFIXES, setsOf(p), -1, 10);
  t.ok(now && 'body' in now && String(now.body) === `[${body(1, 0)},${body(2, 0)},${body(3, 0)}]`, 'made at the next page, not RETRY pages later');

  const off = await cacheOf([1, 2], [1, 2], 0);
  await off.documents(B, Float64Array.from([1, 2]), fetch);
  t.ok(Array.from({ length: 100 }, () => off.resultPage(B, SUFFIXES, setsOf(off), -1, 10)).every((p) => p === null), 'NEAR_RESULT_ADMIT=0: 100 pages, none whole');
});

t.test('a whole answer counts in the budget, goes first, and one over an eighth of it is not kept', async (t) => {
  const fetch = async (seqs: number[]) => seqs.map((s) => body(s, 0));
  const all = Array.from({ length: 200 }, (_, i) => i);
  // the answer's 200 documents and 1,800 more held beside them
  const held = Float64Array.from({ length: 2000 }, (_, i) => i);
  const n = await cacheOf(all, all, 1);
  await n.documents(B, held, fetch);
  const before = n.bytes;
  const docs = n.docCount;
  t.ok(n.resultPage(B, SUFFIXES, setsOf(n), -1, 10), 'kept');
  const grown = n.bytes - before;
  const docBytes = all.reduce((s, q) => s + body(q, 0).length + 1, 0);
  t.ok(grown >= docBytes, `counted: ${grown} bytes for ${docBytes} of documents`);
  // a budget that holds the sets and documents, not the answer beside them: the answer goes
  // (within an eighth of the budget, so it is made), no document for it
  const tight = await cacheOf(all, all, 1, before + Math.floor(grown / 2));
  await tight.documents(B, held, fetch);
  t.ok(grown < (before + grown / 2) / 8, 'the answer is within an eighth of that budget');
  t.equal(tight.resultPage(B, SUFFIXES, setsOf(tight), -1, 10), null, 'over the budget: evicted at once, the page joined instead');
  t.equal(tight.docCount, docs, 'and no document went for it');
  // an answer over an eighth of the budget is not made
  const big = async (seqs: number[]) => seqs.map((s) => Buffer.from(`{"s":${s},"pad":"${'x'.repeat(500)}"}`));
  const probe = await cacheOf(all, all, 1);
  await probe.documents(B, Float64Array.from(all), big);
  const held2 = probe.bytes;
  t.ok(probe.resultPage(B, SUFFIXES, setsOf(probe), -1, 10), 'kept under a large budget');
  const size = probe.bytes - held2;
  // room for it twice over, but it is more than an eighth of that budget
  const small = await cacheOf(all, all, 1, held2 + 2 * size);
  await small.documents(B, Float64Array.from(all), big);
  t.ok(size > (held2 + 2 * size) / 8, 'the answer is over an eighth of that budget');
  t.equal(small.docCount, all.length, 'every document held');
  t.equal(small.resultPage(B, SUFFIXES, setsOf(small), -1, 10), null, 'over an eighth: not made');
});

t.test('bounds of making an answer whole: its documents, its smallest set, the documents a second', async (t) => {
  const fetch = async (seqs: number[]) => seqs.map((s) => body(s, 0));
  // an answer of more than WHOLE_MAX_DOCS documents is never made (not even asked for)
  const many = Array.from({ length: WHOLE_MAX_DOCS + 1 }, (_, i) => i);
  const big = await cacheOf(many, many, 1);
  t.equal(big.resultPage(B, SUFFIXES, setsOf(big), -1, 10), null, `${many.length} matches: none, no documents asked for`);
  // sets over WHOLE_MAX_SMALLEST, however few their common members: not even intersected
  const wide = Array.from({ length: WHOLE_MAX_SMALLEST + 1 }, (_, i) => i);
  const w = await cacheOf(wide, [5, ...wide.map((x) => x + 300_000)], 1);
  t.equal(w.resultPage(B, SUFFIXES, setsOf(w), -1, 10), null, 'smallest set too large: none (one match, 5, not asked for)');
  // the documents a second: spent, then refilled with time
  const r = new NearResults(1);
  t.ok(r.spend(WHOLE_MAX_DOCS * 4), 'a second of documents at once');
  t.notOk(r.spend(WHOLE_MAX_DOCS), 'then no more');
  await new Promise((done) => setTimeout(done, 20));
  t.ok(r.spend(2000), 'until time refills it (~5,000 in 20 ms)');
  const n = await cacheOf([1, 2], [1, 2], 1);
  await n.documents(B, Float64Array.from([1, 2]), fetch);
  t.ok(n.resultPage(B, SUFFIXES, setsOf(n), -1, 10), 'a small answer is made');
});

t.test('one set: kept whole when sparse (worthWhole), and its pages equal the joined ones', async (t) => {
  const f = (a: number[]) => Float64Array.from(a);
  t.ok(worthWhole([f([1, 2]), f([2])]), 'several sets');
  t.ok(worthWhole([f([0, 5, 10, 15, 20])]), 'one set, a member in 5 of its range');
  t.notOk(worthWhole([f([0, 1, 2, 3, 5])]), 'one dense set: its pages are contiguous in the chunks');
  t.notOk(worthWhole([f([7])]), 'one member');
  t.notOk(worthWhole([]), 'no set');
  const members = Array.from({ length: 60 }, (_, i) => i * 7);
  const n = new NearCache(1 << 24, 1);
  await n.set(B, 'c:a', loader(1, members).f);
  await n.documents(B, Float64Array.from(members), async (seqs) => seqs.map((s) => body(s, 0)));
  const set = [n.setNow(B, 'c:a')!];
  for (const [after, limit] of [[-1, 10], [0, 10], [100, 7], [405, 10], [413, 5], [500, 3]] as const) {
    const got = n.resultPage(B, ['c:a'], set, after, limit);
    const hits = members.filter((m) => m > after);
    const seqs = hits.slice(0, limit);
    const want = n.joinNow(B, Float64Array.from(seqs))!;
    t.ok(got && 'body' in got && Buffer.from(got.body).equals(Buffer.from(want.body)) && Buffer.from(got.digests).equals(Buffer.from(want.digests)) && got.more === hits.length > limit && got.last === (seqs.length ? String(seqs.at(-1)) : ''), `after ${after}, limit ${limit}`);
  }
});

t.test('an empty answer is not kept; at most WHOLE_MAX_HELD are', async (t) => {
  const fetch = async (seqs: number[]) => seqs.map((s) => body(s, 0));
  const none = await cacheOf([1, 2], [3, 4], 1);
  t.ok(Array.from({ length: 80 }, () => none.resultPage(B, SUFFIXES, setsOf(none), -1, 10)).every((p) => p === null), '80 pages, none whole');
  t.equal(none.wholeCount, 0, 'no common member: nothing kept');
  const n = await cacheOf([1, 2], [1, 2], 1);
  await n.documents(B, Float64Array.from([1, 2]), fetch);
  // the same sets under WHOLE_MAX_HELD + 10 names: as many queries
  let made = 0;
  for (let q = 0; q < WHOLE_MAX_HELD + 10; q++) if (n.resultPage(B, [`c:q${q}`, 'p:k:v'], setsOf(n), -1, 10)) made++;
  t.equal(made, WHOLE_MAX_HELD + 10, 'each query answered from its whole answer');
  t.equal(n.wholeCount, WHOLE_MAX_HELD, 'the oldest went');
});
