// The heartbeat call's own connection (redis/script-line.ts) against real redis-servers of
// its own (helpers/redis-server.ts: killed, restarted, paused, password-protected without
// touching the shared one) and, for what a Redis never does (silence, garbage), a TCP server
// of the test's: it answers as ioredis would, loads a script Redis lost (NOSCRIPT), fails the
// calls in flight with an outage error when the connection goes, comes back by itself,
// authenticates and selects as the client's options say, and is used by the heartbeat batch
// (its answers those of the ioredis path). The RESP reader gets every reply split anywhere.
import t, { type Test } from 'tap';
import { createHash } from 'node:crypto';
import { createServer, type Server, type Socket } from 'node:net';
import { once } from 'node:events';
import { Redis } from 'ioredis';
import { loadConfig } from '../../src/hot/config.js';
import { Keys } from '../../src/hot/domain/keys.js';
import { scriptLineFor } from '../../src/hot/redis/client.js';
import { LineReplyError, ScriptLine, type LineDone } from '../../src/hot/redis/script-line.js';
import { HeartbeatBatch } from '../../src/hot/liveness/heartbeat-batch.js';
import { shardOf } from '../../src/hot/liveness/redis-lease.js';
import { isRedisUnavailable, outageError } from '../../src/hot/domain/outage.js';
import { startRedis } from '../helpers/redis-server.js';
import { startProxy } from '../helpers/tcp-proxy.js';
import { PendingRecords } from '../../src/hot/ratelimit/records.js';
import { pollData } from '../../src/hot/sandboxes/summary.js';
import { writeSandboxMeta } from '../../src/hot/sandboxes/meta.js';
import { waitFor } from '../helpers/wait.js';
import { suiteRedis } from '../helpers/test-data.js';

const lua = (body: string) => ({ lua: body, sha: createHash('sha1').update(body).digest('hex') });
/** a script that returns its arguments' shapes: an array of a number, a string, a nested array, a null */
const SHAPES = lua(`return {tonumber(ARGV[1]), ARGV[2], {1, -2, 'x'}, false, redis.call('INCR', KEYS[1])}`);

/** One call on the line as a promise ([error, reply]); throws when the line refused it (not ready). */
function call(line: ScriptLine, s: { lua: string; sha: string }, keys: string[], args: (string | number)[]): Promise<[Error | undefined, unknown]> {
  return new Promise((ok, no) => {
    const done: LineDone = (err, r) => ok([err, r]);
    if (!line.evalsha(s.sha, s.lua, keys.length, [...keys, ...args], done)) no(new Error('the line refused the call (not ready)'));
  });
}

const ready = (line: ScriptLine) => waitFor('the line ready', () => line.isReady, 5000, 10);

t.test('replies as ioredis reads them; a script Redis lost is loaded again (NOSCRIPT), once', async (t) => {
  const r = await startRedis();
  t.teardown(() => r.kill());
  const io = new Redis(r.url);
  t.teardown(() => io.disconnect());
  const line = new ScriptLine({ host: '127.0.0.1', port: r.port });
  t.teardown(() => line.close());
  t.notOk(line.evalsha(SHAPES.sha, SHAPES.lua, 1, ['k', 1, 'a'], () => t.fail('called')), 'refused before it is connected');
  line.start();
  await ready(line);
  const [e1, a] = await call(line, SHAPES, ['k'], [42, 'héllo wörld']);
  t.equal(e1, undefined);
  t.same(a, [42, 'héllo wörld', [1, -2, 'x'], null, 1], 'integers, a UTF-8 bulk string, a nested array, a nil');
  t.equal(line.stats.noscript, 1, 'the first call loaded the script (EVAL after NOSCRIPT)');
  t.same(await io.eval(SHAPES.lua, 1, 'k', 42, 'héllo wörld'), [42, 'héllo wörld', [1, -2, 'x'], null, 2], "ioredis's reading of the same reply");
  // many calls at once, answered in order
  const many = await Promise.all(Array.from({ length: 200 }, (_, i) => call(line, SHAPES, ['k'], [i, 'x'.repeat(i * 50)])));
  t.same(many.map(([e, v]) => [e, (v as unknown[])[0], ((v as unknown[])[1] as string).length]), many.map((_, i) => [undefined, i, i * 50]), '200 calls in flight, each answered its own');
  t.equal(line.stats.noscript, 1, 'no NOSCRIPT while Redis has it');
  await io.script('FLUSH');
  const [e2, b] = await call(line, SHAPES, ['k'], [7, 'z']);
  t.equal(e2, undefined);
  t.equal((b as unknown[])[0], 7);
  t.equal(line.stats.noscript, 2, 'after SCRIPT FLUSH: loaded again');
  // a script error is the call's error, a ReplyError as ioredis names it (not an outage)
  const bad = lua(`return redis.call('INCR', KEYS[1])`);
  await io.set('notanumber', 'x');
  const [e3] = await call(line, bad, ['notanumber'], []);
  t.type(e3, LineReplyError);
  t.equal(e3!.name, 'ReplyError');
  t.notOk(isRedisUnavailable(e3), 'a script error is not an outage');
  const [e4, c] = await call(line, SHAPES, ['k'], [8, 'y']);
  t.same([e4, (c as unknown[])[0]], [undefined, 8], 'the line goes on after an error reply');
});

