// The near cache's document chunks (near-docs.ts) against a model: a Map seq -> bytes per
// namespace. Random inserts (runs of seqs, some replacing held ones), drops (a write's delta),
// resets (a lost delta), evictions and clears; after each step, every page asked for is either
// refused (some document not held) or exactly "[" + the model's documents joined by "," + "]"
// with the model's digests, and a refused page really has a document the model lacks. Pages
// cross chunk borders (256 seqs), skip dropped documents between held ones, and hold
// documents of every length, the empty one included.
import t from 'tap';
import fc from 'fast-check';
import { NearDocs } from '../../src/hot/search/near/docs.js';
import { find, indexOf, LAYOUT, lowerBound, type Chunk } from '../../src/hot/search/near/chunk.js';
import { digestBytes, digested } from '../../src/hot/domain/digest.js';

const seqArb = fc.integer({ min: 0, max: 600 });
const docArb = fc.uint8Array({ minLength: 0, maxLength: 40 }).map((a) => Buffer.from(a));

type Op =
  | { kind: 'insert'; base: number; items: { seq: number; doc: Buffer }[] }
  | { kind: 'drop'; base: number; seq: number }
  | { kind: 'reset'; base: number }
  | { kind: 'evict' }
  | { kind: 'clear' }
  | { kind: 'join'; base: number; seqs: number[] }
  | { kind: 'joinHeld'; base: number; from: number; n: number; skip: boolean[]; ghosts: boolean }
  | { kind: 'joinRun'; base: number; k: number; n: number; back: boolean; past: number }
  | { kind: 'touch'; base: number; k: number; delta: number; doc: Buffer }
  | { kind: 'dropHeld'; base: number; k: number };

const baseArb = fc.integer({ min: 0, max: 1 });
const opArb: fc.Arbitrary<Op> = fc.oneof(
  { weight: 4, arbitrary: fc.record({ kind: fc.constant('insert' as const), base: baseArb, items: fc.array(fc.record({ seq: seqArb, doc: docArb }), { maxLength: 30 }) }) },
  {
    // a page's misses: a run of consecutive seqs
    weight: 4,
    arbitrary: fc
      .tuple(baseArb, seqArb, fc.array(docArb, { maxLength: 120, size: 'medium' }))
      .map(([base, from, ds]) => ({ kind: 'insert' as const, base, items: ds.map((doc, i) => ({ seq: from + i, doc })) })),
  },
  {
    // a page of what the model holds from `from` on, some of it skipped (a sparse set)
    weight: 10,
    arbitrary: fc.record({ kind: fc.constant('joinHeld' as const), base: baseArb, from: seqArb, n: fc.integer({ min: 0, max: 120 }), skip: fc.array(fc.boolean(), { maxLength: 120, size: 'medium' }), ghosts: fc.boolean() }),
  },
  {
    // a page of a dense set: consecutive held seqs from a held one or from the first of its
    // run (whole sorted chunks are joined as one range); `past` 1: one more seq, held or not,
    // 2: and the held ones after it (a page over a hole, ending on a held document)
    weight: 10,
    arbitrary: fc.record({ kind: fc.constant('joinRun' as const), base: baseArb, k: fc.nat(), n: fc.integer({ min: 1, max: 300 }), back: fc.boolean(), past: fc.integer({ min: 0, max: 2 }) }),
  },
  // one document fetched again next to a held one, or in its place (appended to its chunk)
  { weight: 4, arbitrary: fc.record({ kind: fc.constant('touch' as const), base: baseArb, k: fc.nat(), delta: fc.integer({ min: -1, max: 1 }), doc: docArb }) },
  // a write to a document held: dropped from the middle of its chunk
  { weight: 4, arbitrary: fc.record({ kind: fc.constant('dropHeld' as const), base: baseArb, k: fc.nat() }) },
  { weight: 4, arbitrary: fc.record({ kind: fc.constant('drop' as const), base: baseArb, seq: seqArb }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('reset' as const), base: baseArb }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('evict' as const) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('clear' as const) }) },
  {
    weight: 10,
    arbitrary: fc.record({
      kind: fc.constant('join' as const),
      base: baseArb,
      // a page: ascending, distinct; dense runs and scattered ones
      seqs: fc.oneof(
        fc.tuple(seqArb, fc.integer({ min: 0, max: 120 })).map(([a, n]) => Array.from({ length: n }, (_, i) => a + i)),
        fc.uniqueArray(seqArb, { maxLength: 60 }).map((a) => a.sort((x, y) => x - y)),
      ),
    }),
  },
);

