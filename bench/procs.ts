// Child processes of the bench: CPU pinning with taskset, the real server and the ceiling
// server as children on a free loopback port, readiness polling, and a raw HTTP GET that
// keeps header order and case (the ceiling must answer with exactly those bytes).
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { createWriteStream, readFileSync } from 'node:fs';
import { request } from 'node:http';
import { createServer } from 'node:net';
import { cpus } from 'node:os';

/**
 * Cores of the machine. Not availableParallelism(): that follows this process's affinity,
 * and after the re-exec under taskset it would say 1.
 */
export const NPROC = cpus().length;
export const HAS_TASKSET = spawnSync('taskset', ['-p', String(process.pid)], { stdio: 'ignore' }).status === 0;

/** The load generator's core: the last one. Servers get the others (core 0 first). */
export const LOADGEN_CPU = NPROC - 1;

export interface Pinning {
  /** taskset cpu list for the server, or null when it runs on every core */
  server: string | null;
  loadgen: string | null;
  note: string;
}

/**
 * Where a server with `threads` threads runs. With fewer threads than cores it gets cores
 * 0..threads-1 and the load generator keeps its core to itself; otherwise it spans every
 * core, the load generator's included, and the note says so.
 */
export function pinning(threads: number, pin: boolean): Pinning {
  if (!pin || !HAS_TASKSET || NPROC < 2) {
    return { server: null, loadgen: null, note: `no pinning (${!pin ? '--no-pin' : !HAS_TASKSET ? 'taskset missing' : 'one core'}): server and load generator share every core` };
  }
  const loadgen = String(LOADGEN_CPU);
  if (threads < NPROC) {
    const server = threads === 1 ? '0' : `0-${threads - 1}`;
    return { server, loadgen, note: `server pinned to core ${server} (taskset -c ${server}), load generator pinned to core ${loadgen}` };
  }
  return { server: `0-${NPROC - 1}`, loadgen, note: `server on every core (0-${NPROC - 1}): it shares core ${loadgen} with the load generator` };
}

/** the first port the kernel hands to outgoing connections (ip_local_port_range) */
const EPHEMERAL_FROM = (() => {
  try {
    return Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]) || 32768;
  } catch {
    return 32768;
  }
})();
/** where freePort() draws from: below the ephemeral range, never a well-known port */
const DRAW_FROM = 20_000;

/** Whether `port` can be listened on at 127.0.0.1 now (0: any; the port listened on, or null). */
function tryPort(port: number): Promise<number | null> {
  return new Promise((resolve) => {
    const s = createServer();
    s.once('error', () => resolve(null));
    s.listen(port, '127.0.0.1', () => {
      const a = s.address();
      s.close(() => resolve(a && typeof a === 'object' ? a.port : null));
    });
  });
}

/**
 * A loopback port that was free a moment ago, for a child or a listener that must be told its
 * port before it binds. Drawn at random below the kernel's ephemeral range: a port the kernel
 * picked (listen on 0) goes back to the pool it draws outgoing connections' local ports from,
 * and one of those (a Redis or PostgreSQL client) could take it before the child binds it.
 */
export async function freePort(): Promise<number> {
  if (EPHEMERAL_FROM > DRAW_FROM + 1000) {
    for (let i = 0; i < 20; i++) {
      const p = await tryPort(DRAW_FROM + Math.floor(Math.random() * (EPHEMERAL_FROM - DRAW_FROM)));
      if (p !== null) return p;
    }
  }
  const p = await tryPort(0);
  if (p === null) throw new Error('no free port');
  return p;
}

/** Children still running: killed when the bench exits or is interrupted, never left behind. */
const live = new Set<ChildProcess>();
let guarded = false;

/** Installed with the first child only: the re-exec parent of run.ts handles its signals itself. */
function guard(): void {
  if (guarded) return;
  guarded = true;
  process.once('exit', () => {
    for (const c of live) c.kill('SIGKILL');
  });
  for (const sig of ['SIGINT', 'SIGTERM'] as const) {
    process.once(sig, () => {
      for (const c of live) c.kill('SIGTERM');
      process.exit(130);
    });
  }
}

