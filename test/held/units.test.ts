// The held room's pure parts: the Prefer parser (RFC 7240) over any header; the wheel of
// deadlines on a clock the test moves (due at the first turn at or after the deadline, never
// before, whatever the order of adds and removes); the index of answers, which turns a delta
// into exactly the answers it may change.
import t from 'tap';
import fc from 'fast-check';
import { preferredWait } from '../../src/hot/held/prefer.js';
import { Wheel, type Timed } from '../../src/hot/held/wheel.js';
import { Watches } from '../../src/hot/held/watches.js';
import { Group } from '../../src/hot/held/types.js';
import type { Delta } from '../../src/hot/redis/delta.js';

t.test('Prefer: wait', async (t) => {
  const cases: [string, number][] = [
    ['wait=10', 10],
    ['WAIT=10', 10],
    [' wait = 10 ', 10],
    ['wait="10"', 10],
    ['respond-async, wait=7', 7],
    ['wait=7; foo=bar, respond-async', 7],
    ['return=minimal;wait=3', 0], // a parameter of `return`, not the wait preference
    ['foo="a,wait=9", wait=2', 2], // the comma inside the quotes is not a separator
    ['wait=5, wait=9', 5], // the first counts
    ['wait=x, wait=9', 0], // the first counts, malformed as it is
    ['wait=1000', 300], // capped
    ['wait=99999999999999999999999', 300],
    ['wait=0', 0],
    ['wait=', 0],
    ['wait', 0],
    ['wait=-3', 0],
    ['wait=2.5', 0],
    ['wait="3', 0],
    ['', 0],
    ['handling=lenient', 0],
  ];
  for (const [h, want] of cases) t.equal(preferredWait(h, 300), want, JSON.stringify(h));
  fc.assert(
    fc.property(fc.oneof(fc.string(), fc.string({ unit: 'binary' }), fc.string({ unit: fc.constantFrom('w', 'a', 'i', 't', '=', '"', '\\', ',', ';', ' ', '1', '0', '9') })), fc.integer({ min: 1, max: 3600 }), (h, max) => {
      const w = preferredWait(h, max);
      return Number.isInteger(w) && w >= 0 && w <= max;
    }),
    { numRuns: 2000 },
  );
});

interface Entry extends Timed {
  id: number;
  deadline: number;
}

t.test('the wheel: due at the first turn at or after the deadline, never before; removed ones never', async () => {
  fc.assert(
    fc.property(
      fc.array(fc.oneof(fc.record({ add: fc.integer({ min: 0, max: 3000 }) }), fc.record({ remove: fc.nat() }), fc.record({ advance: fc.integer({ min: 0, max: 700 }) })), { maxLength: 200 }),
      (ops) => {
        let now = 1000;
        const dueAt = new Map<number, number>();
        const wheel = new Wheel<Entry>(100, 3000, (e) => dueAt.set(e.id, now), () => now);
        const on: Entry[] = [];
        const removed = new Set<number>();
        let id = 0;
        for (const op of ops) {
          if ('add' in op) {
            const e: Entry = { id: id++, deadline: now + op.add, tick: 0, wprev: null, wnext: null };
            wheel.add(e, e.deadline);
            on.push(e);
          } else if ('remove' in op) {
            const live = on.filter((e) => !dueAt.has(e.id) && !removed.has(e.id));
            if (!live.length) continue;
            const e = live[op.remove % live.length]!;
            wheel.remove(e);
            removed.add(e.id);
          } else {
            now += op.advance;
            wheel.turn();
          }
        }
        now += 4000;
        wheel.turn();
        wheel.stop();
        for (const e of on) {
          const at = dueAt.get(e.id);
          if (removed.has(e.id)) {
            if (at !== undefined) return false; // a removed entry came due
          } else if (at === undefined || at < e.deadline) return false; // never due, or early
        }
        return wheel.size === 0;
      },
    ),
    { numRuns: 500 },
  );
});

const watchOf = (ns: string, sets?: string[], seq?: number) => ({ ns, sets, seq, compute: () => ({ status: 200, body: '', etag: null, headers: [] }) });
const write = (oldSeq: number | null, oldMembers: string[], newSeq: number | null, newMembers: string[]): Delta => ({ ver: 1, oldSeq, oldMembers, newSeq, newMembers, seqs: null });

t.test('the answers a delta may change', async (t) => {
  const w = new Watches();
  const g = (key: string, ns: string, sets?: string[], seq?: number) => {
    const x = new Group({ left: () => undefined }, key, watchOf(ns, sets, seq), '"e"', [], seq);
    w.add(x);
    return x;
  };
  const all = g('all', 'p', ['all']);
  const cap = g('cap', 'p', ['c:a']);
  const capHealthy = g('cap+h', 'p', ['c:a', 'h']);
  const two = g('two', 'p', ['c:a', 'c:b']);
  const one = g('one', 'p', undefined, 7);
  const other = g('sandbox', 's', ['all']);
  const keys = (d: Delta, ns = 'p') => [...w.affected(ns, d)].map((x) => x.key).sort();
  t.same(keys(write(null, [], 9, ['all', 'c:a'])), ['all', 'cap'], 'a registration: the searches whose every set it joins');
  t.same(keys(write(9, ['all', 'c:a', 'h'], 9, ['all', 'c:a'])), ['all', 'cap', 'cap+h'], 'a service that leaves h: in it before, so the healthy search too');
  t.same(keys(write(7, ['all', 'c:z'], 7, ['all', 'c:z'])), ['all', 'one'], 'a PATCH of service 7: its read and what it is in');
  t.same(keys(write(8, ['all', 'c:b'], null, [])), ['all'], 'a deletion in c:b alone: not the search of c:a and c:b');
  t.same(keys(write(8, ['all', 'c:a', 'c:b'], null, [])), ['all', 'cap', 'two'], 'a deletion in both');
  t.same(keys({ ver: 1, oldSeq: null, oldMembers: ['h'], newSeq: null, newMembers: [], seqs: [7, 12] }), ['all', 'cap', 'cap+h', 'one', 'two'], 'a page of expiries: every search, the reads of its seqs');
  t.same(keys(write(null, [], 9, ['all', 'c:a']), 'q'), [], 'another namespace: none');
  w.reseq(one, 8);
  t.same(keys(write(8, ['all'], 8, ['all'])), ['all', 'one'], 'a read follows its service\'s seq');
  for (const x of [all, cap, capHealthy, two, one, other]) w.remove(x);
  t.equal(w.size, 0);
  t.same(keys(write(null, [], 9, ['all', 'c:a'])), [], 'nothing left');
});
