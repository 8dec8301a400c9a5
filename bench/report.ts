// The bench's output: the results object (bench/results/latest.json), the table printed to
// stdout, and the block of bench/README.md between the bench markers.
import { readFileSync } from 'node:fs';
import { cpus, release, totalmem } from 'node:os';
import type { LoadResult } from './load-types.js';
import type { Visibility } from './visibility.js';

export const START = '<!-- bench:start -->';
export const END = '<!-- bench:end -->';
/** above this share of one core, the load generator was (close to) saturated */
export const SATURATED_PCT = 90;

export interface Row extends LoadResult {
  id: string;
  title: string;
  path: string;
  /** rps / ceiling rps of the same WORKERS setting */
  ratio: number | null;
  loadgenSaturated: boolean;
  /** response size (body bytes) seen by the preflight request */
  bodyBytes: number;
  /** the server (or ceiling) process, % of one core; null without /proc */
  serverCpuPct: number | null;
  /** the rest of the machine beyond server and autocannon (Redis, PostgreSQL, other work), % of one core */
  otherCpuPct: number | null;
  stealPct: number | null;
  /**
   * server CPU per answered request, µs: a measure of the server's cost that holds even when
   * autocannon is saturated (Redis's and PostgreSQL's share is not in it: see otherCpuPct)
   */
  serverUsPerReq: number | null;
}

export interface WorkersRun {
  workers: number;
  pinning: string;
  rows: Row[];
  /** the faster ceiling run: ratios are taken against it (the conservative choice) */
  ceiling: Row | null;
  /** every ceiling run: before the scenarios (full runs) and after them */
  ceilings: Row[];
  /** the server process's resident memory after its scenarios (VmRSS, MB; null: unknown) */
  rssMb?: number | null;
}

export interface Isolation {
  light: string;
  heavy: string;
  heavyConnections: number;
  alone: Row;
  withHeavy: Row;
  heavyRun: Row;
  /** p99 with heavy / p99 alone; issue 5 wants ≤ 2 */
  p99Ratio: number;
}

export interface Machine {
  nproc: number;
  cpu: string;
  node: string;
  kernel: string;
  memGiB: number;
}

export interface Results {
  date: string;
  mode: string;
  command: string;
  machine: Machine;
  /** 1-minute load average when the run started and ended: above nproc, other work competed */
  loadavg: { start: number; end: number };
  settings: { connections: number; pipelining: number; generator?: string; durationS: number; warmupS: number; heavyConnections: number; tiers: string };
  data: {
    production: number;
    sandboxes: number;
    servicesPerSandbox: number;
    capabilities: number;
    dataCached: boolean;
    loadS: number;
    indexServices: number;
    indexRebuildS: number;
    indexCached: boolean;
    sizes: Record<string, number>;
  };
  runs: WorkersRun[];
  isolation: Isolation | null;
  /** scenario v: write on one node, visible on another (absent in results of older runs) */
  visibility?: Visibility | null;
  notes: string[];
  totalS: number;
}

export function machine(): Machine {
  let cpu = 'unknown';
  try {
    const m = /^model name\s*:\s*(.+)$/m.exec(readFileSync('/proc/cpuinfo', 'utf8'));
    if (m) cpu = m[1]!.trim();
  } catch {
    /* not Linux: keep "unknown" */
  }
  // cpus(), not availableParallelism(): the machine's cores, whatever this process's affinity
  return { nproc: cpus().length, cpu, node: process.version, kernel: release(), memGiB: Math.round(totalmem() / 2 ** 30) };
}

const n0 = (x: number) => (Number.isFinite(x) ? Math.round(x).toLocaleString('en-US') : '–');
const ms = (x: number) => (Number.isFinite(x) ? x.toFixed(2) : '–');
const pct = (x: number) => `${Math.round(x)} %`;
const ratio = (x: number | null) => (x === null || !Number.isFinite(x) ? '–' : `${x.toFixed(2)}×`);

