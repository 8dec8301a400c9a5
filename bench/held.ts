// Held requests (issue 43; bench/README.md, "Held requests"): a serving thread in a process of
// its own (held-server.ts) on a throw-away database and Redis prefix, N production services
// over Q capabilities, and H requests held on it (If-None-Match + Prefer: wait) from many
// loopback addresses, H / Q on each capability's search. Measures its memory per held request
// (after a full garbage collection, at five counts: the slope), per idle connection (another
// fresh process), its CPU while they wait, and the wake latency from a write to the 200s of
// the requests held on its query: one query with H / Q waiting on the writing node, H / Q
// held on a second node, and a storm of one write per query (every held request woken).
// Usage: node dist/bench/held.js [held=15000] [queries=150] [services=1500] [cpu seconds=10]
import { randomBytes } from 'node:crypto';
import { connect, type Socket } from 'node:net';
import { loadavg } from 'node:os';
import pg from 'pg';
import { loadConfig } from '../src/hot/config.js';
import { Keys } from '../src/hot/domain/keys.js';
import { createRedis } from '../src/hot/redis/client.js';
import { createPool } from '../src/hot/pg/pool.js';
import { migrate } from '../src/hot/migrate.js';
import { rebuildIndex } from '../src/hot/reindex/rebuild.js';
import { databaseUrl, dropDatabase, recreateDatabase } from './load.js';
import { pinning } from './procs.js';
import { jiffies, TICK } from './proc-stat.js';
import { dropRedisPrefix } from '../test/helpers/test-data.js';
import type { Measured } from './held-server.js';
import { etagOf, gauge, holdMany, leastSquares, pct, settled, sleep, startNode, until, write, type Holder, type Node } from './held-client.js';

const [H = 15_000, Q = 150, N = 1500, CPU_S = 10] = process.argv.slice(2).map(Number);
const log = (m: string) => console.error(m);

async function seed(url: string): Promise<void> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  const id = `'h' || lpad(g::text, 8, '0')`;
  await c.query(`INSERT INTO services (id, ns, endpoint) SELECT ${id}, 'production', 'https://' || ${id} || '.example.com/' FROM generate_series(1, $1::int) g`, [N]);
  await c.query(`INSERT INTO service_capabilities (service_id, capability, ord) SELECT ${id}, 'held' || (g % $2::int), 1 FROM generate_series(1, $1::int) g`, [N, Q]);
  await c.end();
}

/** `n` idle connections to `node` (connected, no request), from addresses of their own. */
async function idleConnections(node: Node, n: number): Promise<Socket[]> {
  const out: Socket[] = [];
  for (let i = 0; i < n; i += 200) {
    const batch = Array.from({ length: Math.min(200, n - i) }, (_, k) => new Promise<Socket>((ok, fail) => {
      const sock = connect({ port: node.port, host: '127.0.0.1', localAddress: `127.1.${1 + Math.floor((i + k) / 150 / 250)}.${1 + (Math.floor((i + k) / 150) % 250)}` }, () => ok(sock));
      sock.once('error', fail);
    }));
    out.push(...(await Promise.all(batch)));
  }
  return out;
}

/** % of a core `pid` used over `ms`. */
async function cpuOver(pid: number, ms: number): Promise<number> {
  const j = jiffies(pid);
  const t = performance.now();
  await sleep(ms);
  return ((jiffies(pid) - j) / TICK / ((performance.now() - t) / 1000)) * 100;
}