export interface Child {
  proc: ChildProcess;
  exited: Promise<number | null>;
  log: string;
  stop(): Promise<void>;
}

/**
 * node <script> under taskset (when `cpus` is set), stdout+stderr written to `log`.
 * BENCH_SERVER_CPU_PROF=<dir>: the server (dist/src/hot/main.js) writes a V8 CPU profile
 * there (Node refuses --cpu-prof in NODE_OPTIONS).
 */
export function spawnNode(script: string, args: string[], env: Record<string, string>, cpus: string | null, log: string, nodeArgs: string[] = []): Child {
  // BENCH_SERVER_NODE_ARGS: more node flags for the server (e.g. "--trace-gc"), split on spaces
  const extra = process.env.BENCH_SERVER_NODE_ARGS;
  if (extra && script.endsWith('src/hot/main.js')) nodeArgs = [...nodeArgs, ...extra.split(' ').filter(Boolean)];
  const prof = process.env.BENCH_SERVER_CPU_PROF;
  if (prof && script.endsWith('src/hot/main.js') && !nodeArgs.includes('--cpu-prof')) nodeArgs = [...nodeArgs, '--cpu-prof', `--cpu-prof-dir=${prof}`];
  const out = createWriteStream(log, { flags: 'w' });
  const cmd = cpus ? 'taskset' : process.execPath;
  const argv = cpus ? ['-c', cpus, process.execPath, ...nodeArgs, script, ...args] : [...nodeArgs, script, ...args];
  // the caller's environment passes through unread; the bench's settings go on top (a bench
  // server runs no DNS server unless the bench asks for one: two would clash on port 8600)
  const proc = spawn(cmd, argv, { env: { DNS_PORT: 'off', ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  proc.stdout!.pipe(out);
  proc.stderr!.pipe(out);
  guard();
  live.add(proc);
  const exited = new Promise<number | null>((resolve) =>
    proc.once('exit', (code) => {
      live.delete(proc);
      resolve(code);
    }),
  );
  return {
    proc,
    exited,
    log,
    async stop() {
      if (proc.exitCode !== null || proc.signalCode !== null) return;
      proc.kill('SIGTERM');
      const t = setTimeout(() => proc.kill('SIGKILL'), 5000);
      await exited;
      clearTimeout(t);
    },
  };
}

export interface RawResponse {
  status: number;
  statusText: string;
  /** as sent: order and case kept */
  headers: [string, string][];
  body: Buffer;
}

export function get(url: string, headers: Record<string, string> = {}): Promise<RawResponse> {
  return new Promise((resolve, reject) => {
    const req = request(url, { method: 'GET', headers, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const h: [string, string][] = [];
        for (let i = 0; i + 1 < res.rawHeaders.length; i += 2) h.push([res.rawHeaders[i]!, res.rawHeaders[i + 1]!]);
        resolve({ status: res.statusCode ?? 0, statusText: res.statusMessage ?? '', headers: h, body: Buffer.concat(chunks) });
      });
      res.on('error', reject);
    });
    req.setTimeout(10_000, () => req.destroy(new Error(`GET ${url} timed out`)));
    req.on('error', reject);
    req.end();
  });
}

/** Poll `url` until it answers 200; fail early when the child dies. */
export async function waitFor200(url: string, child: Child, timeoutMs: number): Promise<void> {
  const end = Date.now() + timeoutMs;
  let last = 'no answer';
  let dead = false;
  void child.exited.then(() => (dead = true));
  while (Date.now() < end) {
    if (dead) throw new Error(`the child exited (code ${child.proc.exitCode}) before ${url} answered 200; see ${child.log}`);
    try {
      const r = await get(url);
      if (r.status === 200) return;
      last = `${r.status} ${r.body.toString().slice(0, 200)}`;
    } catch (e) {
      last = (e as Error).message;
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`${url} did not answer 200 within ${timeoutMs} ms (last: ${last}); see ${child.log}`);
}