function non2xx(r: Row): string {
  if (!r.non2xx && !r.errors && !r.timeouts) return '0';
  const codes = Object.entries(r.statusCodes).filter(([c]) => !c.startsWith('2')).map(([c, n]) => `${n} × ${c}`);
  if (r.errors) codes.push(`${r.errors} errors`);
  if (r.timeouts) codes.push(`${r.timeouts} timeouts`);
  return codes.join(', ');
}

function cpuCell(r: Row): string {
  return r.loadgenSaturated ? `**${pct(r.loadgenCpuPct)} saturated**` : pct(r.loadgenCpuPct);
}

const opt = (x: number | null) => (x === null ? '–' : pct(x));
const us = (x: number | null) => (x === null || !Number.isFinite(x) ? '–' : x.toFixed(1));

/**
 * When the ceiling saturated autocannon, req/s ratios only say "as fast as the load
 * generator"; the server's CPU per request against the ceiling's still compares the two.
 */
export function costNote(run: WorkersRun, ids: string[], generator = 'autocannon'): string | null {
  const c = run.ceiling;
  if (!c || !c.loadgenSaturated || !c.serverUsPerReq) return null;
  const parts: string[] = [];
  for (const id of ids) {
    const r = run.rows.find((x) => x.id === id);
    if (r?.serverUsPerReq) parts.push(`${id} ${r.serverUsPerReq.toFixed(1)} µs (cost ratio ${(c.serverUsPerReq / r.serverUsPerReq).toFixed(2)}×)`);
  }
  if (!parts.length) return null;
  return (
    `WORKERS=${run.workers}: the ceiling saturated ${generator}, so req/s ratios are bounded by the load generator. ` +
    `Server CPU per request: ceiling ${c.serverUsPerReq.toFixed(1)} µs, ${parts.join(', ')}; Redis's work is not included.`
  );
}

export function scenarioTable(run: WorkersRun): string {
  const lines = [
    '| | scenario | req/s | p50 ms | p99 ms | non-2xx | × ceiling | load generator CPU | server CPU | server µs/req | other CPU |',
    '|---|---|--:|--:|--:|---|--:|--:|--:|--:|--:|',
  ];
  for (const r of [...run.rows, ...run.ceilings]) {
    lines.push(
      `| ${r.id} | ${r.title} | ${n0(r.rps)} | ${ms(r.p50)} | ${ms(r.p99)} | ${non2xx(r)} | ${ratio(r.ratio)} | ${cpuCell(r)} | ${opt(r.serverCpuPct)} | ${us(r.serverUsPerReq)} | ${opt(r.otherCpuPct)} |`,
    );
  }
  return lines.join('\n');
}

export function workersTable(runs: WorkersRun[], main: string): string {
  const lines = [
    '| WORKERS | pinning | search req/s | p99 ms | ceiling req/s | × ceiling | load generator CPU | server CPU | server µs/req | ceiling µs/req |',
    '|--:|---|--:|--:|--:|--:|--:|--:|--:|--:|',
  ];
  for (const run of runs) {
    const r = run.rows.find((x) => x.id === main);
    if (!r) continue;
    lines.push(`| ${run.workers} | ${run.pinning} | ${n0(r.rps)} | ${ms(r.p99)} | ${run.ceiling ? n0(run.ceiling.rps) : '–'} | ${ratio(r.ratio)} | ${cpuCell(r)} | ${opt(r.serverCpuPct)} | ${us(r.serverUsPerReq)} | ${us(run.ceiling?.serverUsPerReq ?? null)} |`);
  }
  return lines.join('\n');
}

export function isolationTable(h: Isolation): string {
  return [
    '| light search | p50 ms | p99 ms | req/s | heavy req/s beside it |',
    '|---|--:|--:|--:|--:|',
    `| alone | ${ms(h.alone.p50)} | ${ms(h.alone.p99)} | ${n0(h.alone.rps)} | – |`,
    `| with ${h.heavyConnections} connections of scenario ${h.heavy} | ${ms(h.withHeavy.p50)} | ${ms(h.withHeavy.p99)} | ${n0(h.withHeavy.rps)} | ${n0(h.heavyRun.rps)} (non-2xx: ${non2xx(h.heavyRun)}) |`,
    '',
    `p99 with heavy intersections / p99 alone = **${h.p99Ratio.toFixed(2)}×** (issue 5 asks for ≤ 2×).`,
  ].join('\n');
}