async function main(): Promise<void> {
  const base = loadConfig();
  const db = 'registry_held_' + randomBytes(4).toString('hex');
  const prefix = `held${randomBytes(3).toString('hex')}:`;
  const url = databaseUrl(base.databaseUrl, db);
  log(`database ${db}, Redis prefix ${prefix}: ${N} services over ${Q} capabilities, ${H} held requests; load average ${loadavg().map((x) => x.toFixed(1)).join(' ')}`);
  await recreateDatabase(base.databaseUrl, db);
  const redis = createRedis({ ...base, redisKeyPrefix: prefix });
  const nodes: Node[] = [];
  try {
    const pool = createPool(url, 2);
    await migrate(pool);
    await seed(url);
    await (await rebuildIndex(pool, redis, new Keys(prefix), base.tiers))?.retired;
    await pool.end();
    const pin = pinning(1, true);
    const a = await startNode(url, prefix, pin.server, 'a');
    const b = await startNode(url, prefix, null, 'b');
    nodes.push(a, b);

    // the connection alone, on B (a fresh process): idle keep-alive connections, no request
    const idleBase = await settled(b);
    const idle = await idleConnections(b, Math.floor(H / 3));
    const idleWith = await settled(b);
    for (const sock of idle) sock.destroy();
    const idleCpu = await cpuOver(b.proc.pid!, CPU_S * 1000);

    // held on A, in five steps, measured after each: the slope of a least-squares line leaves
    // out what the first requests grow once (buffers, the heap's spaces) whatever the count
    for (let q = 0; q < Q; q++) await etagOf(a.port, q); // every query answered once, as a poller leaves it
    const points: [number, Measured][] = [[0, await settled(a)]];
    const qs = Array.from({ length: H }, (_, i) => i % Q);
    const held: Holder[] = [];
    const t0 = performance.now();
    for (let k = 1; k <= 5; k++) {
      const upTo = Math.round((H * k) / 5);
      held.push(...(await holdMany(a, qs.slice(held.length, upTo), held.length, 300)));
      await until(`${upTo} held`, async () => (await gauge(a.metrics)) >= upTo);
      points.push([upTo, await settled(a)]);
    }
    log(`${H} held in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
    const heldCpu = await cpuOver(a.proc.pid!, CPU_S * 1000);

    // wakes: one query's H / Q on A, woken by a write on A
    const one = held.filter((h) => h.q === 0);
    const w1 = await write(a.port, 0);
    const oneDone = await Promise.all(one.map((h) => h.done));
    const rest = held.filter((h) => h.q !== 0);
    held.length = 0;
    held.push(...rest, ...(await holdMany(a, one.map(() => 0), H, 300)));
    await until('held again', async () => (await gauge(a.metrics)) >= H);
    // H / Q held on B, woken by a write on A
    const onB = await holdMany(b, Array.from({ length: H / Q }, () => 1), 2 * H, 300);
    await until('held on B', async () => (await gauge(b.metrics)) >= onB.length);
    const wB = await write(a.port, 1);
    const bDone = await Promise.all(onB.map((h) => h.done));
    // the storm: one write per query at once, every held request on A woken
    const stormCpu0 = jiffies(a.proc.pid!);
    const writes = await Promise.all(Array.from({ length: Q }, (_, q) => write(a.port, q)));
    const storm = await Promise.all(held.map(async (h) => ({ q: h.q, ...(await h.done) })));
    const stormCpu = (jiffies(a.proc.pid!) - stormCpu0) / TICK;

    const slopeOf = (k: keyof Measured) => leastSquares(points.slice(1).map(([n, m]) => [n, m[k]]));
    const rss = slopeOf('rss');
    const f = (x: number) => x.toFixed(1);
    const lat = (xs: number[]) => `${f(pct(xs, 50))} / ${f(pct(xs, 99))}`;
    const all200 = (xs: { status: number }[]) => (xs.every((d) => d.status === 200) ? '' : ' (not all 200!)');
    console.log(`${H} held requests on ${Q} queries (${H / Q} each), ${N} services, one serving thread; ${pin.note}; load average at the end ${loadavg().map((x) => x.toFixed(1)).join(' ')}\n`);
    console.log('| measure | value |');
    console.log('|---|--:|');
    console.log(`| RSS after a full GC with ${points.map(([n]) => n).join(' / ')} held | ${points.map(([, m]) => (m.rss / 2 ** 20).toFixed(1)).join(' / ')} MiB |`);
    console.log(`| **RSS per held request** (slope, ${points[1]![0]} to ${H}) | **${rss.toFixed(0)} B** |`);
    console.log(`| of which JS heap / external (slope) | ${slopeOf('heapUsed').toFixed(0)} / ${slopeOf('external').toFixed(0)} B |`);
    console.log(`| RSS per idle keep-alive connection (${idle.length}, no request, another process) | ${((idleWith.rss - idleBase.rss) / idle.length).toFixed(0)} B |`);
    console.log(`| server CPU while ${H} wait / with none held (${CPU_S} s each) | ${heldCpu.toFixed(2)} / ${idleCpu.toFixed(2)} % of a core |`);
    console.log(`| wake, writing node, ${one.length} held on one query: from the write's 2xx (from its request), p50 / p99 | ${lat(oneDone.map((d) => d.at - w1.at))} ms (${lat(oneDone.map((d) => d.at - w1.sent))})${all200(oneDone)} |`);
    console.log(`| wake, another node, ${onB.length} held: from the write's 2xx on the first (from its request), p50 / p99 | ${lat(bDone.map((d) => d.at - wB.at))} ms (${lat(bDone.map((d) => d.at - wB.sent))})${all200(bDone)} |`);
    console.log(`| wake, storm: ${Q} writes at once, ${storm.length} held, from each query's write request, p50 / p99 | ${lat(storm.map((d) => d.at - writes[d.q]!.sent))} ms${all200(storm)} |`);
    console.log(`| server CPU of the storm (${Q} writes, ${storm.length} woken) | ${stormCpu.toFixed(2)} s: ${((stormCpu * 1e6) / storm.length).toFixed(1)} µs a woken request, writes included |`);
    console.log(`| 1,000,000 held at the slope's cost | ${((rss * 1e6) / 2 ** 30).toFixed(2)} GiB |`);
  } finally {
    for (const n of nodes.reverse()) await n.stop();
    redis.disconnect();
    await dropRedisPrefix(base.redisUrl, prefix);
    await dropDatabase(base.databaseUrl, db);
  }
}

main().catch((e: unknown) => {
  console.error(e);
  process.exit(1);
});
