// Liveness bench (issue 23): heartbeats against a bare uWS server answering 204, and the
// expiry lag of N leased services that stop heartbeating, on real Redis and PostgreSQL.
//
//   node --expose-gc dist/bench/liveness.js [--services N] [--ttl S] [--duration S] [--connections C]
//        [--part all|heartbeats|expiry] [--generator autocannon|wrk] [--writers W] [--warmup S] [--rounds R]
//
// Heartbeats: one leased service, autocannon or wrk (a child process: its own core) sends PUT
// /services/{id}/heartbeat with its token for --duration seconds, in --rounds rounds (6) of
// production, the ceiling, sandbox, the floor and GET /livez, after --warmup seconds (2) of
// load on each, not counted. A ratio is taken within each round (this run over the round's
// ceiling run) and the median of the rounds is the row's figure; each side's best run over
// the other's is printed too. The floor is a bare uWS app answering 204 once one Redis PING
// per event-loop turn came back: what any heartbeat confirmed by Redis could do here. Each run prints where the CPU went (server,
// Redis, the generator: a generator near a full core is the bound) and the server's µs of
// CPU per request, the figure to compare when the generator saturates before the server. Expiry: N
// services registered in one statement with ttl S, leases seeded by the rebuild (a fresh
// ttl each), then one sweeper (LEASE_SWEEP_MS 250) until all are critical; the lag of each
// expiry is the time it became visible in the index (documents, healthy=true) minus its
// deadline, and apart from it the time its durable write was committed and applied. W loops
// register services over HTTP meanwhile (and for up to 3 s before the first deadline, the
// baseline): their latency says whether the mass expiry starves ordinary writes. Memory: Redis bytes of the lease shards
// (MEMORY USAGE) per leased service, and this process's RSS before and after seeding.
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import uWS from 'uWebSockets.js';
import { createSandbox, registerProduction, startTestServer } from '../test/helpers/server.js';
import { LEASE_SHARDS } from '../src/hot/domain/keys.js';
import { rebuildIndex } from '../src/hot/index/rebuild.js';
import { backfillIndexText } from '../src/hot/store/index-text.js';
import { LeaseSweeper } from '../src/hot/liveness/sweeper.js';
import { shardOf } from '../src/hot/liveness/redis-lease.js';
import { floorHandler } from './floor.js';
import { numArg as arg, strArg as sarg } from './args.js';

const run = promisify(execFile);
const N = arg('services', 100_000);
const TTL = arg('ttl', 10);
const DUR = arg('duration', 5);
const CONN = arg('connections', 50);
/** seconds of load on each target before the measured rounds (not counted) */
const WARMUP = arg('warmup', 2);
/** heartbeat rounds: each runs production, the ceiling, sandbox, the Redis floor and GET /livez once */
const ROUNDS = arg('rounds', 6);
/**
 * --fleet N: heartbeats of N leased services in turn (one request each, round robin) instead
 * of one service's: a fleet's heartbeats fall in all 16 lease shards, so a turn's batch is up
 * to 16 script calls. The ceiling and the floor get the same request stream (paths, headers).
 */
const FLEET = arg('fleet', 1);
/** the ttl (s) of every bench lease; a fleet deadline past registration + this was renewed */
const LEASE_TTL = 60;
const PART = sarg('part', 'all');
/** concurrent registration loops during the expiry (and for a while before it, as the baseline) */
const WRITERS = arg('writers', 4);
/** --profile: CPU seconds of this process, Redis and PostgreSQL's top statements (pg_stat_statements, when preloaded) over the expiry */
const PROFILE = process.argv.includes('--profile');
const GEN = sarg('generator', 'autocannon');

/** One load run: requests a second, and the CPU seconds the load generator used (wrk only). */
interface Run {
  rps: number;
  genCpu: number;
}

/**
 * wrk (C, one thread: does not saturate before a one-core uWS server) with the same request.
 * Run under bash so that its `times` builtin reports wrk's CPU (user + system of the child):
 * a generator near a full core is the bound, not the server.
 */
/** the fleet's heartbeats (--fleet): [path, token] of each service of one namespace */
let fleet: { prefix: string; beats: [string, string][] }[] = [];
/** when the fleet's registrations were done: a deadline later than this + ttl was renewed by a heartbeat */
let fleetRegistered = 0;