export function visibilityTable(v: Visibility): string {
  return [
    '| writes | p50 ms | p99 ms | max ms | within 100 ms | never seen (5 s) |',
    '|--:|--:|--:|--:|--:|--:|',
    `| ${v.rounds} | ${ms(v.p50)} | ${ms(v.p99)} | ${ms(v.max)} | ${v.within100} of ${v.rounds} | ${v.missed} |`,
    '',
    'From node A\'s 201 (committed in PostgreSQL) to node B\'s first search answer that holds the new service, B having cached the answer without it just before (issue 5: within 100 ms).',
  ].join('\n');
}

/** The Markdown block that goes between the markers of bench/README.md. */
export function markdown(res: Results, main: string): string {
  const first = res.runs[0];
  const m = res.machine;
  const d = res.data;
  const out = [
    `Run of **${res.date.slice(0, 10)}**, mode **${res.mode}**: \`${res.command}\` (${res.totalS.toFixed(0)} s in all).`,
    '',
    `Machine: nproc ${m.nproc}, ${m.cpu}, ${m.memGiB} GiB, Linux ${m.kernel}, Node ${m.node}; ` +
      `load average ${res.loadavg.start.toFixed(1)} at the start, ${res.loadavg.end.toFixed(1)} at the end. ` +
      `${res.settings.generator === 'wrk' ? 'wrk as a child process (-t1, a Lua script per row)' : 'autocannon in-process'}: ${res.settings.connections} connections, pipelining ${res.settings.pipelining}, ` +
      `${res.settings.warmupS} s warm-up then ${res.settings.durationS} s measured per row, loopback only. TIERS=${res.settings.tiers} (see "Caveats").`,
    '',
    `Data: ${d.production.toLocaleString('en-US')} production services over ${d.capabilities.toLocaleString('en-US')} capabilities, ` +
      `${d.sandboxes.toLocaleString('en-US')} sandboxes × ${d.servicesPerSandbox} services` +
      (d.dataCached ? ' (database reused; loading it took ' : ' (generated and loaded in ') + `${d.loadS.toFixed(1)} s). ` +
      `**Index rebuild of ${d.indexServices.toLocaleString('en-US')} services: ${d.indexRebuildS.toFixed(1)} s**` +
      (d.indexCached ? ' (measured when the reused index was built).' : '.'),
    '',
  ];
  if (first) {
    out.push(`### Scenarios, WORKERS=${first.workers} (${first.pinning})`, '', scenarioTable(first), '');
    const n = costNote(first, [main, 'f'], res.settings.generator ?? 'autocannon');
    if (n) out.push(n, '');
  }
  if (res.runs.length > 1) {
    out.push(`### 1 vs N: scenario ${main}`, '', workersTable(res.runs, main), '');
    for (const run of res.runs.slice(1)) {
      const n = costNote(run, [main], res.settings.generator ?? 'autocannon');
      if (n) out.push(n, '');
    }
  }
  if (res.isolation) out.push(`### h: light search (${res.isolation.light}) beside heavy intersections (${res.isolation.heavy})`, '', isolationTable(res.isolation), '');
  if (res.visibility) out.push('### v: a write on one node, visible on another', '', visibilityTable(res.visibility), '');
  if (res.notes.length) out.push(...res.notes.map((n) => `- ${n}`), '');
  return out.join('\n');
}

/** Replace what is between the markers (markers kept); append a section when they are missing. */
export function replaceBlock(text: string, block: string): string {
  const a = text.indexOf(START);
  const b = text.indexOf(END);
  const inner = `${START}\n${block.trim()}\n${END}`;
  if (a === -1 || b === -1 || b < a) return `${text.trimEnd()}\n\n## Results\n\n${inner}\n`;
  return text.slice(0, a) + inner + text.slice(b + END.length);
}