t.test('the connection lost: calls in flight fail as an outage (503), the line comes back by itself', async (t) => {
  const r = await startRedis(['--enable-debug-command', 'yes']);
  t.teardown(() => r.kill());
  const io = new Redis(r.url);
  io.on('error', () => undefined);
  t.teardown(() => io.disconnect());
  const line = new ScriptLine({ host: '127.0.0.1', port: r.port }, { name: 'line-test' });
  t.teardown(() => line.close());
  line.start();
  await ready(line);
  await call(line, SHAPES, ['k'], [1, 'a']);
  const list = await io.client('LIST');
  t.match(String(list), /name=line-test/, 'the line is named in CLIENT LIST');
  // calls held by a Redis asleep (DEBUG SLEEP), then the server killed under them
  const sleeper = new Redis(r.url);
  sleeper.on('error', () => undefined);
  t.teardown(() => sleeper.disconnect());
  void sleeper.call('DEBUG', 'SLEEP', '2').catch(() => undefined);
  await new Promise((ok) => setTimeout(ok, 100));
  const held = [call(line, SHAPES, ['k'], [2, 'b']), call(line, SHAPES, ['k'], [3, 'c'])];
  await new Promise((ok) => setTimeout(ok, 50));
  await r.kill();
  const out = await Promise.all(held);
  for (const [e] of out) {
    t.ok(e && isRedisUnavailable(e), `a call in flight failed as an outage: ${e?.message}`);
    t.equal(outageError(e)?.status, 503, 'answered 503');
  }
  await waitFor('the line down', () => !line.isReady, 5000, 10);
  t.notOk(line.evalsha(SHAPES.sha, SHAPES.lua, 1, ['k', 1, 'a'], () => t.fail('called')), 'refused while Redis is away (the caller takes ioredis)');
  await r.restart();
  await ready(line);
  const [e, v] = await call(line, SHAPES, ['k'], [4, 'd']);
  t.same([e, (v as unknown[])[0]], [undefined, 4], 'back after the restart (the script loaded again)');
  t.ok(line.stats.connects >= 2);
});

t.test('AUTH (password, ACL user) and SELECT from the client options; a wrong password never makes it ready', async (t) => {
  const r = await startRedis();
  t.teardown(() => r.kill());
  const admin = new Redis(r.url);
  await admin.config('SET', 'requirepass', 'sekret');
  admin.disconnect();
  const url = `redis://:sekret@127.0.0.1:${r.port}/3`;
  const io = suiteRedis(t, { REDIS_URL: url, REDIS_CLUSTER_NODES: '' });
  const line = scriptLineFor(io)!;
  t.teardown(() => line.close());
  line.start();
  await ready(line);
  const [e] = await call(line, SHAPES, ['in-db-3'], [1, 'a']);
  t.equal(e, undefined);
  t.equal(await io.get('in-db-3'), '1', 'the key was written in database 3, where the client reads');
  // an ACL user who may not name its connection (no CLIENT): the name is skipped, not fatal
  await io.call('ACL', 'SETUSER', 'beats', 'on', '>beatpw', '~*', '+@all', '-client');
  const user = new ScriptLine({ host: '127.0.0.1', port: r.port, username: 'beats', password: 'beatpw' });
  t.teardown(() => user.close());
  user.start();
  await ready(user);
  const [eu, vu] = await call(user, SHAPES, ['as-user'], [9, 'u']);
  t.same([eu, (vu as unknown[])[0]], [undefined, 9], 'an ACL user without CLIENT: ready, its calls answered');
  const wrong = new ScriptLine({ host: '127.0.0.1', port: r.port, password: 'nope' });
  t.teardown(() => wrong.close());
  wrong.start();
  await new Promise((ok) => setTimeout(ok, 300));
  t.notOk(wrong.isReady, 'refused by AUTH: not ready');
  t.notOk(wrong.evalsha(SHAPES.sha, SHAPES.lua, 1, ['k', 1, 'a'], () => t.fail('called')));
});

