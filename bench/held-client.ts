// The client side of bench/held.ts: servers in processes of their own (held-server.ts), held
// requests on raw sockets from many loopback addresses, writes with the admin key, and the
// small statistics the table needs.
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { connect, type Socket } from 'node:net';
import { join } from 'node:path';
import { ROOT } from '../src/hot/paths.js';
import { freePort, get } from './procs.js';
import type { Measured } from './held-server.js';

export const ADMIN = randomBytes(16).toString('hex');
export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
export const cap = (q: number) => `held${q}`;

/** One held request on a socket of its own; `done` resolves with the time (ms) its answer's first bytes came, and its status. */
export interface Holder {
  sock: Socket;
  q: number;
  done: Promise<{ at: number; status: number }>;
}

export function hold(port: number, from: string, q: number, etag: string, wait: number): Promise<Holder> {
  return new Promise((resolve, reject) => {
    const sock = connect({ port, host: '127.0.0.1', localAddress: from });
    let answered: (v: { at: number; status: number }) => void = () => undefined;
    const done = new Promise<{ at: number; status: number }>((r) => (answered = r));
    sock.once('data', (d: Buffer) => {
      answered({ at: performance.now(), status: Number(d.toString('latin1', 9, 12)) });
      sock.destroy();
    });
    sock.once('error', reject);
    sock.once('connect', () => {
      sock.write(`GET /services?capability=${cap(q)} HTTP/1.1\r\nHost: b\r\nIf-None-Match: ${etag}\r\nPrefer: wait=${wait}\r\n\r\n`);
      resolve({ sock, q, done });
    });
  });
}

export const gauge = async (metricsPort: number) => Number(/^registry_held_requests (\d+)/m.exec((await get(`http://127.0.0.1:${metricsPort}/metrics`)).body.toString())?.[1] ?? 0);

export async function until(what: string, f: () => Promise<boolean>, ms = 120_000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await f())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(200);
  }
}

export const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)]! : NaN;
};

export interface Node {
  proc: ChildProcess;
  port: number;
  metrics: number;
  /** its memory after a full garbage collection (held-server.ts) */
  measure(): Promise<Measured>;
  stop(): Promise<void>;
}

/** attempts at starting a node whose ports were taken between freePort() and its listen */
const START_ATTEMPTS = 3;

/**
 * A serving thread in a process of its own (held-server.ts: --expose-gc, memory on request),
 * pinned to `cpus`. Its ports were free a moment before it binds them: one taken meanwhile (by
 * another test's process, or as the local port of an outgoing connection) ends it with
 * a listen error, and it is started again on new ones.
 */
export async function startNode(url: string, prefix: string, cpus: string | null, name: string): Promise<Node> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await startOnce(url, prefix, cpus, name);
    } catch (e) {
      // (uWS says only that it cannot listen; the metrics listener, EADDRINUSE)
      if (attempt >= START_ATTEMPTS || !/EADDRINUSE|cannot listen on/.test(String(e))) throw e;
    }
  }
}

async function startOnce(url: string, prefix: string, cpus: string | null, name: string): Promise<Node> {
  const [port, metrics] = [await freePort(), await freePort()];
  const env = { ...process.env, DATABASE_URL: url, REDIS_KEY_PREFIX: prefix, PORT: String(port), METRICS_PORT: String(metrics), HOST: '127.0.0.1', NODE_ENV: 'production', ADMIN_API_KEY: ADMIN, LOG_LEVEL: 'warn', HELD_MAX: '100000' };
  // BENCH_SERVER_CPU_PROF=<dir>: node A writes a V8 CPU profile there when it stops
  const prof = process.env.BENCH_SERVER_CPU_PROF && name === 'a' ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_SERVER_CPU_PROF}`] : [];
  const argv = ['--expose-gc', ...prof, join(ROOT, 'dist/bench/held-server.js')];
  const proc = spawn(cpus ? 'taskset' : process.execPath, cpus ? ['-c', cpus, process.execPath, ...argv] : argv, { env, stdio: ['ignore', 'ignore', 'pipe', 'ipc'] });
  process.once('exit', () => proc.kill('SIGKILL'));
  // its standard error passed on, the start of it kept for the error of a node that never got ready
  let said = '';
  proc.stderr!.on('data', (d: Buffer) => {
    process.stderr.write(d);
    if (said.length < 4000) said += d.toString();
  });
  await new Promise<void>((ok, fail) => {
    proc.once('message', () => ok());
    proc.once('close', (code) => fail(new Error(`node ${name} exited (${code}) before it was ready: ${said.slice(0, 4000)}`)));
  });
  const measure = () => new Promise<Measured>((ok) => {
    proc.once('message', (m) => ok(m as Measured));
    proc.send('measure');
  });
  const stop = async () => {
    if (proc.exitCode !== null) return;
    proc.send('stop');
    await new Promise((r) => proc.once('exit', r));
  };
  return { proc, port, metrics, measure, stop };
}

/** A production write with the admin key; resolves at its 2xx with when it was sent and when its 2xx came (ms). */
export async function write(port: number, q: number): Promise<{ sent: number; at: number }> {
  const sent = performance.now();
  const r = await fetch(`http://127.0.0.1:${port}/admin/api/services`, { method: 'POST', headers: { authorization: `Bearer ${ADMIN}`, 'content-type': 'application/json' }, body: JSON.stringify({ endpoint: `https://w${randomBytes(4).toString('hex')}.example.com`, capabilities: [cap(q)] }) });
  const at = performance.now();
  if (r.status !== 201) throw new Error(`write: ${r.status} ${await r.text()}`);
  return { sent, at };
}

export const etagOf = async (port: number, q: number) => (await get(`http://127.0.0.1:${port}/services?capability=${cap(q)}`)).headers.find(([k]) => k.toLowerCase() === 'etag')![1];

/** `count` requests held on query `q` of `node`, from addresses 127.0.<a>.<b> (at most 150 an address). */
export async function holdMany(node: Node, qs: number[], first: number, wait: number): Promise<Holder[]> {
  const etags = new Map<number, string>();
  for (const q of new Set(qs)) etags.set(q, await etagOf(node.port, q));
  const out: Holder[] = [];
  for (let i = 0; i < qs.length; i += 200) {
    const batch = qs.slice(i, i + 200).map((q, k) => {
      const n = first + i + k;
      return hold(node.port, `127.0.${1 + Math.floor(n / 150 / 250)}.${1 + (Math.floor(n / 150) % 250)}`, q, etags.get(q)!, wait);
    });
    out.push(...(await Promise.all(batch)));
  }
  return out;
}

/** The slope (y per x) of the least-squares line through `p`. */
export function leastSquares(p: [number, number][]): number {
  const mx = p.reduce((a, [x]) => a + x, 0) / p.length;
  const my = p.reduce((a, [, y]) => a + y, 0) / p.length;
  return p.reduce((a, [x, y]) => a + (x - mx) * (y - my), 0) / p.reduce((a, [x]) => a + (x - mx) ** 2, 0);
}

/** The node's memory after a full collection, once what it was doing settled (a second). */
export async function settled(n: Node): Promise<Measured> {
  await sleep(1000);
  return n.measure();
}
