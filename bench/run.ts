// `make bench` / `make bench-quick`: prepare the data, start the real server as a child
// (pinned to core 0 when WORKERS=1), load every scenario with autocannon from this process
// (re-executed under taskset on the last core), then serve the warm search's exact bytes
// from a minimal uWS server (the ceiling) pinned the same way, and report everything:
// stdout, bench/results/latest.json, and the table in bench/README.md.
import { spawn } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ROOT } from '../src/hot/paths.js';
import { HAS_WRK } from './wrk.js';
import type { CeilingResponse } from './ceiling.js';
import { parseFlags, type Flags } from './flags.js';
import { BENCH_TIERS, prepare, type BenchData } from './generate.js';
import { isolation, measure, prepareRow } from './measure.js';
import { rssKb } from './proc-stat.js';
import { freePort, get, HAS_TASKSET, LOADGEN_CPU, NPROC, pinning, spawnNode, waitFor200, type Child, type Pinning, type RawResponse } from './procs.js';
import { machine, markdown, replaceBlock, SATURATED_PCT, type Isolation, type Results, type Row, type WorkersRun } from './report.js';
import { HEAVY, LIGHT, MAIN, paths, scenarios, uncached, type Scenario } from './scenarios.js';
import { visibility, type Visibility } from './visibility.js';

const HERE = dirname(fileURLToPath(import.meta.url));
const RESULTS = join(ROOT, 'bench/results');
const README = join(ROOT, 'bench/README.md');
/** headers uWS writes by itself; the ceiling must not send them twice */
const UWS_OWN = new Set(['date', 'uwebsockets', 'content-length', 'connection', 'keep-alive', 'transfer-encoding']);

/** "other CPU" above this in a row that barely uses Redis means other work on the machine */
const NOISE_PCT = 30;
const log = (m: string) => console.log(m);

/** --fallback: a Redis no one listens on (connections refused at once) and no result cache */
const FALLBACK_ENV = { REDIS_URL: 'redis://127.0.0.1:1', REDIS_CLUSTER_NODES: '', RESULT_CACHE_ENTRIES: '0' };

async function startServer(d: BenchData, workers: number, pin: Pinning, name = `server-w${workers}`, fallback = false): Promise<{ child: Child; base: string }> {
  const port = await freePort();
  const env = { ...d.serverEnv, PORT: String(port), HOST: '127.0.0.1', METRICS_PORT: '0', WORKERS: String(workers), ...(fallback ? FALLBACK_ENV : {}) };
  const child = spawnNode(join(ROOT, 'dist/src/hot/main.js'), [], env, pin.server, join(RESULTS, `${name}.log`));
  const base = `http://127.0.0.1:${port}`;
  try {
    await waitFor200(base + '/readyz', child, 120_000);
  } catch (e) {
    await child.stop();
    throw e;
  }
  return { child, base };
}

/** Serve `warm`'s bytes from the ceiling server and load it like the main scenario. */
async function ceiling(f: Flags, warm: RawResponse, workers: number, pin: Pinning, id: string, when: string): Promise<Row> {
  const resp: CeilingResponse = {
    status: `${warm.status} ${warm.statusText}`,
    headers: warm.headers.filter(([k]) => !UWS_OWN.has(k.toLowerCase())),
    bodyBase64: warm.body.toString('base64'),
  };
  const file = join(RESULTS, `ceiling-response-w${workers}.json`);
  writeFileSync(file, JSON.stringify(resp));
  const port = await freePort();
  const child = spawnNode(join(HERE, 'ceiling.js'), [file, String(port), String(workers)], {}, pin.server, join(RESULTS, `ceiling-w${workers}.log`));
  try {
    const base = `http://127.0.0.1:${port}`;
    await waitFor200(base + '/', child, 30_000);
    const c = await get(base + '/');
    const norm = (h: [string, string][]) => JSON.stringify(h.filter(([k]) => !UWS_OWN.has(k.toLowerCase())));
    if (!c.body.equals(warm.body) || norm(c.headers) !== norm(warm.headers)) throw new Error('the ceiling does not answer the same bytes as the server');
    return await measure(f, base, { id, title: `CEILING${when ? ' ' + when : ''} (uWS, same bytes as ${MAIN})`, measures: '', path: '/' }, warm.body.length, child.proc.pid);
  } finally {
    await child.stop();
  }
}

