// The change feed's shares (issue 20) under any interleaving of opens and closes: never more
// than the total or an address's share open, a refusal says which cap, each release counts
// once, and everything released leaves the counters at zero.
import t from 'tap';
import fc from 'fast-check';
import { StreamShares, streamSharesBuffer } from '../../src/hot/changes/shares.js';

const ADDRESSES = ['10.0.0.1', '10.0.0.2', '::1', '203.0.113.7'];

/** A buffer with a fixed seed under which the four addresses have buckets of their own. */
function buffer(): SharedArrayBuffer {
  const buf = streamSharesBuffer();
  new Int32Array(buf)[1] = 20_201_124;
  return buf;
}

t.test('the fixed seed keeps the addresses apart', async (t) => {
  const s = new StreamShares(100, 1, buffer());
  t.ok(ADDRESSES.every((a) => typeof s.reserve(a) === 'function'), 'one slot each, with a share of one');
});

t.test('caps hold under any sequence of reserves and releases', async (t) => {
  fc.assert(
    fc.property(
      fc.integer({ min: 1, max: 20 }),
      fc.integer({ min: 1, max: 8 }),
      fc.array(fc.oneof(fc.record({ open: fc.constantFrom(...ADDRESSES) }), fc.record({ close: fc.nat(), twice: fc.boolean() })), { maxLength: 200 }),
      (total, per, ops) => {
        const s = new StreamShares(total, per, buffer());
        const held: { addr: string; release: () => void }[] = [];
        for (const op of ops) {
          if ('open' in op) {
            const r = s.reserve(op.open);
            const mine = held.filter((h) => h.addr === op.open).length;
            if (typeof r === 'function') {
              if (held.length >= total || mine >= per) return false; // admitted over a cap
              held.push({ addr: op.open, release: r });
            } else if (r === 'total' ? held.length < total : mine < per) return false; // refused for nothing
          } else if (held.length) {
            const [h] = held.splice(op.close % held.length, 1);
            h!.release();
            if (op.twice) h!.release(); // a second release changes nothing
          }
          if (s.open() !== held.length) return false;
        }
        for (const h of held) h.release();
        return s.open() === 0 && ADDRESSES.every((a) => s.openBy(a) === 0);
      },
    ),
  );
  t.pass('never over a cap, never refused below one, every slot given back');
});
