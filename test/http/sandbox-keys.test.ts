// Checksummed sandbox keys against the live server: a key with a wrong checksum is answered
// (anonymous on /services, 401 on sandbox routes) without any look-up, neither in Redis
// (watched with MONITOR, filtered by this server's key prefix) nor further (the resolver's
// look-up counter); a pre-checksum key issued before the change keeps working.
import t from 'tap';
import { connect } from 'node:net';
import pg from 'pg';
import { createSandbox, registerProduction, serve } from '../helpers/server.js';
import { hashKey, keyShape } from '../../src/hot/sandboxes/keys.js';
import { ids } from '../helpers/checks.js';

const s = await serve(t);
const prod = await registerProduction(s, { endpoint: 'https://prod.example.com', capability: 'keys' });
const sb = await createSandbox(s, 'Key Lab');
const auth = (key: string) => ({ authorization: `Bearer ${key}` });
const reg = await s.req(`/sandbox/${sb.uuid}/services`, { method: 'POST', headers: { ...auth(sb.apiKey), 'content-type': 'application/json' }, body: '{"endpoint":"https://sb.example.com","capability":"keys"}' });
const sbSvc = (await reg.json()) as { id: string };

/**
 * Every Redis command about this server's sandbox keys while `f` runs, seen by MONITOR on a
 * plain socket (ioredis's monitor() mode trips over a busy shared server: "Command queue
 * state error"). MONITOR delivers in order: once our sentinel GET shows, all before it has.
 */
async function keyLookups(f: () => Promise<void>): Promise<string[]> {
  const prefix = s.cfg.redisKeyPrefix;
  const u = new URL(s.cfg.redisUrl);
  const sock = connect(Number(u.port || 6379), u.hostname);
  await new Promise((r) => sock.once('connect', r));
  const seen: string[] = [];
  const sentinel = `${prefix}sentinel:${Math.random()}`;
  let rest = '';
  let oks = u.password ? 2 : 1; // AUTH's, then MONITOR's
  let ok: () => void = () => undefined;
  let sawSentinel: () => void = () => undefined;
  const started = new Promise<void>((r) => (ok = r));
  const done = new Promise<void>((r) => (sawSentinel = r));
  sock.on('data', (d: Buffer) => {
    const lines = (rest + d.toString('latin1')).split('\r\n');
    rest = lines.pop()!;
    for (const l of lines) {
      if (l === '+OK' && --oks === 0) ok();
      else if (l.includes(sentinel)) sawSentinel();
      else if (l.includes(`"${prefix}sbkey:`)) seen.push(l);
    }
  });
  if (u.password) sock.write(`AUTH ${decodeURIComponent(u.password)}\r\n`);
  sock.write('MONITOR\r\n');
  try {
    await started;
    await f();
    await s.app.redis.get(sentinel);
    await done;
  } finally {
    sock.destroy();
  }
  return seen;
}

t.test('the issued key is checksummed', async (t) => {
  t.match(sb.apiKey, /^keylab_sb_[0-9A-Za-z]{38}$/);
  t.equal(keyShape(sb.apiKey), 'checksummed');
});

t.test('a key with a bad checksum: no look-up; anonymous on /services, 401 on sandbox routes', async (t) => {
  const last = sb.apiKey.at(-1)!;
  const bad = sb.apiKey.slice(0, -1) + (last === 'a' ? 'b' : 'a');
  t.equal(keyShape(bad), 'invalid');
  const before = { ...s.app.auth.stats };
  const lookups = await keyLookups(async () => {
    const r = await s.req('/services?capability=keys', { headers: auth(bad) });
    t.equal(r.status, 200);
    t.same(await ids(r), [prod.id], 'production answers: the caller is anonymous');
    const w = await s.req(`/sandbox/${sb.uuid}/services`, { headers: auth(bad) });
    t.equal(w.status, 401);
    t.match(await w.json(), { error: { code: 'UNAUTHORIZED' } });
    const p = await s.req(`/sandbox/${sb.uuid}/services`, { method: 'POST', headers: { ...auth(bad), 'content-type': 'application/json' }, body: '{"endpoint":"https://x.example.com","capability":"x"}' });
    t.equal(p.status, 401, 'registration refused');
  });
  t.same(lookups, [], 'no Redis command about any key');
  t.equal(s.app.auth.stats.lookups, before.lookups, 'no look-up past the key text');
  t.equal(s.app.auth.stats.refusedByShape, before.refusedByShape + 3);

  // the same watch sees a look-up when there is one: an unknown key of a valid shape
  const forged = 'keylab_sb_' + 'Q'.repeat(32); // pre-checksum shape: must be looked up
  const seen = await keyLookups(async () => {
    t.equal((await s.req(`/sandbox/${sb.uuid}/services`, { headers: auth(forged) })).status, 401);
  });
  t.equal(seen.length, 1, 'a key that has to be looked up shows in Redis');
  t.equal(s.app.auth.stats.lookups, before.lookups + 1);
});

t.test('a pre-checksum key issued before the change keeps working', async (t) => {
  const legacy = 'oldlab_sb_' + '0123456789abcdefghijABCDEFGHIJ' + 'xy';
  t.equal(keyShape(legacy), 'legacy');
  const other = await createSandbox(s, 'Old Lab');
  // as the earlier code stored it: only the hash of the key
  const c = new pg.Client({ connectionString: s.cfg.databaseUrl });
  await c.connect();
  await c.query('UPDATE sandboxes SET key_hash = $1, prefix = $2 WHERE uuid = $3', [hashKey(legacy), 'oldlab', other.uuid]);
  await c.end();
  // and as the Redis index holds every key hash (a rebuild writes them from PostgreSQL):
  // while the index is complete a miss there is the answer (issue 20)
  await s.app.redis.set(s.app.keys.sandboxKey(hashKey(legacy).toString('hex')), other.uuid);
  const r = await s.req(`/sandbox/${other.uuid}/services`, { headers: auth(legacy) });
  t.equal(r.status, 200, 'accepted on sandbox routes');
  t.same(await ids(r), []);
  const w = await s.req(`/sandbox/${other.uuid}/services`, { method: 'POST', headers: { ...auth(legacy), 'content-type': 'application/json' }, body: '{"endpoint":"https://old.example.com","capability":"keys"}' });
  t.equal(w.status, 201, 'and can register');
  const mine = (await w.json()) as { id: string };
  const search = await s.req('/services?capability=keys', { headers: auth(legacy) });
  t.same(await ids(search), [mine.id], 'its searches are its sandbox');
  // the checksummed key of the first sandbox still works alongside
  t.same(await ids(await s.req('/services?capability=keys', { headers: auth(sb.apiKey) })), [sbSvc.id]);
});