async function runWorkers(f: Flags, d: BenchData, workers: number, list: Scenario[], withH: boolean, withV: boolean, notes: string[]): Promise<{ run: WorkersRun; iso: Isolation | null; vis: Visibility | null }> {
  const pin = pinning(workers, f.pin);
  log(`\nWORKERS=${workers}: ${pin.note}`);
  const { child, base } = await startServer(d, workers, pin, `server-w${workers}`, f.fallback);
  const rows: Row[] = [];
  const ceilings: Row[] = [];
  const bytes = new Map<string, number>();
  let iso: Isolation | null = null;
  let vis: Visibility | null = null;
  let warm: RawResponse;
  let rssMb: number | null;
  const mainPath = scenarios(d).find((s) => s.id === MAIN)!.path;
  try {
    if (f.ceilingRuns > 1) {
      // the server idles meanwhile (its watchers wake twice a second); the body is the same warm or cold
      const first = await get(base + mainPath);
      if (first.status !== 200) throw new Error(`the main scenario answers ${first.status}: no ceiling bytes`);
      ceilings.push(await ceiling(f, first, workers, pin, 'g0', 'before'));
    }
    for (const listed of list) {
      const s = await prepareRow(base, listed);
      const pre = await get(base + paths(s, 0)(), s.headers);
      bytes.set(s.id, pre.body.length);
      if (pre.status !== (s.expect ?? 200)) {
        // a 302 here means the path is not canonical; the row would measure something else
        notes.push(`scenario ${s.id} (${s.path}) answered ${pre.status} before the run, so it was not measured: ${pre.body.toString().slice(0, 160)}`);
        log(`  ${s.id} SKIPPED: preflight answered ${pre.status}`);
        continue;
      }
      rows.push(await measure(f, base, s, pre.body.length, child.proc.pid));
    }
    const all = scenarios(d);
    if (withH) {
      const light = uncached(all.find((s) => s.id === LIGHT)!, d.spec.production, 'a2c', 'search: mid-popularity capability, uncached');
      const heavy = all.find((s) => s.id === HEAVY)!;
      for (const s of [light, heavy]) if (!bytes.has(s.id)) bytes.set(s.id, (await get(base + paths(s, 0)())).body.length);
      // the a2 row already warmed the light search's code path (same query, other cursors)
      iso = await isolation(f, base, child.proc.pid, light, heavy, bytes, !rows.some((r) => r.id === LIGHT));
    }
    if (withV) {
      // a second node on the same PostgreSQL and Redis; both on the server's core
      const b = await startServer(d, 1, pin, 'server-b');
      try {
        log(`  v    write on node A, visible on node B`);
        vis = await visibility(base, b.base, d.sandbox, f.quick ? 20 : 50);
        log(`  v    ${vis.delaysMs.length} writes: p50 ${vis.p50.toFixed(2)} ms  p99 ${vis.p99.toFixed(2)} ms  max ${vis.max.toFixed(2)} ms  within 100 ms: ${vis.within100}/${vis.rounds}${vis.missed ? `  MISSED ${vis.missed}` : ''}`);
      } finally {
        await b.child.stop();
      }
    }
    rssMb = rss(child.proc.pid);
    log(`  server RSS after the scenarios: ${rssMb ?? '?'} MB`);
    warm = await get(base + mainPath);
    if (warm.status !== 200) throw new Error(`the main scenario answers ${warm.status}: no ceiling bytes`);
  } finally {
    await child.stop();
  }
  ceilings.push(await ceiling(f, warm, workers, pin, 'g', ceilings.length ? 'after' : ''));
  const best = ceilings.reduce((a, b) => (b.rps > a.rps ? b : a));
  for (const r of [...rows, ...ceilings]) r.ratio = r.rps / best.rps;
  return { run: { workers, pinning: pin.note, rows, ceiling: best, ceilings, rssMb }, iso, vis };
}

/** Resident memory of a process (all its threads), MB, from /proc; null where there is none. */
function rss(pid: number | undefined): number | null {
  const kb = pid ? rssKb(pid) : 0;
  return kb ? Math.round(kb / 1024) : null;
}

function reexecPinned(): void {
  const args = [...process.execArgv, fileURLToPath(import.meta.url), ...process.argv.slice(2), '--pinned'];
  const child = spawn('taskset', ['-c', String(LOADGEN_CPU), process.execPath, ...args], { stdio: 'inherit' });
  for (const sig of ['SIGINT', 'SIGTERM'] as const) process.on(sig, () => child.kill(sig));
  child.on('exit', (code, sig) => process.exit(code ?? (sig ? 1 : 0)));
}

