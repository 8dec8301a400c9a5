import t from 'tap';
import { ENTRY_OVERHEAD, ownBuffer, ResultCache, stringBytes } from '../../src/hot/search/result-cache.js';
import { sleep } from '../helpers/wait.js';

const v = (s: string) => ({ body: Buffer.from(s), headers: [] as [string, string][], etag: '"e"' });

t.test('hit until the namespace is invalidated', async (t) => {
  const c = new ResultCache(10, 60_000);
  c.set('k', 'production', c.version('production'), v('a'));
  t.equal(c.get('k', 'production')?.body.toString(), 'a');
  c.invalidate('sandbox-1');
  t.ok(c.get('k', 'production'), 'another namespace does not matter');
  c.invalidate('production');
  t.equal(c.get('k', 'production'), null);
});

t.test('a result computed across an invalidation is not stored', async (t) => {
  const c = new ResultCache(10, 60_000);
  const before = c.version('production');
  c.invalidate('production'); // a write landed while the result was being computed
  c.set('k', 'production', before, v('stale'));
  t.equal(c.get('k', 'production'), null);
});

t.test('clear() kills namespaces never invalidated before, and in-flight results', async (t) => {
  const c = new ResultCache(10, 60_000);
  const before = c.version('x');
  c.set('k', 'x', before, v('a'));
  c.clear();
  t.equal(c.get('k', 'x'), null);
  c.set('k2', 'x', before, v('stale'));
  t.equal(c.get('k2', 'x'), null);
});

t.test('entries expire and the size is bounded', async (t) => {
  const c = new ResultCache(2, 0);
  c.set('a', 'n', c.version('n'), v('a'));
  await sleep(5);
  t.equal(c.get('a', 'n'), null, 'expired');
  const d = new ResultCache(2, 60_000);
  for (const k of ['a', 'b', 'c']) d.set(k, 'n', d.version('n'), v(k));
  t.equal(d.size, 2);
  t.equal(d.get('a', 'n'), null, 'oldest evicted');
  t.ok(d.get('c', 'n'));
});

t.test('bounded by bytes: the oldest entries go, sizes are accounted exactly', async (t) => {
  // an entry: its measured overhead, its key and ETag as heap strings, its body's whole buffer
  const one = ENTRY_OVERHEAD + stringBytes('a') + 1000 + stringBytes('"e"');
  const c = new ResultCache(1000, 60_000, 3 * one); // three 1000-byte bodies with 3-char ETags under 1-char keys
  const body = (ch: string) => ({ body: Buffer.alloc(1000, ch), headers: [] as [string, string][], etag: '"e"' });
  for (const k of ['a', 'b', 'c']) c.set(k, 'n', c.version('n'), body(k));
  t.equal(c.size, 3);
  t.equal(c.bytes, 3 * one);
  c.set('d', 'n', c.version('n'), body('d'));
  t.equal(c.size, 3, 'one went to make room');
  t.equal(c.get('a', 'n'), null, 'the oldest');
  t.ok(c.get('d', 'n'));
  t.equal(c.bytes, 3 * one);
  c.set('d', 'n', c.version('n'), body('e'));
  t.equal(c.bytes, 3 * one, 'replacing a key does not count it twice');
  t.equal(c.get('d', 'n')?.body[0], 'e'.charCodeAt(0));
  c.set('big', 'n', c.version('n'), { body: Buffer.alloc(3 * one), headers: [], etag: '"e"' });
  t.equal(c.get('big', 'n'), null, 'an entry larger than the whole cache is not stored');
  t.equal(c.size, 3, 'and evicts nothing');
  c.invalidate('n');
  t.equal(c.get('b', 'n'), null);
  t.equal(c.bytes, 2 * one, 'a dead entry found on a look-up is freed');
  c.clear();
  t.equal(c.bytes, 0);
});

t.test('a body is counted at the buffer it keeps alive; a pooled slice is stored as a copy of its own', async (t) => {
  const c = new ResultCache(1000, 60_000);
  const small = Buffer.from('[]'); // a slice of Node's shared 8 KiB pool
  t.ok(small.buffer.byteLength > small.byteLength, '(pooled)');
  c.set('k', 'n', c.version('n'), { body: small, headers: [], etag: '"e"' });
  t.equal(c.bytes, ENTRY_OVERHEAD + stringBytes('k') + small.buffer.byteLength + stringBytes('"e"'), 'the slab it keeps, counted');
  const own = ownBuffer(small);
  t.not(own, small);
  t.equal(own.buffer.byteLength, 2, 'a buffer of its own, exactly its size');
  t.equal(own.toString(), '[]');
  const exact = Buffer.allocUnsafeSlow(8);
  t.equal(ownBuffer(exact), exact, 'a buffer that is its own is kept as it is');
  t.not(ownBuffer(exact, true), exact, 'unless a copy is asked for (scratch memory)');
});

t.test('the doorkeeper\'s keys are counted, and bounded by a sixteenth of the budget', async (t) => {
  const c = new ResultCache(1_000_000, 60_000, 16 * 1024);
  let most = 0;
  for (let i = 0; i < 10_000; i++) {
    c.admitOnSecond('k'.repeat(50) + i);
    most = Math.max(most, c.bytes);
  }
  t.ok(most <= 1024, `within 1/16 of the budget (at most ${most})`);
  t.ok(c.bytes > 0, 'counted');
  c.clear();
  t.equal(c.bytes, 0);
});

t.test('admitOnSecond: a key is admitted on its second miss; the doorkeeper is bounded', async (t) => {
  const c = new ResultCache(2, 60_000);
  t.equal(c.admitOnSecond('a'), false, 'first: not admitted');
  t.equal(c.admitOnSecond('a'), true, 'second: admitted');
  t.equal(c.admitOnSecond('a'), false, 'and forgotten by the doorkeeper');
  c.admitOnSecond('b');
  c.admitOnSecond('c'); // full (2): emptied first
  t.equal(c.admitOnSecond('b'), false, 'b was forgotten when the doorkeeper filled');
  t.equal(c.admitOnSecond('c'), true);
});

t.test('admitOnSecond: under churn, a repeat slower than entries live is not admitted', async (t) => {
  let now = 1_000_000;
  const c = new ResultCache(2, 10_000, Number.POSITIVE_INFINITY, undefined, () => now);
  const v = { body: Buffer.from('x'), headers: [], etag: '"x"' };
  t.equal(c.lifetimeMs, 10_000, 'before any eviction: the TTL');
  // every insertion evicts an entry stored two ticks before it
  for (let i = 0; i < 500; i++) {
    now += 1;
    c.set(`k${i}`, 'n', c.version('n'), v);
  }
  t.ok(c.lifetimeMs < 20, `entries live ~2 ms now (estimate ${c.lifetimeMs.toFixed(1)})`);
  t.equal(c.admitOnSecond('p'), false, 'first request');
  now += 100;
  t.equal(c.admitOnSecond('p'), false, 'a repeat 100 ms later would find its entry gone: not stored');
  now += 1;
  t.equal(c.admitOnSecond('p'), true, 'a repeat 1 ms after that: stored');
  // no more churn: insertions that evict nothing bring the estimate back toward the TTL
  const roomy = new ResultCache(1000, 10_000, Number.POSITIVE_INFINITY, undefined, () => now);
  for (let i = 0; i < 300; i++) roomy.set(`k${i}`, 'n', roomy.version('n'), v);
  t.equal(roomy.lifetimeMs, 10_000);
});
