// The sandbox key maps' byte bound (issue 20): whatever is put in, the counted bytes never
// pass the budget, they are the sum of what the entries hold, and the oldest go first.
import t from 'tap';
import fc from 'fast-check';
import { ByteBoundedMap, ENTRY_BYTES, NUMBER_BYTES, stringBytes } from '../../src/hot/domain/byte-map.js';

const cost = (k: string, v: string | number) => ENTRY_BYTES + stringBytes(k) + (typeof v === 'string' ? stringBytes(v) : NUMBER_BYTES);

t.test('counted bytes stay within the budget and equal the entries held', async (t) => {
  fc.assert(
    fc.property(
      fc.integer({ min: 0, max: 4000 }),
      fc.array(fc.tuple(fc.constantFrom('set', 'set', 'set', 'delete'), fc.string({ maxLength: 80 }), fc.oneof(fc.string({ maxLength: 80 }), fc.double({ noNaN: true }))), { maxLength: 300 }),
      (budget, ops) => {
        const m = new ByteBoundedMap<string | number>(budget);
        const model = new Map<string, string | number>();
        for (const [op, k, v] of ops) {
          if (op === 'delete') {
            m.delete(k);
            model.delete(k);
          } else {
            m.set(k, v);
            model.delete(k);
            if (cost(k, v) <= budget) model.set(k, v);
            let sum = 0;
            for (const [mk, mv] of model) sum += cost(mk, mv);
            // the model drops its oldest until it fits, as the map must
            for (const [mk, mv] of model) {
              if (sum <= budget) break;
              model.delete(mk);
              sum -= cost(mk, mv);
            }
          }
          if (m.bytes > budget) return false;
        }
        let sum = 0;
        for (const [k, v] of model) {
          if (m.get(k) !== v) return false;
          sum += cost(k, v);
        }
        return m.size === model.size && m.bytes === sum;
      },
    ),
  );
  t.pass('budget held, bytes exact, oldest evicted first');
});

t.test('string sizes as V8 lays out one-byte strings: 16 bytes of header, the length rounded up to 8', async (t) => {
  t.equal(stringBytes(''), 16);
  t.equal(stringBytes('a'), 24);
  t.equal(stringBytes('x'.repeat(64)), 80, 'a SHA-256 in hex');
  t.equal(stringBytes('x'.repeat(36)), 56, 'a uuid');
});