async function wrk(url: string, token: string, method: string, dur = DUR): Promise<Run> {
  const { mkdtempSync, writeFileSync, rmSync } = await import('node:fs');
  const dir = mkdtempSync('/tmp/wrk-lv-');
  const file = `${dir}/hb.lua`;
  // a URL that ends in a fleet service's heartbeat path: that namespace's fleet, in turn
  const f = method === 'PUT' ? fleet.find((x) => url.includes(x.prefix)) : undefined;
  if (f) {
    const list = (i: 0 | 1) => f.beats.map((b) => JSON.stringify(b[i])).join(',');
    writeFileSync(
      file,
      `local paths = {${list(0)}}\nlocal toks = {${list(1)}}\nlocal i = 0\n` +
        `request = function()\n  i = i % #paths + 1\n  return wrk.format("PUT", paths[i], { ["authorization"] = "Bearer " .. toks[i] })\nend\n`,
    );
  } else writeFileSync(file, `wrk.method = "${method}"\nwrk.headers["authorization"] = "Bearer ${token}"\n`);
  try {
    const { stdout } = await run('bash', ['-c', 'wrk "$@" && times', 'wrk', '-t1', `-c${CONN}`, `-d${dur}s`, '-s', file, url], { maxBuffer: 1 << 26 });
    const bad = /Non-2xx or 3xx responses: (\d+)/.exec(stdout);
    const errs = /Socket errors: (.*)/.exec(stdout);
    if (bad || errs) throw new Error(`${url}: ${bad?.[0] ?? ''} ${errs?.[0] ?? ''}`);
    // `times`: the shell's own user/system line, then its children's ("0m1.234s 0m0.567s")
    const t = [...stdout.matchAll(/(\d+)m([\d.]+)s (\d+)m([\d.]+)s/g)].at(-1);
    const genCpu = t ? Number(t[1]) * 60 + Number(t[2]) + Number(t[3]) * 60 + Number(t[4]) : NaN;
    return { rps: Number(/Requests\/sec:\s+([\d.]+)/.exec(stdout)![1]), genCpu };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

async function generate(url: string, token: string, method: string, dur = DUR): Promise<Run> {
  if (GEN === 'wrk') return wrk(url, token, method, dur);
  const { stdout } = await run('npx', ['autocannon', '-j', '-m', method, '-H', `authorization=Bearer ${token}`, '-c', String(CONN), '-d', String(dur), url], { maxBuffer: 1 << 26 });
  const r = JSON.parse(stdout) as { requests: { average: number }; non2xx: number; errors: number };
  if (r.non2xx || r.errors) throw new Error(`${url}: ${r.non2xx} non-2xx, ${r.errors} errors`);
  return { rps: r.requests.average, genCpu: NaN };
}

/** CPU seconds Redis used so far (INFO cpu: user + system of the server). */
let redisCpu: () => Promise<number> = async () => NaN;

/**
 * One load run, with where the CPU went: this process (the server under test, or the
 * ceiling app: both run on this thread, one at a time), Redis and the generator, as % of a
 * core over the run, and this process's µs of CPU per request. The lines say whether the
 * generator was the bound (near 100 %) and what the server costs per request.
 */
async function cannon(url: string, token: string, method = 'PUT', label = url): Promise<number> {
  const t0 = performance.now();
  const c0 = process.cpuUsage();
  const r0 = await redisCpu();
  const r = await generate(url, token, method);
  const c = process.cpuUsage(c0);
  const wall = (performance.now() - t0) / 1000;
  const node = (c.user + c.system) / 1e6;
  const redis = (await redisCpu()) - r0;
  const pc = (x: number) => (Number.isNaN(x) ? '?' : ((100 * x) / wall).toFixed(0) + ' %');
  console.log(`  ${label}: ${Math.round(r.rps)} req/s; CPU: server ${pc(node)} (${((1e6 * node) / (r.rps * DUR)).toFixed(1)} µs/request), Redis ${pc(redis)}, ${GEN} ${pc(r.genCpu)}`);
  return r.rps;
}

const pct = (xs: number[], p: number) => xs[Math.min(xs.length - 1, Math.floor((p / 100) * xs.length))]!;
const load = async () => (await import('node:fs/promises')).readFile('/proc/loadavg', 'utf8').then((s) => s.split(' ').slice(0, 3).join(' '));

// a tier whose limit a bench cannot reach: the sandbox row measures the rate limit's cost, not 429s
const s = await startTestServer({ hooks: { sweep: false }, env: { TIERS: 'free=60,pro=600,enterprise=6000,bench=999999999' } });
redisCpu = async () => {
  const info = await s.app.redis.info('cpu');
  return Number(/used_cpu_user:([\d.]+)/.exec(info)![1]) + Number(/used_cpu_sys:([\d.]+)/.exec(info)![1]);
};
try {
  // ---- heartbeats against the ceiling ----
  if (PART !== 'expiry') {
  const svc = (await registerProduction(s, { endpoint: 'https://bench-hb.example.com', capability: 'bench', ttl: LEASE_TTL })) as unknown as { id: string; heartbeatToken: string };
  // the sandbox row: the same heartbeat counted against its sandbox's rate limit
  const sb = await createSandbox(s, 'Bench');
  if ((await s.admin('POST', `/admin/api/sandboxes/${sb.uuid}/tier`, { tier: 'bench' })).status !== 200) throw new Error('tier');
  const sr = await s.req(`/sandbox/${sb.uuid}/services`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${sb.apiKey}` }, body: JSON.stringify({ endpoint: 'https://bench-hb-sb.example.com', capability: 'bench', ttl: LEASE_TTL }) });
  const sbSvc = (await sr.json()) as { id: string; heartbeatToken: string };
  if (FLEET > 1) {
    // N more leased services in each namespace, registered in batches of up to 1,000
    type Made = { services: { id: string; heartbeatToken: string }[] };
    const made = async (send: (body: unknown) => Promise<Response>, ns: string, heartbeatPath: (id: string) => string): Promise<[string, string][]> => {
      const out: [string, string][] = [];
      for (let i = 0; i < FLEET; i += 1000) {
        const services = Array.from({ length: Math.min(1000, FLEET - i) }, (_, j) => ({ endpoint: `https://fleet-${ns}-${i + j}.example.com`, capability: 'bench', ttl: LEASE_TTL }));
        const r = await send({ services });
        if (r.status !== 201) throw new Error(`fleet registration: ${r.status} ${await r.text()}`);
        for (const x of ((await r.json()) as Made).services) out.push([heartbeatPath(x.id), x.heartbeatToken]);
      }
      return out;
    };
    const prod = await made((body) => s.admin('POST', '/admin/api/services/batch', body), 'p', (id) => `/services/${id}/heartbeat`);
    const sandboxBatch = (body: unknown) => s.req(`/sandbox/${sb.uuid}/services/batch`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${sb.apiKey}` }, body: JSON.stringify(body) });
    const sand = await made(sandboxBatch, 's', (id) => `/sandbox/${sb.uuid}/services/${id}/heartbeat`);
    // the longer prefix first: a sandbox path also contains "/services/"
    fleet = [{ prefix: `/sandbox/${sb.uuid}/services/`, beats: sand }, { prefix: '/services/', beats: prod }];
    fleetRegistered = Date.now();
    console.log(`fleet: ${FLEET} leased services in production and ${FLEET} in the sandbox, heartbeating in turn`);
  }
  // a 204 as the server writes one: no Content-Length (RFC 9110 §8.6; http/route.ts)
  const ceiling = uWS.App().put('/*', (res) => void res.writeStatus('204 No Content').endWithoutBody()).any('/*', (res) => void res.writeStatus('404 Not Found').end());
  let listenSocket: uWS.us_listen_socket | null = null;
  const cport = await new Promise<number>((ok) => ceiling.listen('127.0.0.1', 0, (sock) => ok(uWS.us_socket_local_port((listenSocket = sock)))));
  // the floor (bench/floor.ts): the most a heartbeat confirmed by Redis could do here
  const floor = uWS.App().put('/*', floorHandler(s.app.redis));
  let floorSocket: uWS.us_listen_socket | null = null;
  const fport = await new Promise<number>((ok) => floor.listen('127.0.0.1', 0, (sock) => ok(uWS.us_socket_local_port((floorSocket = sock)))));
  const hb: number[] = [];
  const ce: number[] = [];
  const lz: number[] = [];
  const sh: number[] = [];
  const batch0 = { ...s.app.liveness.batch.stats };
  const auth0 = { ...s.app.auth.stats };
  // warm-up, not counted: the server's code is compiled by V8 under load like the ceiling's
  // (a one-line handler, warm at once); the first production round was up to 30 % slower
  for (const [url, tok, m] of [[`${s.url}/services/${svc.id}/heartbeat`, svc.heartbeatToken, 'PUT'], [`${s.url}/sandbox/${sb.uuid}/services/${sbSvc.id}/heartbeat`, sbSvc.heartbeatToken, 'PUT'], [`http://127.0.0.1:${cport}/x`, '', 'PUT'], [`http://127.0.0.1:${fport}/x`, '', 'PUT'], [`${s.url}/livez`, '', 'GET']] as const) {
    if (WARMUP > 0) await generate(url, tok, m, WARMUP);
  }
  const fl: number[] = [];
  for (let i = 0; i < ROUNDS; i++) {
    // each heartbeat run next to a ceiling run: this machine's speed drifts by up to 2x within
    // a minute (another tenant's load), so a ratio is taken within a round, not across rounds
    hb.push(await cannon(`${s.url}/services/${svc.id}/heartbeat`, svc.heartbeatToken, 'PUT', 'production heartbeat'));
    ce.push(await cannon(`http://127.0.0.1:${cport}/services/${svc.id}/heartbeat`, svc.heartbeatToken, 'PUT', 'ceiling (bare uWS 204)'));
    sh.push(await cannon(`${s.url}/sandbox/${sb.uuid}/services/${sbSvc.id}/heartbeat`, sbSvc.heartbeatToken, 'PUT', 'sandbox heartbeat'));
    fl.push(await cannon(`http://127.0.0.1:${fport}/services/${svc.id}/heartbeat`, svc.heartbeatToken, 'PUT', 'floor (bare uWS 204 after one Redis PING a turn)'));
    // the same server's cheapest route (no Redis): what the machine lets the server do at all
    lz.push(await cannon(`${s.url}/livez`, svc.heartbeatToken, 'GET', 'GET /livez'));
  }
  const med = (xs: number[]) => [...xs].sort((a, b) => a - b)[xs.length >> 1]!;
  /** per-round ratios x_i / ceiling_i: their median, and their range */
  const paired = (xs: number[]) => {
    const r = xs.map((x, i) => x / ce[i]!).sort((a, b) => a - b);
    return `median ${med(r).toFixed(2)} (rounds ${r[0]!.toFixed(2)}-${r[r.length - 1]!.toFixed(2)}; best ÷ best ${(Math.max(...xs) / Math.max(...ce)).toFixed(2)})`;
  };
  console.log(`GET /livez on the same server: ${lz.map(Math.round).join(', ')} req/s; ratio ${paired(lz)}`);
  console.log(`heartbeats (${GEN}, ${CONN} connections, ${ROUNDS} rounds of ${DUR} s): ${hb.map(Math.round).join(', ')} req/s; ceiling 204: ${ce.map(Math.round).join(', ')} req/s; ratio ${paired(hb)} (load ${await load()})`);
  console.log(`sandbox heartbeats (rate limit counted): ${sh.map(Math.round).join(', ')} req/s; ratio ${paired(sh)}`);
  console.log(`floor (any heartbeat that waits for Redis, one round trip a turn): ${fl.map(Math.round).join(', ')} req/s; ratio ${paired(fl)}`);
  if (fleet.length) {
    // the fleet's leases renewed by the runs (a deadline past registration + ttl): each service was heartbeaten
    const renewed = async (beats: [string, string][]) => {
      let n = 0;
      for (const [path] of beats) {
        const id = /\/services\/([^/]+)\/heartbeat$/.exec(path)![1]!;
        if (Number(await s.app.redis.zscore(s.app.keys.deadlines(shardOf(id)), id)) > fleetRegistered + LEASE_TTL * 1000) n++;
      }
      return n;
    };
    console.log(`fleet leases renewed by the runs: ${await renewed(fleet[1]!.beats)} of ${FLEET} in production, ${await renewed(fleet[0]!.beats)} of ${FLEET} in the sandbox`);
  }
  const b = s.app.liveness.batch.stats;
  console.log(`heartbeat script calls: ${b.calls - batch0.calls} answering ${b.beats - batch0.beats} heartbeats (${((b.beats - batch0.beats) / Math.max(1, b.calls - batch0.calls)).toFixed(1)} a call) in ${b.lines - batch0.lines} lines (identical heartbeats of a turn share one), carrying ${b.records - batch0.records} sandboxes' rate records; token memory: ${s.app.heartbeatTokens.stats.hashed} hashed`);
  // the sandbox row's rate limit: requests answered from this thread's lease, script calls that
  // requests waited for, and script calls for a batch asked for ahead (nobody waits for those)
  const a = s.app.auth.stats;
  console.log(`rate limit: ${a.leased - auth0.leased} sandbox requests admitted from the lease, ${a.asked - auth0.asked} rate-limit script calls for requests, ${a.prefetched - auth0.prefetched} for batches asked ahead`);
  if (listenSocket) uWS.us_listen_socket_close(listenSocket);
  if (floorSocket) uWS.us_listen_socket_close(floorSocket);
  }
  if (PART !== 'heartbeats') {
  // ---- expiry lag ----
  const gc = () => (globalThis as { gc?: () => void }).gc?.();
  gc();
  const rss0 = process.memoryUsage().rss;
  const t0 = Date.now();
  await s.app.pg.query(
    `INSERT INTO services (id, ns, endpoint, ttl, health_status, hb_token_hash)
     SELECT 'lv' || lpad(g::text, 14, '0'), 'production', 'https://lv' || g || '.example.com', $2, 'passing', sha256(g::text::bytea)
       FROM generate_series(1, $1) g`,
    [N, TTL],
  );
  // the index text every write path stores with the row (the migrator backfills older rows)
  await backfillIndexText(s.app.pg);
  const r = await rebuildIndex(s.app.pg, s.app.redis, s.app.keys, s.cfg.tiers);
  if (!r) throw new Error('rebuild lock taken');
  await s.app.index.refreshGen();
  const seeded = Date.now();
  let bytes = 0;
  let first = Infinity;
  let last = 0;
  for (let i = 0; i < LEASE_SHARDS; i++) {
    bytes += Number(await s.app.redis.memory('USAGE', s.app.keys.leases(i), 'SAMPLES', '0')) + Number(await s.app.redis.memory('USAGE', s.app.keys.deadlines(i), 'SAMPLES', '0'));
    first = Math.min(first, Number((await s.app.redis.zrange(s.app.keys.deadlines(i), 0, 0, 'WITHSCORES'))[1] ?? Infinity));
    last = Math.max(last, Number((await s.app.redis.zrange(s.app.keys.deadlines(i), -1, -1, 'WITHSCORES'))[1] ?? 0));
  }
  console.log(`seeded ${N} leases (ttl ${TTL} s) in ${seeded - t0} ms (insert + rebuild); deadlines spread over ${last - first} ms; Redis ${(bytes / (N + 1)).toFixed(0)} bytes per leased service (lease hashes + deadline sets)`);
  const lags: number[] = [];
  const durable: number[] = [];
  const passes: { ms: number; flipped: number; late: number }[] = [];
  /** --first-page N: the sweeper's first lease-sweep call per shard and pass (its default when absent; the batch: the old fixed pages) */
  const firstPage = process.argv.includes('--first-page') ? arg('first-page', 0) : undefined;
  await s.app.sweeper.stop();
  // registrations through the same server (its event loop also runs the sweeper)
  let wrote = 0;
  const writes = async (until: () => boolean): Promise<number[]> => {
    const lat: number[] = [];
    await Promise.all(
      Array.from({ length: WRITERS }, async () => {
        while (!until()) {
          const t = performance.now();
          const r = await s.admin('POST', '/admin/api/services', { endpoint: `https://bench-w${wrote++}.example.com`, capability: 'bench-write' });
          await r.arrayBuffer();
          if (r.status !== 201) throw new Error(`registration during the expiry: ${r.status}`);
          lat.push(performance.now() - t);
        }
      }),
    );
    return lat.sort((a, b) => a - b);
  };
  const idleUntil = Math.min(first - 500, Date.now() + 3000);
  const idle = await writes(() => Date.now() >= idleUntil);
  while (Date.now() < first - 250) await new Promise((ok) => setTimeout(ok, 50));
  const sweeper = new LeaseSweeper(s.app.pg, s.app.redis, s.app.keys, s.app.projector, s.app.log, { intervalMs: 250, lockMs: 1500, batch: s.cfg.leaseSweepBatch, parallel: s.cfg.leaseSweepParallel, now: Date.now, onExpired: (ms) => lags.push(ms), onDurable: (ms) => durable.push(ms), onPass: (p) => passes.push(p), firstPage });
  const cpu0 = { node: process.cpuUsage(), redis: await redisCpu() };
  if (PROFILE) await s.app.pg.query('CREATE EXTENSION IF NOT EXISTS pg_stat_statements').then(() => s.app.pg.query('SELECT pg_stat_statements_reset()')).catch(() => undefined);
  // event-loop delay over the window: a pass that starts late because the loop was busy shows here
  const eld = monitorEventLoopDelay({ resolution: 10 });
  eld.enable();
  sweeper.start();
  const deadline = last + 90_000;
  let visibleAt = 0;
  let done = false;
  const busy = writes(() => done);
  while ((lags.length < N || durable.length < N) && Date.now() < deadline) {
    await new Promise((ok) => setTimeout(ok, 50));
    if (!visibleAt && lags.length >= N) {
      visibleAt = Date.now();
      eld.disable();
    }
  }
  const drained = Date.now();
  done = true;
  const during = await busy;
  await sweeper.stop();
  lags.sort((a, b) => a - b);
  durable.sort((a, b) => a - b);
  console.log(`expiries: ${lags.length} visible, ${durable.length} durable of ${N} (LEASE_SWEEP_BATCH ${s.cfg.leaseSweepBatch}, first page ${firstPage ?? 'default'}, LEASE_SWEEP_PARALLEL ${s.cfg.leaseSweepParallel}, ${WRITERS} registration loops)`);
  console.log(`  visible (index: documents, healthy=true) − deadline: p50 ${pct(lags, 50)} ms, p99 ${pct(lags, 99)} ms, max ${lags[lags.length - 1]} ms; all visible ${visibleAt - first} ms after the first deadline`);
  console.log(`  durable (PostgreSQL + change feed, applied) − deadline: p50 ${pct(durable, 50)} ms, p99 ${pct(durable, 99)} ms, max ${durable[durable.length - 1]} ms; all durable ${drained - first} ms after the first deadline (${Math.round(N / ((drained - first) / 1000))} expiries/s)`);
  const ms = (x: number) => x.toFixed(1);
  {
    // per pass that flipped: how long it took, how many it flipped, how late it started (its oldest flip's deadline → its start)
    const q = (k: 'ms' | 'flipped' | 'late') => passes.map((p) => p[k]).sort((a, b) => a - b);
    const f = (k: 'ms' | 'flipped' | 'late') => `p50 ${ms(pct(q(k), 50))}, p99 ${ms(pct(q(k), 99))}, max ${ms(q(k)[passes.length - 1] ?? 0)}`;
    console.log(`  event-loop delay until all visible: p50 ${ms(eld.percentile(50) / 1e6)}, p99 ${ms(eld.percentile(99) / 1e6)}, max ${ms(eld.max / 1e6)} ms`);
    console.log(`  flip passes: ${passes.length}; duration ms ${f('ms')}; leases flipped ${f('flipped')}; start − oldest deadline ms ${f('late')}`);
  }
  if (PROFILE) {
    const node = process.cpuUsage(cpu0.node);
    console.log(`  CPU over the expiry (${((drained - first) / 1000).toFixed(1)} s from the first deadline): this process ${((node.user + node.system) / 1e6).toFixed(1)} s, Redis ${((await redisCpu()) - cpu0.redis).toFixed(1)} s`);
    const top = await s.app.pg
      .query<{ q: string; calls: string; total: number; mean: number }>("SELECT left(regexp_replace(query, '\\s+', ' ', 'g'), 90) AS q, calls::text, total_exec_time AS total, mean_exec_time AS mean FROM pg_stat_statements WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database()) ORDER BY total_exec_time DESC LIMIT 8")
      .catch(() => null);
    for (const r of top?.rows ?? []) console.log(`  pg ${r.total.toFixed(0)} ms in ${r.calls} calls (${r.mean.toFixed(2)} ms each): ${r.q}`);
  }
  console.log(`  registrations before the expiry: ${idle.length}, p50 ${ms(pct(idle, 50))} ms, p99 ${ms(pct(idle, 99))} ms; during it: ${during.length}, p50 ${ms(pct(during, 50))} ms, p99 ${ms(pct(during, 99))} ms, max ${ms(during[during.length - 1] ?? 0)} ms (load ${await load()})`);
  await s.app.projector.flushAcks();
  gc();
  const rss1 = process.memoryUsage().rss;
  console.log(`RSS of the serving process (in-process server, after gc): +${((rss1 - rss0) / 1e6).toFixed(1)} MB for ${N} leased services = ${((rss1 - rss0) / N).toFixed(0)} B each (the lease itself lives in Redis; this is what the process kept)`);
  }
} finally {
  await s.close();
}
