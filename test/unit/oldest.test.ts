// domain/oldest.ts: the iterator kept across evictions returns, at every call, the key a fresh
// walk would (the oldest one held), whatever happened to the map in between (insertions,
// deletions, re-insertions that move a key last, clears, the table's growth and shrinking),
// as long as each key returned leaves the map. The bounded maps built on it evict in the
// same order as before (key-maps, token memory, result cache, near cache tests).
import t from 'tap';
import fc from 'fast-check';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { nextUnused, Oldest } from '../../src/hot/domain/oldest.js';
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

t.test('nextUnused: of a Map and of a Set, the key a clock gives (used ones cleared and moved last), each dropped before the next', async (t) => {
  fc.assert(
    fc.property(fc.array(fc.oneof(fc.record({ add: fc.nat(30) }), fc.record({ use: fc.nat(30) }), fc.constant('evict' as const)), { minLength: 20, maxLength: 200, size: 'max' }), (ops) => {
      type E = { id: number; used: boolean };
      const map = new Map<number, E>();
      const set = new Set<E>();
      const ofSet = new Map<number, E>(); // the Set's entries by id
      const [hm, hs] = [new Oldest(map), new Oldest(set)];
      const model: { id: number; used: boolean }[] = []; // insertion order
      for (const op of ops) {
        if (op === 'evict') {
          // the model's clock: used ones to the end, their mark cleared, until an unused one
          let want: number | undefined;
          for (let n = model.length * 2 + 1; n > 0 && model.length; n--) {
            const e = model.shift()!;
            if (!e.used) {
              want = e.id;
              break;
            }
            model.push({ id: e.id, used: false });
          }
          const k = nextUnused(hm, map);
          const e = nextUnused(hs, set);
          if (k !== want || e?.id !== want) throw new Error(`evicted ${k} / ${e?.id}, the clock ${want}`);
          if (k !== undefined) map.delete(k);
          if (e) {
            set.delete(e);
            ofSet.delete(e.id);
          }
        } else if ('add' in op) {
          if (map.has(op.add)) continue;
          map.set(op.add, { id: op.add, used: false });
          const e = { id: op.add, used: false };
          set.add(e);
          ofSet.set(op.add, e);
          model.push({ id: op.add, used: false });
        } else {
          const m = model.find((x) => x.id === op.use);
          if (!m) continue;
          m.used = map.get(op.use)!.used = ofSet.get(op.use)!.used = true;
        }
      }
    }),
  );
  t.pass('the same order as the clock');
});