/** A TCP server of the test's: `onData` decides what each connection gets. */
async function fakeRedis(t: Test, onData: (s: Socket, d: Buffer) => void): Promise<{ port: number; server: Server }> {
  const server = createServer((s) => s.on('data', (d) => onData(s, d)));
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  t.teardown(() => new Promise<void>((ok) => server.close(() => ok())));
  return { port: (server.address() as { port: number }).port, server };
}

t.test('a Redis that does not answer: the watchdog fails the calls (Command timed out), then reconnects', async (t) => {
  let connections = 0;
  const sockets: Socket[] = [];
  const f = await fakeRedis(t, (s, d) => {
    // answer the handshake (CLIENT SETNAME), never a script call
    if (d.includes('SETNAME')) s.write('+OK\r\n');
  });
  f.server.on('connection', (s) => {
    connections++;
    sockets.push(s);
  });
  t.teardown(() => sockets.forEach((s) => s.destroy()));
  const line = new ScriptLine({ host: '127.0.0.1', port: f.port }, { timeoutMs: 200 });
  t.teardown(() => line.close());
  line.start();
  await ready(line);
  const [e] = await call(line, SHAPES, ['k'], [1, 'a']);
  t.match(e?.message, /^Command timed out/);
  t.ok(isRedisUnavailable(e), 'a 503, as ioredis\'s timeout');
  await waitFor('reconnected', () => connections >= 2, 5000, 10);
});

t.test('bytes that are not RESP: the connection is dropped, its calls fail', async (t) => {
  const f = await fakeRedis(t, (s, d) => {
    if (d.includes('SETNAME')) s.write('+OK\r\n');
    else s.write('?what\r\n');
  });
  const line = new ScriptLine({ host: '127.0.0.1', port: f.port });
  t.teardown(() => line.close());
  line.start();
  await ready(line);
  const [e] = await call(line, SHAPES, ['k'], [1, 'a']);
  t.ok(e && isRedisUnavailable(e), `failed as an outage: ${e?.message}`);
});

t.test('a callback that throws: reported, and the other calls are answered', async (t) => {
  const r = await startRedis();
  t.teardown(() => r.kill());
  const errors: unknown[] = [];
  const line = new ScriptLine({ host: '127.0.0.1', port: r.port }, { onError: (e) => errors.push(e) });
  t.teardown(() => line.close());
  line.start();
  await ready(line);
  await call(line, SHAPES, ['k'], [0, 'a']);
  line.evalsha(SHAPES.sha, SHAPES.lua, 1, ['k', 1, 'a'], () => {
    throw new Error('boom');
  });
  const [e, v] = await call(line, SHAPES, ['k'], [2, 'b']);
  t.same([e, (v as unknown[])[0]], [undefined, 2]);
  t.equal(errors.length, 1);
  t.ok(line.isReady, 'still connected');
});

t.test('close(): calls in flight are answered first, then no more calls', async (t) => {
  const r = await startRedis();
  t.teardown(() => r.kill());
  const line = new ScriptLine({ host: '127.0.0.1', port: r.port });
  line.start();
  await ready(line);
  await call(line, SHAPES, ['k'], [0, 'a']);
  const inflight = Array.from({ length: 20 }, (_, i) => call(line, SHAPES, ['k'], [i, 'a']));
  line.close();
  const out = await Promise.all(inflight);
  t.same(out.map(([e, v]) => [e, (v as unknown[])[0]]), out.map((_, i) => [undefined, i]), 'every call in flight answered');
  t.notOk(line.isReady);
  await new Promise((ok) => setTimeout(ok, 300));
  t.notOk(line.isReady, 'does not reconnect');
});

