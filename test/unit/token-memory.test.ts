// The thread's heartbeat token memory (liveness/token-memory.ts): keyed by the token alone, an
// entry answers only for the service and namespace it was accepted for; a refusal for another
// service leaves it; the accepted entries stay within their share of the byte budget.
import t from 'tap';
import { shardOf } from '../../src/hot/liveness/redis-lease.js';
import { newHeartbeatToken } from '../../src/hot/liveness/tokens.js';
import { HeartbeatTokenMemory, REFUSED_MS } from '../../src/hot/liveness/token-memory.js';

const SB = '0f6c1a52-1b7e-4a61-9a0f-3f2b1c0d9e8a';

t.test('an accepted token is known for its service only, and is the same entry each time', async (t) => {
  let now = 1_000;
  const m = new HeartbeatTokenMemory(1 << 20, () => now);
  const { token, hash } = newHeartbeatToken('prod');
  const hex = hash.toString('hex');
  const first = m.look('production', 'svcA', token);
  t.match(first, { refused: false, known: false, hash: hex }, 'not yet accepted: hashed, ask Redis');
  t.equal(m.stats.hashed, 1);
  m.accept('production', 'svcA', token, hex);
  const a = m.look('production', 'svcA', token);
  t.match(a, { refused: false, known: true, hash: hex, ns: 'production', id: 'svcA', shard: shardOf('svcA') });
  t.equal(m.look('production', 'svcA', token), a, 'the same object each time (the batch finds a turn\'s identical heartbeats by it)');
  t.equal(m.stats.hashed, 1, 'found without hashing');
  // the token under another service or namespace: not known there
  t.match(m.look('production', 'svcB', token), { known: false, hash: hex }, 'another service: ask Redis');
  t.match(m.look(SB, 'svcA', token), { known: false, hash: hex }, 'another namespace: ask Redis');
  // Redis refuses it there: remembered there, the entry of svcA stays
  m.refuse('production', 'svcB', token);
  t.same(m.look('production', 'svcB', token), { refused: true }, 'refused under svcB from memory');
  t.equal(m.look('production', 'svcA', token), a, 'still known for svcA');
  now += REFUSED_MS + 1;
  t.match(m.look('production', 'svcB', token), { known: false }, 'after REFUSED_MS: asked again');
  // refused for its own service (a rotation): forgotten, refused from memory
  m.refuse('production', 'svcA', token);
  t.same(m.look('production', 'svcA', token), { refused: true }, 'refused for svcA now');
  t.same(m.look('production', 'svcA', 'prod_hb_notatoken'), { refused: true }, 'a malformed token is refused from its text');
});

t.test('accepted entries stay within their share of the budget, the oldest evicted', async (t) => {
  const budget = 64 * 1024;
  const m = new HeartbeatTokenMemory(budget);
  const toks = Array.from({ length: 2000 }, (_, i) => ({ ...newHeartbeatToken('sb1'), id: `svc${i}` }));
  for (const x of toks) m.accept(SB, x.id, x.token, x.hash.toString('hex'));
  t.ok(m.bytes() <= (budget * 3) / 4, `${m.bytes()} bytes within ${(budget * 3) / 4}`);
  const kept = toks.filter((x) => (m.look(SB, x.id, x.token) as { known: boolean }).known).length;
  t.ok(kept > 100 && kept < toks.length, `${kept} of ${toks.length} kept`);
  const last = toks[toks.length - 1]!;
  t.match(m.look(SB, last.id, last.token), { known: true }, 'the newest kept');
  t.match(m.look(SB, toks[0]!.id, toks[0]!.token), { known: false }, 'the oldest evicted');
});
