// The cold-path rows of issue 13, measured on their own: a throw-away database and Redis key
// prefix (nothing shared with `make bench` or another run), N production services, the real
// server (WORKERS=1, pinned like run.ts pins it) and the ceiling serving the warm row's bytes,
// each loaded by autocannon from the other core. Prints a markdown table for bench/README.md.
// Usage: taskset -c 1 node dist/bench/cold.js [--generator autocannon|wrk] [--rows a1,k1,...] [--cpu-prof]
//        [--existing] [services=20000] [seconds=5] [connections=100]
// (--existing: no throw-away data; the registry DATABASE_URL and REDIS_KEY_PREFIX name, as
// `registry import` left it (the 10M row), its rows' filters its most common capability,
// property and device class, and the server's RSS is read after the rows)
// (--rows: only those rows, and the ceiling; --cpu-prof: the server writes a V8 CPU profile
// to bench/results/prof/ when it stops; --warmed: the rows begin once the server's near cache
// warmer has stopped reading documents, and the time that took is printed)
// (the load generator runs in this process, or as its child with wrk: pin it to the core the
// server is not on)
import { randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { ROOT } from '../src/hot/paths.js';
import { loadConfig } from '../src/hot/config.js';
import { Keys } from '../src/hot/domain/keys.js';
import { createRedis } from '../src/hot/redis/client.js';
import { createPool } from '../src/hot/pg/pool.js';
import { migrate } from '../src/hot/migrate.js';
import { rebuildIndex } from '../src/hot/reindex/rebuild.js';
import { load } from './cannon.js';
import type { Generator, LoadOptions } from './load-types.js';
import { HAS_WRK } from './wrk.js';
import { rssKb } from './proc-stat.js';
import { share, snapshot } from './cpu.js';
import { databaseUrl, dropDatabase, recreateDatabase } from './load.js';
import { freePort, get, NPROC, pinning, spawnNode, waitFor200, type Child } from './procs.js';
import { dropRedisPrefix } from '../test/helpers/test-data.js';
import { parseProm, sample as prom } from '../test/helpers/metrics-util.js';
import { sleep } from '../test/helpers/wait.js';

const argv = process.argv.slice(2);
const gi = argv.indexOf('--generator');
const GENERATOR: Generator = gi < 0 ? 'autocannon' : (argv.splice(gi, 2)[1] as Generator);
if (GENERATOR !== 'autocannon' && GENERATOR !== 'wrk') throw new Error('--generator autocannon|wrk');
if (GENERATOR === 'wrk' && !HAS_WRK) throw new Error('wrk is not installed (Debian: apt-get install wrk)');
const ri = argv.indexOf('--rows');
const ROWS = ri < 0 ? null : new Set(argv.splice(ri, 2)[1]!.split(','));
const pi = argv.indexOf('--cpu-prof');
const PROF = pi >= 0 && argv.splice(pi, 1).length > 0;
const ei = argv.indexOf('--existing');
const EXISTING = ei >= 0 && argv.splice(ei, 1).length > 0;
const wi = argv.indexOf('--warmed');
const WARMED = wi >= 0 && argv.splice(wi, 1).length > 0;
const [N = 20_000, SECONDS = 5, CONNECTIONS = 100] = argv.map(Number);
const UWS_OWN = new Set(['date', 'uwebsockets', 'content-length', 'connection', 'keep-alive', 'transfer-encoding']);
const log = (m: string) => console.error(m);

interface Row {
  id: string;
  title: string;
  rps: number;
  p99: number;
  other: number;
  usPerReq: number | null;
  loadgenPct: number;
  /** wrk's sleeps per answer (LoadResult.loadgenSleepsPerReq) */
  sleeps?: number;
}

/** Service g: capabilities cap<g % 7> and `all`, property zone:z<g % 3>, an IoT profile when g % 5 = 0. */
async function seed(url: string, n: number): Promise<void> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  const id = `'c' || lpad(g::text, 8, '0')`;
  const each = (cols: string, select: string, where = '') => `INSERT INTO ${cols} SELECT ${select} FROM generate_series(1, $1::int) g ${where}`;
  await c.query('BEGIN');
  await c.query(each('services (id, ns, endpoint)', `${id}, 'production', 'https://' || ${id} || '.example.com/'`), [n]);
  await c.query(each('service_capabilities (service_id, capability, ord)', `${id}, 'cap' || (g % 7), 1`), [n]);
  await c.query(each('service_capabilities (service_id, capability, ord)', `${id}, 'all', 2`), [n]);
  await c.query(each('service_properties (service_id, key, value)', `${id}, 'zone', 'z' || (g % 3)`), [n]);
  await c.query(each('iot_profiles (service_id, device_classes, protocols)', `${id}, ARRAY['meter'], ARRAY['mqtt', 'coap']`, 'WHERE g % 5 = 0'), [n]);
  await c.query('COMMIT');
  await c.end();
}