t.test('the heartbeat batch on the line: the same answers as through ioredis, and the calls went on the line', async (t) => {
  const redis = suiteRedis(t, { REDIS_CLUSTER_NODES: '' });
  const line = scriptLineFor(redis)!;
  t.teardown(() => line.close());
  line.start();
  await ready(line);
  const k = new Keys(`sline${process.pid}:`);
  const now = 1_764_000_000_000;
  const viaLine = new HeartbeatBatch(redis, k, () => now, line);
  const viaIo = new HeartbeatBatch(redis, k, () => now);
  const hash = (id: string) => createHash('sha256').update(id).digest('hex');
  const ids = Array.from({ length: 60 }, (_, i) => `sl${i}`);
  try {
    for (const id of ids) await redis.hset(k.leases(shardOf(id)), id, `3|production|${hash(id)}|30|p|0|`);
    const turn = (b: HeartbeatBatch) =>
      Promise.all(ids.map((id, i) => new Promise<number>((ok, no) => b.beat('production', id, i % 4 === 3 ? 'ee'.repeat(32) : hash(id), i % 5 === 4 ? 'c' : 'p', i % 7 === 6, (r, err) => (err === undefined ? ok(r) : no(err))))));
    const a = await turn(viaLine);
    const b = await turn(viaIo);
    t.same(a, b, 'each heartbeat answered as the ioredis path answers it');
    t.ok(a.includes(-2) && a.includes(1) && a.includes(0), 'renewals, changes and refusals among them');
    t.equal(viaLine.stats.lineCalls, viaLine.stats.calls, 'every call of the batch went on the line');
    t.ok(viaLine.stats.calls >= 1);
    t.equal(viaIo.stats.lineCalls, 0);
    // the line down: the batch's calls go through ioredis, and are answered
    line.close();
    const c = await turn(viaLine);
    t.same(c, b, 'answered through ioredis while the line is closed');
    t.equal(viaLine.stats.lineCalls, 1, 'no call on the closed line');
  } finally {
    const ks = await redis.keys(`sline${process.pid}:*`);
    if (ks.length) await redis.del(...ks);
  }
});

t.test('a poll counts the requests whose records ride in a heartbeat call still on the line (it waits for that call)', async (t) => {
  const redis = suiteRedis(t, { REDIS_CLUSTER_NODES: '' });
  // the line reaches Redis through a proxy that can hold its bytes; ioredis goes direct
  const proxy = await startProxy(Number(new URL(loadConfig().redisUrl).port || 6379));
  t.teardown(() => proxy.close());
  const line = new ScriptLine({ host: '127.0.0.1', port: proxy.port });
  t.teardown(() => line.close());
  line.start();
  await ready(line);
  const k = new Keys(`slpoll${process.pid}:`);
  const uuid = '0f6c1a52-1b7e-4a61-9a0f-3f2b1c0d9eaa';
  const now = Date.now();
  const batch = new HeartbeatBatch(redis, k, () => now, line);
  const records = new PendingRecords(redis, k, 0, () => batch.carries());
  batch.carry(records);
  try {
    await writeSandboxMeta(redis, k, { uuid, name: 'poll', tier: 'free', version: '1' } as never, 60, '');
    const id = 'slp1';
    const hash = createHash('sha256').update(id).digest('hex');
    await redis.hset(k.leases(shardOf(id)), id, `1|${uuid}|${hash}|30|p|0|`);
    t.equal((await pollData(redis, k, uuid, 12, records))?.total, 0, 'nothing counted yet');
    await proxy.set('blackhole');
    // one turn: three requests answered from a lease, and a heartbeat whose call carries their records
    for (let i = 0; i < 3; i++) records.record(uuid, 0);
    const beat = new Promise<number>((ok, no) => batch.beat(uuid, id, hash, 'p', false, (r, err) => (err === undefined ? ok(r) : no(err))));
    await new Promise((ok) => setImmediate(ok));
    await new Promise((ok) => setImmediate(ok));
    t.equal(batch.stats.lineCalls, 1, 'the call went on the line, with the records');
    t.equal(batch.stats.records, 1);
    let polled: number | undefined;
    const poll = pollData(redis, k, uuid, 12, records).then((p) => (polled = p?.total));
    await new Promise((ok) => setTimeout(ok, 200));
    t.equal(polled, undefined, 'the poll waits while the call carrying the records is held');
    await proxy.set('pass');
    t.equal(await beat, 0, 'the heartbeat renewed');
    await poll;
    t.equal(polled, 3, 'the poll counts the three requests');
  } finally {
    const ks = await redis.keys(`slpoll${process.pid}:*`);
    if (ks.length) await redis.del(...ks);
  }
});
