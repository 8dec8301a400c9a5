// domain/oldest.ts: the iterator kept across evictions returns, at every call, the key a fresh
// walk would (the oldest one held), whatever happened to the map in between (insertions,
// deletions, re-insertions that move a key last, clears, the table's growth and shrinking),
// as long as each key returned leaves the map. The bounded maps built on it evict in the
// same order as before (key-maps, token memory, result cache, near cache tests).
import t from 'tap';
import fc from 'fast-check';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { Oldest } from '../../src/hot/domain/oldest.js';
import { ByteBoundedMap } from '../../src/hot/domain/byte-map.js';

type Op = ['set' | 'touch' | 'delete' | 'evict' | 'evictMany' | 'clear', number];

const op: fc.Arbitrary<Op> = fc.tuple(fc.constantFrom('set', 'set', 'set', 'touch', 'delete', 'evict', 'evictMany', 'clear'), fc.integer({ min: 0, max: 60 }));

t.test('next() is always the oldest key held, as a fresh walk finds it', async () => {
  fc.assert(
    fc.property(fc.array(op, { maxLength: 400 }), fc.boolean(), (ops, asSet) => {
      const m = asSet ? new Set<number>() : new Map<number, number>();
      const o = new Oldest<number>(m);
      const put = (k: number) => (m instanceof Set ? m.add(k) : m.set(k, k));
      const evict = (): boolean => {
        const fresh = m.keys().next();
        const k = o.next();
        if (fresh.done === true) return k === undefined;
        if (k !== fresh.value) return false;
        m.delete(k);
        return true;
      };
      for (const [what, k] of ops) {
        if (what === 'set') put(k);
        else if (what === 'touch' && m.has(k)) {
          // a least-recently-used touch: out and in again, last
          m.delete(k);
          put(k);
        } else if (what === 'delete') m.delete(k);
        else if (what === 'clear') m.clear();
        else if (what === 'evict' && !evict()) return false;
        else if (what === 'evictMany') for (let i = 0; i < k; i++) if (!evict()) return false;
      }
      // and the rest, in order, to the end
      while (m.size > 0) if (!evict()) return false;
      return o.next() === undefined;
    }),
    { numRuns: 500 },
  );
});

t.test('a walk that reached the end starts again for keys added after it', async (t) => {
  const m = new Map<string, number>([['a', 1]]);
  const o = new Oldest(m);
  t.equal(o.next(), 'a');
  m.delete('a');
  t.equal(o.next(), undefined, 'empty: no key');
  m.set('b', 2);
  m.set('c', 3);
  t.equal(o.next(), 'b');
  m.delete('b');
  t.equal(o.next(), 'c');
});

t.test('a FIFO of 20,000 under 100,000 evictions keeps its order across table rebuilds', async (t) => {
  const m = new Map<number, number>();
  const o = new Oldest(m);
  for (let i = 0; i < 20_000; i++) m.set(i, i);
  let next = 20_000;
  let wrong = 0;
  for (let i = 0; i < 100_000; i++) {
    const k = o.next()!;
    if (k !== next - 20_000) wrong++;
    m.delete(k);
    m.set(next, next++);
  }
  t.equal(wrong, 0, 'every eviction took the oldest');
  t.equal(m.size, 20_000);
});

// V8's gc() for the retention checks (the test runner does not pass --expose-gc)
setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;
const collected = async (ref: WeakRef<object>): Promise<boolean> => {
  // a WeakRef keeps its target through the job that made or read it: collect after it
  await new Promise((r) => setImmediate(r));
  gc();
  return ref.deref() === undefined;
};

t.test("a kept walk holds a cleared map's entries until Oldest.clear()", async (t) => {
  const fill = (m: Map<string, object>) => {
    for (let i = 0; i < 8; i++) m.set('k' + i, { i });
    return new WeakRef(m.get('k7')!);
  };
  const m = new Map<string, object>();
  const o = new Oldest(m);
  const kept = fill(m);
  m.delete(o.next()!);
  m.clear();
  t.notOk(await collected(kept), "the map's own clear() leaves the old table, and its values, reachable (V8)");
  o.clear();
  t.ok(await collected(kept), 'Oldest.clear() forgets the walk: they go');
});

t.test("ByteBoundedMap.clear() lets its values go after evictions (its walk is reset)", async (t) => {
  const m = new ByteBoundedMap<object>(2000, () => 16);
  // (in a function of its own: an async function's frame may keep a dead local's value)
  const fill = () => {
    for (let i = 0; i < 99; i++) m.set('key-' + i, { i }); // past the budget: the oldest go, through the kept walk
    const last = { i: 99 };
    m.set('key-99', last);
    return new WeakRef(last);
  };
  const ref = fill();
  t.ok(m.size < 100, 'evicted');
  m.clear();
  t.ok(await collected(ref), 'nothing of the cleared map is held');
});
