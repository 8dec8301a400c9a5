// The X-Consul-Index rule (consul-index.ts) against a model of the index it reads: random
// histories of writes (register, patch the capabilities, delete) drawing revisions from one
// sequence, applied to the index in a random order under the revision rule (an older state
// of an id never replaces a newer one; a leave records a tombstone at the applied revision,
// as redis/lib/apply.lua does). After every apply the index of every capability never
// decreases, and it grows whenever that capability's answer changed.
import t from 'tap';
import fc from 'fast-check';
import { consulIndex, type Member, type Tombstone } from '../../src/hot/discovery/consul/consul-index.js';

const CAPS = ['a', 'b', 'c'];

interface State {
  rev: number;
  /** null: deleted */
  caps: string[] | null;
}

/** The index's view: each id's applied state, and the tombstones. */
class Model {
  applied = new Map<string, State>();
  tombs = new Map<string, Tombstone>();

  apply(id: string, s: State): void {
    const cur = this.applied.get(id);
    if (cur && cur.rev > s.rev) return; // the revision rule
    for (const c of cur?.caps ?? []) if (!s.caps?.includes(c)) this.tombs.set(c + '\0' + id, { capability: c, id, rev: String(s.rev) });
    this.applied.set(id, s);
  }

  members(): Member[] {
    return [...this.applied].filter(([, s]) => s.caps).map(([id, s]) => ({ id, capabilities: s.caps!, rev: String(s.rev) }));
  }

  index(cap: string | null): bigint {
    const ms = this.members().filter((m) => cap === null || m.capabilities.includes(cap));
    return consulIndex(ms, [...this.tombs.values()], cap);
  }

  /** what an answer about `cap` shows: its members and their states */
  answer(cap: string | null): string {
    return JSON.stringify(this.members().filter((m) => cap === null || m.capabilities.includes(cap)).map((m) => [m.id, m.rev, m.capabilities]).sort());
  }
}

const write = fc.record({ id: fc.constantFrom('s1', 's2', 's3', 's4'), caps: fc.option(fc.subarray(CAPS, { minLength: 1 }), { nil: null }) });

t.test('the index never decreases and grows with every change of its answer, whatever the order of applies', async () => {
  fc.assert(
    fc.property(fc.array(write, { minLength: 1, maxLength: 30 }), fc.array(fc.nat(), { minLength: 30, maxLength: 30 }), (writes, order) => {
      // commits: each write draws the next revision (the sequence); a deletion of an id with
      // no state is no write
      const commits = writes.map((w, i) => ({ id: w.id, state: { rev: i + 1, caps: w.caps } as State }));
      // applies come in any order (a sync can lag, a later write apply first)
      const pending = [...commits];
      const m = new Model();
      const queries = [...CAPS, null];
      while (pending.length) {
        const k = order[pending.length % order.length]! % pending.length;
        const c = pending.splice(k, 1)[0]!;
        const before = queries.map((q) => [m.index(q), m.answer(q)] as const);
        m.apply(c.id, c.state);
        queries.forEach((q, i) => {
          const [idx, ans] = before[i]!;
          const now = m.index(q);
          if (now < idx) throw new Error(`index of ${q} went ${idx} -> ${now}`);
          if (m.answer(q) !== ans && now === idx) throw new Error(`answer of ${q} changed, index stayed ${idx}`);
        });
      }
    }),
    { numRuns: 2000 },
  );
});

t.test("a capability's index ignores writes that never touch it", async (t) => {
  const m = new Model();
  m.apply('x', { rev: 1, caps: ['a'] });
  const a = m.index('a');
  m.apply('y', { rev: 2, caps: ['b'] });
  m.apply('y', { rev: 3, caps: ['b', 'c'] });
  m.apply('y', { rev: 4, caps: null });
  t.equal(m.index('a'), a);
  m.apply('x', { rev: 5, caps: ['b'] });
  const left = m.index('a');
  t.ok(left > a, 'a leave raises it');
  m.apply('x', { rev: 6, caps: ['b', 'c'] });
  t.equal(m.index('a'), left, "a former member's later writes do not");
});
