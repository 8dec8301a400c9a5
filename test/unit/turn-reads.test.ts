// TurnReads (src/hot/redis/turn-reads.ts): reads of one key in one event-loop turn share one
// read; a later turn reads anew; keys apart; a failed read fails each of its readers.
import t from 'tap';
import { TurnReads } from '../../src/hot/redis/turn-reads.js';

const counting = () => {
  const calls: string[] = [];
  const r = new TurnReads(async (k: string) => {
    calls.push(k);
    if (k === 'bad') throw new Error('down');
    return `${k}#${calls.length}`;
  });
  return { r, calls };
};
const nextTurn = () => new Promise((resolve) => setImmediate(resolve));

t.test('one read per key and turn, shared by every caller of that turn', async (t) => {
  const { r, calls } = counting();
  const got = await Promise.all([r.get('a'), r.get('a'), r.get('b'), r.get('a')]);
  t.strictSame(got, ['a#1', 'a#1', 'b#2', 'a#1']);
  t.strictSame(calls, ['a', 'b']);
});

t.test('a later turn reads again, never reusing an earlier turn\'s read', async (t) => {
  const { r, calls } = counting();
  t.equal(await r.get('a'), 'a#1');
  await nextTurn();
  t.equal(await r.get('a'), 'a#2');
  t.strictSame(calls, ['a', 'a']);
});

t.test('a failed read fails each caller of its turn, and the next turn tries again', async (t) => {
  const { r, calls } = counting();
  const both = await Promise.allSettled([r.get('bad'), r.get('bad')]);
  t.strictSame(both.map((x) => x.status), ['rejected', 'rejected']);
  await nextTurn();
  await t.rejects(r.get('bad'));
  t.equal(calls.length, 2);
});
