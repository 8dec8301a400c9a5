// The per-entry overheads the in-process caches count (near-state.ts SET_OVERHEAD / EMPTY_OVERHEAD,
// near-docs.ts CHUNK_OVERHEAD / PER_DOC, result-cache.ts ENTRY_OVERHEAD), measured: N entries
// made through the real classes, memory before and after (heap + external + array buffers, and
// RSS, which also sees the native backing stores of SharedArrayBuffers), divided by N, beside
// what the cache counted for them. No Redis, no server.
//   node --expose-gc dist/bench/overheads.js [--n 100000] [--only 1..6]
import { NearCache } from '../src/hot/search/near/near-cache.js';
import { newSeqArray } from '../src/hot/search/near/state.js';
import { ownBuffer, ResultCache, type CachedResult } from '../src/hot/search/result-cache.js';
import { canonicalize, CursorMemo, SEARCH_SPEC, toFilters } from '../src/hot/search/canonical.js';
import { NearDocs, type Incoming } from '../src/hot/search/near/docs.js';
import { digested } from '../src/hot/domain/digest.js';

const gc = (globalThis as { gc?: () => void }).gc;
if (!gc) throw new Error('run with node --expose-gc');

function arg(name: string, def: number): number {
  const i = process.argv.indexOf(name);
  return i > 0 ? Number(process.argv[i + 1]) : def;
}

interface Mem {
  heap: number;
  external: number;
  rss: number;
}

function mem(): Mem {
  gc!();
  gc!();
  const m = process.memoryUsage();
  return { heap: m.heapUsed, external: m.external, rss: m.rss };
}

interface Row {
  what: string;
  n: number;
  /** bytes per entry: heap + external, and RSS */
  measured: number;
  rss: number;
  /** bytes per entry the cache counted */
  counted: number;
  /** RSS growth in all, MB */
  rssMb: number;
}

const rows: Row[] = [];
function row(what: string, n: number, a: Mem, b: Mem, counted: number): void {
  rows.push({ what, n, measured: (b.heap - a.heap + b.external - a.external) / n, rss: (b.rss - a.rss) / n, counted: counted / n, rssMb: (b.rss - a.rss) / 2 ** 20 });
}

const B = 'reg:{production}:g1:';
/** --only k: scenario k alone (a fresh process per scenario gives the cleanest RSS) */
const ONLY = arg('--only', 0);
const on = (k: number) => !ONLY || ONLY === k;
const N = arg('--n', 100_000);
const keep: unknown[] = []; // holds what was made until it is measured

// 1. sets of one member each (a set entry at its smallest: its overhead dominates)
if (on(1)) {
  const near = new NearCache(2 ** 40);
  near.resume();
  const a = mem();
  for (let i = 0; i < N; i++) {
    await near.set(B, `c:cap.${i}`, async () => {
      const m = newSeqArray(1);
      m[0] = i;
      return { ver: 1, members: m };
    });
  }
  const b = mem();
  row('near set, 1 member', N, a, b, near.bytes);
  keep.push(near);
}

// 2. sets of 1,000 members (the buffer dominates: counted at its byteLength)
if (on(2)) {
  const near = new NearCache(2 ** 40);
  const n = Math.max(1, Math.floor(N / 10));
  const a = mem();
  for (let i = 0; i < n; i++) {
    await near.set(B, `c:big.${i}`, async () => {
      const m = newSeqArray(1000);
      for (let k = 0; k < 1000; k++) m[k] = k * 3;
      return { ver: 1, members: m };
    });
  }
  const b = mem();
  row('near set, 1,000 members', n, a, b, near.bytes);
  keep.push(near);
}

// 3. distinct filters that match nothing: the pool of empty sets holds at most EMPTY_MAX
if (on(3)) {
  const near = new NearCache(2 ** 40);
  const a = mem();
  for (let i = 0; i < N; i++) await near.set(B, `c:u${i}`, async () => ({ ver: 1, members: newSeqArray(0) }));
  const b = mem();
  row(`near empty sets (${near.emptyCount} held)`, near.emptyCount, a, b, near.bytes);
  keep.push(near);
}

// 4. documents, 330 bytes each, in chunks of 256 consecutive seqs
if (on(4)) {
  const docs = new NearDocs();
  const doc = Buffer.from(JSON.stringify({ id: 'x'.repeat(36), name: 'n'.repeat(200), capabilities: ['a.b', 'c.d'], endpoint: 'https://e.example/' + 'p'.repeat(20) }));
  const a = mem();
  for (let s = 0; s < N; s += 100) {
    const batch: Incoming[] = [];
    for (let k = s; k < s + 100; k++) batch.push({ seq: k, doc: digested(Buffer.from(doc)) });
    docs.insert(0, 0, batch, 2 ** 40);
  }
  const b = mem();
  row(`near documents (${doc.length} B each)`, docs.count, a, b, docs.bytes);
  keep.push(docs);
}

// 5. result cache entries: empty pages (an unknown filter's answer) under distinct keys
if (on(5)) {
  const cache = new ResultCache(10_000_000, 3_600_000);
  const a = mem();
  for (let i = 0; i < N; i++) {
    const r: CachedResult = { body: ownBuffer(Buffer.from('[]')), headers: [], etag: `"${i.toString(16).padStart(32, '0')}"` };
    cache.set(`production\0s\0/services?capability=u${i}`, 'production', cache.version('production'), r);
  }
  const b = mem();
  row('result cache, empty page', N, a, b, cache.bytes);
  keep.push(cache);
}

// 6. cursor memo entries: distinct paged queries (4 filters each)
if (on(6)) {
  const memo = new CursorMemo(10_000_000, 2 ** 40);
  let chars = 0;
  const a = mem();
  for (let i = 0; i < N; i++) {
    const q = `after=5&capability=cap.${i}&deviceClass=sensor&limit=10&protocol=mqtt`;
    const c = canonicalize('/services', q, SEARCH_SPEC);
    if (c.kind !== 'ok') throw new Error(`not canonical: ${q} (${c.kind})`);
    const f = toFilters(c.params, SEARCH_SPEC);
    if (!f.ok) throw new Error(f.message);
    memo.learn({ params: c.params, filters: f.filters, canonical: c.canonical });
    chars += q.length - 8;
  }
  const b = mem();
  row(`cursor memo (${(chars / N).toFixed(0)}-char keys)`, N, a, b, memo.bytes);
  keep.push(memo);
}

console.log(`node ${process.version}, N = ${N}`);
console.log('| what | entries | measured B/entry (heap+external) | RSS B/entry | counted B/entry | counted / measured | RSS growth MB |');
console.log('|---|---:|---:|---:|---:|---:|---:|');
for (const r of rows) console.log(`| ${r.what} | ${r.n} | ${r.measured.toFixed(0)} | ${r.rss.toFixed(0)} | ${r.counted.toFixed(0)} | ${(r.counted / Math.max(r.measured, r.rss)).toFixed(2)} | ${r.rssMb.toFixed(1)} |`);
keep.length = 0;
