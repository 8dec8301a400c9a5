// wrk as a load generator (`--generator wrk`): the same LoadOptions and LoadResult as
// cannon.ts, so any row can be measured by either. wrk is C (one thread, epoll) and does not
// saturate before a one-core uWS server the way autocannon does; the point of issue 13's
// "measured with wrk". Per-request variety (a random `after` cursor, headers) comes from a
// Lua script written for each run; wrk runs as a child of this process, so it inherits this
// process's pinning (run.ts and cold.ts run on the load generator's core).
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { LoadOptions, LoadResult, Running } from './load-types.js';

export const HAS_WRK = spawnSync('wrk', ['--version'], { stdio: 'ignore' }).error === undefined;

/** A Lua string literal (long bracket form cannot hold arbitrary text; escape instead). */
const lua = (s: string) => '"' + s.replace(/[\\"]/g, (c) => '\\' + c).replace(/\n/g, '\\n') + '"';

/**
 * The script. Without a cursor and without `expect` it defines neither request() nor
 * response(): wrk then sends one pre-built request and skips handing each response to Lua,
 * its fastest mode. `expect` counts statuses in Lua (response()); rows that use it (429,
 * 304) have small bodies. done() prints one JSON line with the summary.
 */
export function script(o: LoadOptions, seed: number): string {
  const u = new URL(o.url);
  const lines: string[] = [];
  for (const [k, v] of Object.entries(o.headers ?? {})) lines.push(`wrk.headers[${lua(k)}] = ${lua(v)}`);
  lines.push(`wrk.path = ${lua(u.pathname + u.search)}`);
  lines.push('local threads = {}', 'function setup(t) table.insert(threads, t) t:set("id", #threads) end');
  lines.push(`function init(args) math.randomseed(${seed} + id) counts = {} end`);
  if (o.cursor) {
    const [p, q] = o.cursor.path.split('?') as [string, string | undefined];
    // canonical order, as scenarios.ts paths(): `after` first
    lines.push(`local head, tail, max = ${lua(p + '?after=')}, ${lua(q ? '&' + q : '')}, ${o.cursor.max}`);
    lines.push('function request() return wrk.format(nil, head .. math.random(1, max) .. tail) end');
  }
  if (o.expect) lines.push('function response(status) counts[status] = (counts[status] or 0) + 1 end');
  lines.push(
    'function done(s, lat)',
    '  local c = {}',
    '  for _, t in ipairs(threads) do local tc = t:get("counts") if tc then for k, v in pairs(tc) do c[tostring(k)] = (c[tostring(k)] or 0) + v end end end',
    '  local parts = {}',
    '  for k, v in pairs(c) do table.insert(parts, string.format("%q:%d", k, v)) end',
    '  io.write(string.format(\'WRKJSON {"requests":%d,"duration_us":%d,"bytes":%d,"connect":%d,"read":%d,"write":%d,"status":%d,"timeout":%d,' +
      '"p50":%d,"p90":%d,"p99":%d,"max":%d,"mean":%f,"counts":{%s}}\\n\',',
    '    s.requests, s.duration, s.bytes, s.errors.connect, s.errors.read, s.errors.write, s.errors.status, s.errors.timeout,',
    '    lat:percentile(50), lat:percentile(90), lat:percentile(99), lat.max, lat.mean, table.concat(parts, ",")))',
    'end',
  );
  return lines.join('\n') + '\n';
}

interface WrkJson {
  requests: number;
  duration_us: number;
  bytes: number;
  connect: number;
  read: number;
  write: number;
  status: number;
  timeout: number;
  p50: number;
  p90: number;
  p99: number;
  max: number;
  mean: number;
  counts: Record<string, number>;
}

let seeds = 1;

/** Children's CPU from the shell's `times` (second line: user and system of its children). */
export function childCpuS(out: string): number {
  const line = out.trim().split('\n').filter((l) => /^\d+m[\d.]+s \d+m[\d.]+s$/.test(l.trim())).pop();
  if (!line) return NaN;
  return line
    .trim()
    .split(' ')
    .map((t) => {
      const [m, s] = t.replace(/s$/, '').split('m') as [string, string];
      return Number(m) * 60 + Number(s);
    })
    .reduce((a, b) => a + b, 0);
}

/**
 * Voluntary context switches (sleeps) of every thread of the child of process `sh` (wrk,
 * started by the shell of startWrk), or null when it cannot be read (not Linux, gone).
 */
export function childSleeps(sh: number | undefined): number | null {
  try {
    const kid = readFileSync(`/proc/${sh}/task/${sh}/children`, 'utf8').trim().split(' ')[0];
    if (!kid) return null;
    let n = 0;
    for (const t of readdirSync(`/proc/${kid}/task`)) n += Number(/^voluntary_ctxt_switches:\s*(\d+)/m.exec(readFileSync(`/proc/${kid}/task/${t}/status`, 'utf8'))?.[1] ?? NaN);
    return Number.isFinite(n) ? n : null;
  } catch {
    return null;
  }
}

export function startWrk(o: LoadOptions): Running {
  const dir = mkdtempSync(join(tmpdir(), 'wrk-'));
  const file = join(dir, 'row.lua');
  writeFileSync(file, script(o, seeds++ * 7919));
  const u = new URL(o.url);
  const args = ['-t1', `-c${o.connections}`, `-d${o.durationS}s`, '--timeout', '10s', '-s', file, `${u.protocol}//${u.host}${u.pathname}${u.search}`];
  // `times` after wrk: the CPU wrk used, without sampling /proc while it runs. A SIGINT to
  // the shell (stop()) is passed on to wrk by its pid: wrk stops and still prints its summary
  const sh = 'wrk "$@" & w=$!; trap \'kill -INT $w\' INT; wait $w; wait $w; times';
  const child = spawn('sh', ['-c', sh, 'sh', ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stdout.on('data', (b: Buffer) => (out += b.toString()));
  child.stderr.on('data', (b: Buffer) => (err += b.toString()));
  const t0 = performance.now();
  // wrk's sleeps between 0.3 s after its start and 0.3 s before its end, per answer of that
  // window at the run's rate (LoadResult.loadgenSleepsPerReq)
  const marks: { at: number; sleeps: number }[] = [];
  const mark = () => {
    const n = childSleeps(child.pid);
    if (n !== null) marks.push({ at: performance.now(), sleeps: n });
  };
  const timers = o.durationS >= 1 ? [setTimeout(mark, 300), setTimeout(mark, o.durationS * 1000 - 300)] : [];
  const done = new Promise<LoadResult>((resolve, reject) => {
    child.on('close', () => {
      for (const t of timers) clearTimeout(t);
      rmSync(dir, { recursive: true, force: true });
      const wallMs = performance.now() - t0;
      const line = out.split('\n').find((l) => l.startsWith('WRKJSON '));
      if (!line) return reject(new Error(`wrk gave no summary: ${err || out}`));
      const j = JSON.parse(line.slice(8)) as WrkJson;
      const dur = j.duration_us / 1e6;
      // without `expect`, wrk knows only "status > 399" (errors.status); 3xx count as answered
      const ok = o.expect ? (j.counts[String(o.expect)] ?? 0) : j.requests - j.status;
      const statusCodes: Record<string, number> = o.expect ? j.counts : { ok, '4xx/5xx': j.status };
      const errors = j.connect + j.read + j.write;
      resolve({
        rps: ok / dur,
        totalRps: j.requests / dur,
        p50: j.p50 / 1000,
        p90: j.p90 / 1000,
        p99: j.p99 / 1000,
        max: j.max / 1000,
        mean: j.mean / 1000,
        responses: j.requests,
        ok,
        non2xx: j.requests - ok,
        statusCodes,
        errors,
        timeouts: j.timeout,
        durationS: dur,
        bytesPerSec: j.bytes / dur,
        loadgenCpuPct: ((childCpuS(out) * 1000) / wallMs) * 100,
        ...(marks.length === 2 && j.requests ? { loadgenSleepsPerReq: (marks[1]!.sleeps - marks[0]!.sleeps) / ((j.requests / dur) * ((marks[1]!.at - marks[0]!.at) / 1000)) } : {}),
      });
    });
    child.on('error', reject);
  });
  // wrk stops on SIGINT and still prints its summary (measure.ts's scenario h stops its heavy load)
  return { done, stop: () => void child.kill('SIGINT') };
}