/** Consecutive seqs of `m` from its k-th key (`back`: from the first of their run) on, at most n; `past`: see joinRun. */
function runOf(m: Map<number, Buffer>, k: number, n: number, back: boolean, past: number): number[] {
  const all = [...m.keys()];
  if (!all.length) return [];
  let first = all[k % all.length]!;
  while (back && m.has(first - 1)) first--;
  const out = [first];
  while (out.length < n && m.has(out[out.length - 1]! + 1)) out.push(out[out.length - 1]! + 1);
  if (past) out.push(out[out.length - 1]! + 1);
  while (past === 2 && out.length < n + 1 + n && m.has(out[out.length - 1]! + 1)) out.push(out[out.length - 1]! + 1);
  return out;
}

t.test('document chunks equal a model under random inserts, drops, resets, evictions and pages', async (t) => {
  let joins = 0;
  let refused = 0;
  fc.assert(
    fc.property(fc.array(opArb, { minLength: 1, maxLength: 60, size: 'max' }), (ops) => {
      const docs = new NearDocs();
      const model = new Map<number, Map<number, Buffer>>();
      const resets = [0, 0];
      // what each namespace held before its last reset: pages of it must be refused now
      const ghosts = new Map<number, number[]>();
      const held = (b: number) => {
        let m = model.get(b);
        if (!m) model.set(b, (m = new Map()));
        return m;
      };
      for (const op of ops) {
        if (op.kind === 'insert') {
          // the caller's contract: ascending seqs, each once (a page's misses)
          const bySeq = new Map(op.items.map((x) => [x.seq, x.doc]));
          const items = [...bySeq].sort((a, b) => a[0] - b[0]).map(([seq, doc]) => ({ seq, doc: digested(doc) }));
          docs.insert(op.base, resets[op.base]!, items, Number.POSITIVE_INFINITY);
          for (const { seq, doc } of items) held(op.base).set(seq, doc.buf);
        } else if (op.kind === 'touch') {
          const all = [...held(op.base).keys()];
          if (!all.length) continue;
          const seq = all[op.k % all.length]! + op.delta;
          if (seq < 0) continue;
          docs.insert(op.base, resets[op.base]!, [{ seq, doc: digested(op.doc) }], Number.POSITIVE_INFINITY);
          held(op.base).set(seq, op.doc);
        } else if (op.kind === 'dropHeld') {
          const all = [...held(op.base).keys()];
          if (!all.length) continue;
          const seq = all[op.k % all.length]!;
          docs.drop(op.base, seq);
          held(op.base).delete(seq);
        } else if (op.kind === 'drop') {
          docs.drop(op.base, op.seq);
          held(op.base).delete(op.seq);
        } else if (op.kind === 'reset') {
          resets[op.base]!++;
          ghosts.set(op.base, [...held(op.base).keys()]);
          held(op.base).clear();
        } else if (op.kind === 'evict') {
          // eviction may take any chunk: forget, in the model, whatever is no longer held
          docs.evictOne();
          for (const [b, m] of model) for (const seq of [...m.keys()]) if (!docs.get(b, resets[b]!, seq)) m.delete(seq);
        } else if (op.kind === 'clear') {
          docs.clear();
          model.clear();
        } else {
          joins++;
          const seqs =
            op.kind === 'join'
              ? op.seqs
              : op.kind === 'joinRun'
                ? runOf(held(op.base), op.k, op.n, op.back, op.past)
                : (op.ghosts ? ghosts.get(op.base) ?? [] : [...held(op.base).keys()])
                  .filter((x) => x >= op.from)
                  .sort((a, b) => a - b)
                  .slice(0, op.n)
                  .filter((_, i) => !op.skip[i]);
          const page = docs.join(op.base, resets[op.base]!, Float64Array.from(seqs));
          const want = seqs.map((s) => held(op.base).get(s));
          if (!page) {
            refused++;
            if (want.every((d) => d !== undefined)) throw new Error(`refused a page the model holds: ${seqs.join(',')}`);
            continue;
          }
          if (want.some((d) => d === undefined)) throw new Error(`joined a page with a document the model lacks: ${seqs.join(',')}`);
          const bufs = want as Buffer[];
          const body = Buffer.concat([Buffer.from('['), ...bufs.flatMap((d, i) => (i ? [Buffer.from(','), d] : [d])), Buffer.from(']')]);
          if (!page.body.equals(body)) throw new Error(`body differs for ${seqs.join(',')}`);
          if (!page.digests.equals(Buffer.from(digestBytes(bufs.map(digested))))) throw new Error(`digests differ for ${seqs.join(',')}`);
        }
      }
      // accounting: once dead chunks are gone (get() drops one it meets), the count is exactly
      // the documents held, each once
      let n = 0;
      for (const b of [0, 1]) for (let seq = 0; seq < 800; seq++) if (docs.get(b, resets[b]!, seq)) n++;
      if (docs.count !== n) throw new Error(`count ${docs.count}, but ${n} documents are held`);
    }),
    { numRuns: 1500 },
  );
  t.ok(joins > 1000 && refused > 0 && refused < joins, `pages joined and refused (${joins}, ${refused} refused)`);
});

