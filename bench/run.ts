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
import { load, startLoad, type Generator, type LoadOptions, type LoadResult } from './cannon.js';
import { HAS_WRK } from './wrk.js';
import type { CeilingResponse } from './ceiling.js';
import { share, snapshot } from './cpu.js';
import { parseFlags, type Flags } from './flags.js';
import { BENCH_TIERS, prepare, type BenchData } from './generate.js';
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
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function toRow(s: Pick<Scenario, 'id' | 'title' | 'path'>, r: LoadResult, bodyBytes: number): Row {
  return { ...r, id: s.id, title: s.title, path: s.path, ratio: null, loadgenSaturated: r.loadgenCpuPct > SATURATED_PCT, bodyBytes, serverCpuPct: null, otherCpuPct: null, stealPct: null, serverUsPerReq: null };
}

/** Run one load while watching the server's CPU and the rest of the machine's. */
async function watched(s: Pick<Scenario, 'id' | 'title' | 'path'>, o: LoadOptions, pid: number | undefined, bodyBytes: number): Promise<Row> {
  const a = snapshot(pid);
  const r = await load(o);
  const c = share(a, snapshot(pid), NPROC);
  const row = toRow(s, r, bodyBytes);
  if (c) {
    row.serverCpuPct = c.serverPct;
    // Redis, PostgreSQL and whatever else ran: what is busy beyond the server and autocannon
    row.otherCpuPct = Math.max(0, c.machinePct - c.serverPct - r.loadgenCpuPct);
    row.stealPct = c.stealPct;
    row.serverUsPerReq = r.totalRps > 0 ? (c.serverPct / 100) * 1e6 / r.totalRps : null;
  }
  return row;
}

function show(r: Row): void {
  const bad = r.non2xx || r.errors || r.timeouts ? `  NON-2XX ${JSON.stringify(r.statusCodes)} errors ${r.errors} timeouts ${r.timeouts}` : '';
  const cpu = r.serverCpuPct === null ? '' : `  server CPU ${Math.round(r.serverCpuPct)} %  other ${Math.round(r.otherCpuPct ?? 0)} %`;
  log(
    `  ${r.id.padEnd(4)} ${r.title.padEnd(42)} ${Math.round(r.rps).toString().padStart(7)} req/s  p50 ${r.p50.toFixed(2)} ms  p99 ${r.p99.toFixed(2)} ms  ${generator} CPU ${Math.round(r.loadgenCpuPct)} %${r.loadgenSaturated ? ' (saturated)' : ''}${cpu}${bad}`,
  );
}

let cursorSeed = 1;
/** --generator: set once from the flags in main() */
let generator: Generator = 'autocannon';

/** Load options of a scenario; each call gets its own cursor stream, so a measured run never replays its warm-up's cursors. */
function loadOf(base: string, s: Scenario, connections: number, durationS: number): LoadOptions {
  return {
    url: base + s.path,
    headers: s.headers,
    expect: s.expect,
    connections,
    durationS,
    generator,
    nextPath: s.cursorMax ? paths(s, cursorSeed++) : undefined,
    cursor: s.cursorMax ? { path: s.path, max: s.cursorMax } : undefined,
  };
}

async function measure(f: Flags, base: string, s: Scenario, bodyBytes: number, pid: number | undefined): Promise<Row> {
  await load(loadOf(base, s, f.connections, f.warmupS));
  const row = await watched(s, loadOf(base, s, f.connections, f.durationS), pid, bodyBytes);
  show(row);
  return row;
}

/**
 * Rows that need state first: a poller sends back the ETag of a first answer; an over-limit
 * row gets the key of a fresh free sandbox and spends its minute's allowance.
 */
async function prepareRow(base: string, s: Scenario): Promise<Scenario> {
  if (s.conditional) {
    const first = await get(base + s.path, s.headers);
    const etag = first.headers.find(([k]) => k.toLowerCase() === 'etag')?.[1] ?? '';
    return { ...s, headers: { ...s.headers, 'if-none-match': etag } };
  }
  if (s.overLimitKey) {
    const r = await fetch(base + '/sandboxes', { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"name":"bench over limit"}' });
    const key = ((await r.json()) as { apiKey: string }).apiKey;
    const headers = { ...s.headers, authorization: `Bearer ${key}` };
    for (let i = 0; i < 200 && (await get(base + s.path, headers)).status !== 429; i++);
    return { ...s, headers };
  }
  return s;
}

async function startServer(d: BenchData, workers: number, pin: Pinning, name = `server-w${workers}`): Promise<{ child: Child; base: string }> {
  const port = await freePort();
  const env = { ...d.serverEnv, PORT: String(port), HOST: '127.0.0.1', METRICS_PORT: '0', WORKERS: String(workers) };
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

/** Scenario h: the light search alone, then beside a second autocannon on the heavy intersection. */
async function isolation(f: Flags, base: string, pid: number | undefined, light: Scenario, heavy: Scenario, bytes: Map<string, number>, warm: boolean): Promise<Isolation> {
  log(`  h   light ${light.id} alone, then beside ${f.heavyConnections} connections of ${heavy.id}`);
  if (warm) await load(loadOf(base, light, f.connections, f.warmupS));
  const alone = await watched({ ...light, id: 'h0' }, loadOf(base, light, f.connections, f.durationS), pid, bytes.get(light.id) ?? 0);
  show(alone);
  const bg = startLoad(loadOf(base, heavy, f.heavyConnections, f.durationS + 30));
  await sleep(Math.min(1000, f.warmupS * 500)); // the heavy load is up to speed before the light one is measured
  const withHeavy = await watched({ ...light, id: 'h1', title: light.title + ' + heavy' }, loadOf(base, light, f.connections, f.durationS), pid, bytes.get(light.id) ?? 0);
  bg.stop();
  const heavyRun = toRow({ ...heavy, id: 'h-bg', title: heavy.title + ' (beside h1)' }, await bg.done, bytes.get(heavy.id) ?? 0);
  show(withHeavy);
  show(heavyRun);
  return { light: light.id, heavy: heavy.id, heavyConnections: f.heavyConnections, alone, withHeavy, heavyRun, p99Ratio: withHeavy.p99 / alone.p99 };
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
  const { child, base } = await startServer(d, workers, pin);
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
  try {
    const m = /^VmRSS:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Math.round(Number(m[1]) / 1024) : null;
  } catch {
    return null;
  }
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
  generator = f.generator;
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
    notes.push(`The load generator was the bottleneck (${generator} above ${SATURATED_PCT} % of its core) in: ${saturated.join(', ')}. Those rows measure ${generator} as much as the server; a saturated ceiling makes every ratio look better than the server's true headroom.`);
  } else notes.push(`${generator} stayed below ${SATURATED_PCT} % of its core in every row: the load generator was not the bottleneck.`);
  const bad = runs.flatMap((r) => r.rows.filter((x) => x.non2xx || x.errors || x.timeouts).map((x) => x.id));
  if (bad.length) notes.push(`Rows with non-2xx answers, errors or timeouts: ${bad.join(', ')} (their req/s count 2xx only).`);
  notes.push(`Redis and PostgreSQL are not pinned: they run on whichever core is free, beside the server and ${generator} ("other CPU" is their share plus any other work).`);
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