async function measure(id: string, title: string, o: LoadOptions, pid: number | undefined): Promise<Row | null> {
  if (ROWS && id !== 'g' && !ROWS.has(id)) return null;
  await load({ ...o, durationS: 1 }); // warm-up
  const a = snapshot(pid);
  const r = await load(o);
  const b = snapshot(pid);
  const s = share(a, b, NPROC);
  const answered = r.rps * r.durationS;
  const row = { id, title, rps: r.rps, p99: r.p99, other: r.responses - r.ok, usPerReq: s && answered ? ((s.serverPct / 100) * r.durationS * 1e6) / answered : null, loadgenPct: r.loadgenCpuPct, sleeps: r.loadgenSleepsPerReq };
  log(`${id}: ${row.rps.toFixed(0)} req/s, p99 ${row.p99.toFixed(2)} ms, other statuses ${row.other}, server ${row.usPerReq?.toFixed(1) ?? '?'} µs/req`);
  return row;
}

/** The filters of the rows: the seeded data's, or (--existing) the most common of the registry's. */
interface Filters {
  /** the largest set (k1) */
  big: string;
  /** two sets (k2) and a warm one (a1) */
  two: string;
  warm: string;
  /** three sets and iotReady (c2) */
  four: string;
  device: string;
  /** the highest seq: random cursors are drawn below it */
  maxSeq: number;
}

const SEEDED = (n: number): Filters => ({ big: 'capability=all', two: 'capability=cap1&property=zone:z1', warm: 'capability=cap1', four: 'capability=all&capability=cap1&iotReady=true&property=zone:z2', device: 'deviceClass=meter', maxSeq: n });

/** The most common capabilities, property and device class of an existing registry (a 1 % sample). */
async function existingFilters(url: string): Promise<Filters> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    const top = async (sql: string) => (await c.query<{ v: string }>(sql)).rows.map((r) => r.v);
    const caps = await top("SELECT capability AS v FROM service_capabilities TABLESAMPLE SYSTEM (1) GROUP BY 1 ORDER BY count(*) DESC LIMIT 2");
    const [prop] = await top("SELECT key || ':' || value AS v FROM service_properties TABLESAMPLE SYSTEM (1) GROUP BY 1 ORDER BY count(*) DESC LIMIT 1");
    const [dev] = await top('SELECT d AS v FROM iot_profiles TABLESAMPLE SYSTEM (1), unnest(device_classes) d GROUP BY 1 ORDER BY count(*) DESC LIMIT 1');
    const maxSeq = Number((await c.query<{ m: string }>("SELECT max(seq)::text AS m FROM services WHERE ns = 'production'")).rows[0]!.m);
    if (caps.length < 2 || !prop || !dev) throw new Error('--existing: the registry lacks two capabilities, a property or a device class');
    return { big: `capability=${caps[0]}`, two: `capability=${caps[0]}&property=${prop}`, warm: `capability=${caps[1]}`, four: `capability=${caps[0]}&capability=${caps[1]}&iotReady=true&property=${prop}`, device: `deviceClass=${dev}`, maxSeq };
  } finally {
    await c.end();
  }
}