async function main(): Promise<void> {
  const f = parseFlags(process.argv.slice(2), NPROC);
  if (f.generator === 'wrk' && !HAS_WRK) throw new Error('--generator wrk: wrk is not installed (Debian: apt-get install wrk)');
  if (f.pin && !f.pinned && HAS_TASKSET && NPROC >= 2) return reexecPinned();
  const t0 = Date.now();
  const load0 = loadavg()[0]!;
  mkdirSync(RESULTS, { recursive: true });
  // a full run always times a fresh rebuild (the README reports it); quick runs and named
  // sizes reuse a valid index (at a million the rebuild is timed by generate.js --rebuild)
  const d = await prepare({ quick: f.quick, services: f.services ?? undefined, regenerate: f.regenerate, rebuild: f.rebuild || (!f.quick && !f.services), log });
  const list = scenarios(d).filter((s) => !f.only || f.only.has(s.id));
  const withH = !f.only || f.only.has('h');
  const withV = !f.only || f.only.has('v');
  const notes: string[] = [];
  const runs: WorkersRun[] = [];
  let iso: Isolation | null = null;
  let vis: Visibility | null = null;
  for (const [i, w] of f.workers.entries()) {
    const r = await runWorkers(f, d, w, i === 0 ? list : list.filter((s) => s.id === MAIN), i === 0 && withH, i === 0 && withV, notes);
    runs.push(r.run);
    iso ??= r.iso;
    vis ??= r.vis;
  }
  const saturated = runs.flatMap((r) => [...r.rows, ...r.ceilings].filter((x) => x.loadgenSaturated).map((x) => `${x.id} (WORKERS=${r.workers})`));
  if (saturated.length) {
    notes.push(`The load generator was the bottleneck (${f.generator} above ${SATURATED_PCT} % of its core) in: ${saturated.join(', ')}. Those rows measure ${f.generator} as much as the server; a saturated ceiling makes every ratio look better than the server's true headroom.`);
  } else notes.push(`${f.generator} stayed below ${SATURATED_PCT} % of its core in every row: the load generator was not the bottleneck.`);
  const bad = runs.flatMap((r) => r.rows.filter((x) => x.non2xx || x.errors || x.timeouts).map((x) => x.id));
  if (bad.length) notes.push(`Rows with non-2xx answers, errors or timeouts: ${bad.join(', ')} (their req/s count 2xx only).`);
  notes.push(`Redis and PostgreSQL are not pinned: they run on whichever core is free, beside the server and ${f.generator} ("other CPU" is their share plus any other work).`);
  for (const r of runs) if (r.rssMb) notes.push(`Server RSS after its scenarios (WORKERS=${r.workers}, result cache at its default budget): ${r.rssMb} MB.`);
  const load1 = loadavg()[0]!;
  // The load average counts the bench's own processes too, so it cannot tell noise apart;
  // "other CPU" of rows that Redis barely serves (cached answers, the ceiling) can.
  const noisy = runs.flatMap((r) =>
    [...r.rows, ...r.ceilings].filter((x) => (x.otherCpuPct ?? 0) > NOISE_PCT && !['c2', 'e', 'f'].includes(x.id)).map((x) => `${x.id} (WORKERS=${r.workers}, ${Math.round(x.otherCpuPct!)} %)`),
  );
  if (noisy.length) {
    notes.push(`Other work competed for the machine: beyond the server and autocannon, more than ${NOISE_PCT} % of a core was busy during ${noisy.join(', ')}, rows that barely use Redis. Those numbers are noisy; re-run on a quiet machine before trusting them.`);
  }
  const res: Results = {
    date: new Date().toISOString().replace(/\.\d+Z$/, 'Z'),
    mode: f.quick ? 'quick' : f.services ? `services=${f.services}` : 'full',
    command: ['node dist/bench/run.js', ...f.argv].join(' '),
    machine: machine(),
    loadavg: { start: load0, end: load1 },
    settings: { connections: f.connections, pipelining: 1, generator: f.generator, durationS: f.durationS, warmupS: f.warmupS, heavyConnections: f.heavyConnections, tiers: BENCH_TIERS },
    data: {
      production: d.spec.production,
      sandboxes: d.spec.sandboxes,
      servicesPerSandbox: d.spec.servicesPerSandbox,
      capabilities: d.spec.capabilities,
      dataCached: d.dataCached,
      loadS: d.stored.loadMs / 1000,
      indexServices: d.index.services,
      indexRebuildS: d.index.ms / 1000,
      indexCached: d.index.cached,
      sizes: d.facts.sizes,
    },
    runs,
    isolation: iso,
    visibility: vis,
    notes,
    totalS: (Date.now() - t0) / 1000,
  };
  const md = markdown(res, MAIN);
  log('\n' + md);
  writeFileSync(join(RESULTS, 'latest.json'), JSON.stringify(res, null, 2) + '\n');
  log(`wrote bench/results/latest.json`);
  if (f.readme) {
    writeFileSync(README, replaceBlock(readFileSync(README, 'utf8'), md));
    log('rewrote the results table in bench/README.md');
  }
}

main().catch((e: unknown) => {
  console.error(e instanceof Error ? e.message : e);
  process.exit(1);
});