t.test('a document held is returned with its bytes and digest; one of a dead generation is not', async (t) => {
  const docs = new NearDocs();
  const d = digested(Buffer.from('{"a":1}'));
  docs.insert(7, 0, [{ seq: 300, doc: d }], 1 << 20);
  t.same(docs.get(7, 0, 300), d);
  t.equal(docs.get(7, 1, 300), null, 'a reset namespace holds nothing');
  t.equal(docs.count, 0, 'and its chunk went');
  t.equal(docs.bytes, 0);
});

t.test('a chunk larger than the whole budget is not kept', async (t) => {
  const docs = new NearDocs();
  docs.insert(1, 0, [{ seq: 1, doc: digested(Buffer.alloc(5000)) }], 4000);
  t.equal(docs.get(1, 0, 1), null);
  t.equal(docs.bytes, 0);
});

t.test('lowerBound, find and indexOf agree with a scan of the slots, full chunks and nearly full ones included', async (t) => {
  const { SLOTS, M } = LAYOUT;
  const slotsArb = fc.oneof(
    fc.uniqueArray(fc.integer({ min: 0, max: SLOTS - 1 }), { maxLength: SLOTS }),
    // all slots but a few: the bounded range is narrow, and must still hold the answer
    fc.uniqueArray(fc.integer({ min: 0, max: SLOTS - 1 }), { maxLength: 4 }).map((gone) => Array.from({ length: SLOTS }, (_, i) => i).filter((i) => !gone.includes(i))),
  );
  let checked = 0;
  fc.assert(
    fc.property(slotsArb, fc.array(fc.tuple(fc.integer({ min: 0, max: SLOTS - 1 }), fc.nat()), { minLength: 1, maxLength: 40 }), (raw, asks) => {
      const slots = [...raw].sort((a, b) => a - b);
      const meta = new Int32Array(Math.max(1, slots.length) * M);
      slots.forEach((s, i) => (meta[i * M + LAYOUT.SLOT] = s));
      const c = { n: slots.length, meta } as unknown as Chunk;
      for (const [slot, hint] of asks) {
        const want = slots.findIndex((s) => s >= slot);
        const lb = want < 0 ? slots.length : want;
        // a hint is any index at or before the answer (join() passes the last found one + 1)
        const from = lb === 0 ? 0 : hint % (lb + 1);
        if (lowerBound(c, slot, from) !== lb) return false;
        if (find(c, slot, from) !== (slots[lb] === slot ? lb : -1)) return false;
        if (indexOf(c, slot) !== (slots[lb] === slot ? lb : -1)) return false;
        checked++;
      }
      return true;
    }),
    { numRuns: 400 },
  );
  t.ok(checked > 1000, `${checked} look-ups checked`);
});