/** Wait until the near cache's warmer has read no document for 3 s; log how long it took and what the cache holds. */
async function warmed(metrics: string, started: number): Promise<void> {
  const sample = async (name: string) => prom(parseProm(await (await fetch(metrics)).text()), name, {}) ?? NaN;
  let last = -1;
  let since = Date.now();
  for (;;) {
    const n = await sample('registry_near_cache_warmed_documents_total');
    if (n !== last) [last, since] = [n, Date.now()];
    else if (Date.now() - since >= 3000) break;
    await sleep(500);
  }
  const mb = (await sample('registry_near_cache_bytes')) / 2 ** 20;
  log(`warmed: ${last} documents, near cache ${mb.toFixed(0)} MB, ${((since - started) / 1000).toFixed(1)} s after the start`);
}

async function main(): Promise<void> {
  const base = loadConfig();
  const db = EXISTING ? new URL(base.databaseUrl).pathname.slice(1) : 'registry_cold_' + randomBytes(4).toString('hex');
  const prefix = EXISTING ? base.redisKeyPrefix : `cold${randomBytes(3).toString('hex')}:`;
  const url = EXISTING ? base.databaseUrl : databaseUrl(base.databaseUrl, db);
  log(`database ${db}, Redis prefix ${prefix}, ${EXISTING ? 'existing' : N} services, load average ${loadavg().map((x) => x.toFixed(1)).join(' ')}`);
  if (!EXISTING) await recreateDatabase(base.databaseUrl, db);
  const children: Child[] = [];
  const redis = createRedis({ ...base, redisKeyPrefix: prefix });
  let f = SEEDED(N);
  try {
    if (EXISTING) f = await existingFilters(url);
    else {
      const pool = createPool(url, 2);
      await migrate(pool);
      await seed(url, N);
      const r = await rebuildIndex(pool, redis, new Keys(prefix), base.tiers);
      await r?.retired;
      await pool.end();
    }
    log(`rows over ${JSON.stringify(f)}`);
    const pin = pinning(1, true);
    const port = await freePort();
    const mport = await freePort();
    const started = Date.now();
    const server = spawnNode(join(ROOT, 'dist/src/hot/main.js'), [], { DATABASE_URL: url, REDIS_KEY_PREFIX: prefix, PORT: String(port), METRICS_PORT: String(mport), HOST: '127.0.0.1', WORKERS: '1', NODE_ENV: 'production', ADMIN_API_KEY: randomBytes(16).toString('hex'), LOG_LEVEL: 'warn' }, pin.server, join(ROOT, 'bench/results/cold-server.log'), PROF ? ['--cpu-prof', `--cpu-prof-dir=${join(ROOT, 'bench/results/prof')}`] : []);
    children.push(server);
    const origin = `http://127.0.0.1:${port}`;
    await waitFor200(origin + '/readyz', server, 60_000);
    log(`ready ${((Date.now() - started) / 1000).toFixed(1)} s after the start`);
    if (WARMED) await warmed(`http://127.0.0.1:${mport}/metrics`, started);
    const pid = server.proc.pid;
    let seqs = 0;
    const cursor = (q: string): Partial<LoadOptions> => ({
      nextPath: () => `/services?after=${1 + Math.floor(((seqs = (seqs * 1103515245 + 12345) % 2 ** 31) / 2 ** 31) * f.maxSeq)}&${q}`,
      cursor: { path: `/services?${q}`, max: f.maxSeq },
    });
    const opts = (path: string, extra: Partial<LoadOptions> = {}): LoadOptions => ({ url: origin + path, connections: CONNECTIONS, durationS: SECONDS, generator: GENERATOR, ...extra });
    const rows: (Row | null)[] = [];
    const warm = `/services?${f.warm}`;
    rows.push(await measure('a1', 'warm: one capability (repeated)', opts(warm), pid));
    rows.push(await measure('k1', 'cold: one set of N, random cursor', opts('/', cursor(f.big)), pid));
    rows.push(await measure('k2', 'cold: two sets, random cursor', opts('/', cursor(f.two)), pid));
    rows.push(await measure('c2', 'cold: 3 sets + iotReady, random cursor', opts('/', cursor(f.four)), pid));
    const sb = (await (await fetch(origin + '/sandboxes', { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"name":"cold bench"}' })).json()) as { apiKey: string };
    const keyed = { authorization: `Bearer ${sb.apiKey}` };
    for (let i = 0; i < 200 && (await get(origin + warm, keyed)).status !== 429; i++);
    rows.push(await measure('o', 'over-limit key: every answer 429', opts(warm, { headers: keyed, expect: 429 }), pid));
    const dev = `/devices?${f.device}`;
    const etag = (await get(origin + dev)).headers.find(([k]) => k.toLowerCase() === 'etag')?.[1] ?? '';
    rows.push(await measure('p', 'poller: If-None-Match matches (304)', opts(dev, { headers: { 'if-none-match': etag }, expect: 304 }), pid));
    // the ceiling: the warm row's bytes from a bare uWS server
    const w = await get(origin + warm);
    const file = join(ROOT, 'bench/results/cold-ceiling.json');
    writeFileSync(file, JSON.stringify({ status: `${w.status} ${w.statusText}`, headers: w.headers.filter(([k]) => !UWS_OWN.has(k.toLowerCase())), bodyBase64: w.body.toString('base64') }));
    const cport = await freePort();
    const ceil = spawnNode(join(ROOT, 'dist/bench/ceiling.js'), [file, String(cport), '1'], {}, pin.server, join(ROOT, 'bench/results/cold-ceiling.log'));
    children.push(ceil);
    await waitFor200(`http://127.0.0.1:${cport}/`, ceil, 30_000);
    const c = (await measure('g', 'CEILING (uWS, the warm row\'s bytes)', { url: `http://127.0.0.1:${cport}/`, connections: CONNECTIONS, durationS: SECONDS, generator: GENERATOR }, ceil.proc.pid))!;
    const rss = pid ? rssKb(pid) / 1024 : NaN;
    console.log(`${EXISTING ? `${db} (max seq ${f.maxSeq})` : `${N} services`}, server RSS after the rows ${rss.toFixed(0)} MB, ${SECONDS} s per row after 1 s of warm-up, ${CONNECTIONS} connections, ${GENERATOR === 'wrk' ? 'wrk (-t1, Lua script per row)' : 'autocannon'}; ${pin.note}; load average at the end ${loadavg().map((x) => x.toFixed(1)).join(' ')}\n`);
    // wrk's sleeps per answer: ~1 when every answer found it idle (the kernel woke it for
    // each, a cost charged to the server's send), ~0 at the ceiling, which keeps it busy
    const sleeps = GENERATOR === 'wrk';
    console.log(`| row | what | req/s | p99 ms | other statuses | × ceiling | server µs/req | cost ratio | ${GENERATOR} CPU |${sleeps ? ' wrk sleeps/req |' : ''}`);
    console.log(`|---|---|--:|--:|--:|--:|--:|--:|--:|${sleeps ? '--:|' : ''}`);
    for (const r of [...rows, c]) {
      if (!r) continue;
      const cost = r.usPerReq && c.usPerReq ? (c.usPerReq / r.usPerReq).toFixed(2) + '×' : '–';
      console.log(`| ${r.id} | ${r.title} | ${r.rps.toFixed(0)} | ${r.p99.toFixed(2)} | ${r.other} | ${(r.rps / c.rps).toFixed(2)}× | ${r.usPerReq?.toFixed(1) ?? '–'} | ${cost} | ${r.loadgenPct.toFixed(0)} % |${sleeps ? ` ${r.sleeps?.toFixed(2) ?? '–'} |` : ''}`);
    }
  } finally {
    for (const ch of children) await ch.stop();
    redis.disconnect();
    if (!EXISTING) {
      await dropRedisPrefix(base.redisUrl, prefix);
      await dropDatabase(base.databaseUrl, db);
    }
  }
}

main().catch((e: unknown) => {
  console.error(e);
  process.exit(1);
});
