// One measured row of bench/run.ts: a scenario's load options (a cursor stream of its own),
// a warm-up then a run watched for the server's and the machine's CPU, the row printed; the
// state some rows need first (an ETag, an over-limit key); and scenario h, the light search
// alone and beside the heavy one.
import { load, startLoad } from './cannon.js';
import type { Generator, LoadOptions, LoadResult } from './load-types.js';
import { share, snapshot } from './cpu.js';
import type { Flags } from './flags.js';
import { get, NPROC } from './procs.js';
import { SATURATED_PCT, type Isolation, type Row } from './report.js';
import { paths, type Scenario } from './scenarios.js';

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

function show(r: Row, generator: Generator): void {
  const bad = r.non2xx || r.errors || r.timeouts ? `  NON-2XX ${JSON.stringify(r.statusCodes)} errors ${r.errors} timeouts ${r.timeouts}` : '';
  const cpu = r.serverCpuPct === null ? '' : `  server CPU ${Math.round(r.serverCpuPct)} %  other ${Math.round(r.otherCpuPct ?? 0)} %`;
  console.log(
    `  ${r.id.padEnd(4)} ${r.title.padEnd(42)} ${Math.round(r.rps).toString().padStart(7)} req/s  p50 ${r.p50.toFixed(2)} ms  p99 ${r.p99.toFixed(2)} ms  ${generator} CPU ${Math.round(r.loadgenCpuPct)} %${r.loadgenSaturated ? ' (saturated)' : ''}${cpu}${bad}`,
  );
}

let cursorSeed = 1;

/** Load options of a scenario; each call gets its own cursor stream, so a measured run never replays its warm-up's cursors. */
function loadOf(base: string, s: Scenario, connections: number, durationS: number, generator: Generator): LoadOptions {
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

export async function measure(f: Flags, base: string, s: Scenario, bodyBytes: number, pid: number | undefined): Promise<Row> {
  await load(loadOf(base, s, f.connections, f.warmupS, f.generator));
  const row = await watched(s, loadOf(base, s, f.connections, f.durationS, f.generator), pid, bodyBytes);
  show(row, f.generator);
  return row;
}

/**
 * Rows that need state first: a poller sends back the ETag of a first answer; an over-limit
 * row gets the key of a fresh free sandbox and spends its minute's allowance.
 */
export async function prepareRow(base: string, s: Scenario): Promise<Scenario> {
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

/** Scenario h: the light search alone, then beside a second autocannon on the heavy intersection. */
export async function isolation(f: Flags, base: string, pid: number | undefined, light: Scenario, heavy: Scenario, bytes: Map<string, number>, warm: boolean): Promise<Isolation> {
  console.log(`  h   light ${light.id} alone, then beside ${f.heavyConnections} connections of ${heavy.id}`);
  if (warm) await load(loadOf(base, light, f.connections, f.warmupS, f.generator));
  const alone = await watched({ ...light, id: 'h0' }, loadOf(base, light, f.connections, f.durationS, f.generator), pid, bytes.get(light.id) ?? 0);
  show(alone, f.generator);
  const bg = startLoad(loadOf(base, heavy, f.heavyConnections, f.durationS + 30, f.generator));
  await new Promise((r) => setTimeout(r, Math.min(1000, f.warmupS * 500))); // the heavy load is up to speed before the light one is measured
  const withHeavy = await watched({ ...light, id: 'h1', title: light.title + ' + heavy' }, loadOf(base, light, f.connections, f.durationS, f.generator), pid, bytes.get(light.id) ?? 0);
  bg.stop();
  const heavyRun = toRow({ ...heavy, id: 'h-bg', title: heavy.title + ' (beside h1)' }, await bg.done, bytes.get(heavy.id) ?? 0);
  show(withHeavy, f.generator);
  show(heavyRun, f.generator);
  return { light: light.id, heavy: heavy.id, heavyConnections: f.heavyConnections, alone, withHeavy, heavyRun, p99Ratio: withHeavy.p99 / alone.p99 };
}
