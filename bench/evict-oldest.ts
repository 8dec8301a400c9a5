// What evicting the oldest entry of a bounded Map costs, by its size: a fresh
// `map.keys().next()` per eviction (the bounded maps before domain/oldest.ts) against one
// iterator kept across evictions (domain/oldest.ts). Each step evicts the oldest key and
// inserts a new one, as a full FIFO does under a stream of new keys (a fleet's heartbeat
// tokens beyond the token memory, a flood of forged sandbox keys, distinct searches).
//
//   node dist/bench/evict-oldest.js [--steps N] [--sizes 1000,10000,40000,100000]
//
// Prints ns a step (eviction + insertion) for each way and size, best of 3 runs.
import { numArg, strArg } from './args.js';
import { Oldest } from '../src/hot/domain/oldest.js';

const STEPS = numArg('steps', 200_000);
const SIZES = strArg('sizes', '1000,10000,40000,100000').split(',').map(Number);

function filled(n: number): Map<string, number> {
  const m = new Map<string, number>();
  for (let i = 0; i < n; i++) m.set('k' + i, i);
  return m;
}

/** ns a step, and a check that the last step evicted the oldest key */
function run(n: number, kept: boolean): number {
  const m = filled(n);
  const o = new Oldest(m);
  let next = n;
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < STEPS; i++) {
    const k = kept ? o.next()! : m.keys().next().value!;
    m.delete(k);
    m.set('k' + next++, i);
  }
  const ns = Number(process.hrtime.bigint() - t0) / STEPS;
  if (m.keys().next().value !== 'k' + (next - n)) throw new Error('not the oldest first');
  return ns;
}

console.log(`evict the oldest and insert, ${STEPS} steps a run, best of 3 (ns a step)`);
console.log('entries | fresh keys().next() | kept iterator (domain/oldest.ts)');
for (const n of SIZES) {
  const best = (kept: boolean) => Math.min(run(n, kept), run(n, kept), run(n, kept));
  console.log(`${n} | ${best(false).toFixed(0)} | ${best(true).toFixed(0)}`);
}
