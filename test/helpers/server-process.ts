// The built server (`node dist/src/hot/main.js`) as a child process, for what one process of
// its own shows (several uWS threads, signals, a SIGKILL, its whole log): placed like serve(t)'s
// (server.ts place(): a fresh database and key prefix, `on` another node, `through` proxies)
// and torn down with `t` the same way. And a request on a connection of its own (to reach
// either of several uWS threads).
import { spawn, type ChildProcess } from 'node:child_process';
import { request as httpRequest } from 'node:http';
import { join } from 'node:path';
import type { Test } from 'tap';
import { loadConfig, type Config } from '../../src/hot/config.js';
import { ROOT } from '../../src/hot/paths.js';
import { dieWithTest } from './die-with-test.js';
import { place, type Placement } from './server.js';
import { waitFor } from './wait.js';
import { baseEnv } from './env.js';

export interface ServerProcess {
  proc: ChildProcess;
  /** its configuration, as it read it (the database and key prefix a test looks into) */
  cfg: Config;
  /** the port it listens on, as its banner said (0 before the banner) */
  port: number;
  /** its /metrics listener's port, as its banner said (null with METRICS_ENABLED=false) */
  metricsPort: number | null;
  url: string;
  /** every stdout and stderr line so far (pino JSON and plain lines) */
  logs: string[];
  /** the stderr lines alone */
  stderr: string[];
  /** resolves with the exit code (or signal name) */
  exited: Promise<number | string>;
  signal(sig: NodeJS.Signals): void;
}

export interface ProcessOptions extends Placement {
  /** variables on top of the test defaults (env.ts baseEnv()) */
  env?: Record<string, string | undefined>;
  /** WORKERS: the banner must name that many uWS threads (asserted) */
  threads?: number;
  /** the teardown's signal: SIGTERM (default: a graceful stop) or SIGKILL (no drain at all) */
  stop?: 'SIGTERM' | 'SIGKILL';
  /** resolve once /readyz answered 200 (default), or at once: a start the test expects to fail */
  until?: 'ready' | 'spawned';
}

/**
 * The built server for the test `t`, stopped when `t` ends (the signal, its exit awaited, its
 * keys and fresh database dropped). It listens on PORT=0 unless `env` names a port: the kernel
 * picks a port no one holds and the banner names it (a port found free beforehand can be taken
 * by a parallel test before the server binds it, and uWS binds with SO_REUSEPORT, so two
 * servers could even share it without an error).
 */
export async function serveProcess(t: Test, opts: ProcessOptions = {}): Promise<ServerProcess> {
  const placed = await place(opts);
  const env = { ...baseEnv(), HOST: '127.0.0.1', ...placed.env, ...(opts.threads ? { WORKERS: String(opts.threads) } : {}), ...opts.env };
  const { srv, listening } = launch(env);
  t.teardown(async () => {
    await placed.mend();
    srv.signal(opts.stop ?? 'SIGTERM');
    await srv.exited;
    await placed.dropState(srv.cfg);
  });
  if (opts.until === 'spawned') return srv;
  await listening;
  if (opts.threads) t.match(srv.logs.join('\n'), new RegExp(`listening on .*\\(${opts.threads} uWS threads\\)`), `${opts.threads} uWS threads`);
  // ready: every thread has learnt the index generation
  await waitFor('the server to be ready', async () => (await requestAlone(srv.port, 'GET', '/readyz')).status === 200, 60_000, 50);
  return srv;
}

/** Spawn main.js with `env`; `listening` resolves once it printed its banner (not necessarily ready). */
function launch(env: Record<string, string | undefined>): { srv: ServerProcess; listening: Promise<void> } {
  const proc = spawn(process.execPath, [join(ROOT, 'dist/src/hot/main.js')], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  dieWithTest(proc);
  const exited = new Promise<number | string>((resolve) => proc.on('exit', (code, sig) => resolve(code ?? sig ?? -1)));
  const srv: ServerProcess = { proc, cfg: loadConfig(env), port: 0, metricsPort: null, url: '', logs: [], stderr: [], exited, signal: (s) => proc.kill(s) };
  let up: () => void = () => undefined;
  const banner = new Promise<void>((r) => (up = r));
  for (const stream of [proc.stdout!, proc.stderr!]) {
    let rest = '';
    stream.on('data', (d: Buffer) => {
      const lines = (rest + d.toString()).split('\n');
      rest = lines.pop()!;
      for (const l of lines) {
        srv.logs.push(l);
        if (stream === proc.stderr) srv.stderr.push(l);
        const m = /listening on http:\/\/[^\s]*:(\d+)/.exec(l);
        if (m) srv.port = Number(m[1]);
        // the banner's metrics line follows its first line (when /metrics is on)
        const mm = /^ {2}metrics: +http:\/\/[^\s]*:(\d+)\/metrics/.exec(l);
        if (mm) srv.metricsPort = Number(mm[1]);
        if (/^ {2}admin key:/.test(l) && srv.port) {
          srv.url = `http://127.0.0.1:${srv.port}`;
          up();
        }
      }
    });
    stream.on('end', () => rest && srv.logs.push(rest));
  }
  // a start-up that hangs fails with what the server said
  const timer = new Promise<never>((_, reject) =>
    setTimeout(() => reject(new Error(`server did not start within 120 s:\n${srv.logs.slice(-20).join('\n')}`)), 120_000).unref(),
  );
  const early = exited.then((c) => {
    throw new Error(`server exited (${c}) before listening:\n${srv.logs.slice(-20).join('\n')}`);
  });
  const listening = Promise.race([banner, timer, early]);
  early.catch(() => undefined);
  listening.catch(() => undefined);
  return { srv, listening };
}

/**
 * A request on a connection of its own (no keep-alive): on a server with several uWS threads
 * each may land on either (the kernel spreads connections). A body goes as JSON with
 * `authorization`. No answer within 60 s is a hang: it fails with the request named, not at
 * tap's timeout.
 */
export function requestAlone(port: number, method: string, path: string, body?: unknown, authorization?: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const data = body === undefined ? undefined : JSON.stringify(body);
    const headers: Record<string, string> = { connection: 'close' };
    if (data) Object.assign(headers, { 'content-type': 'application/json' }, authorization ? { authorization } : {});
    const r = httpRequest({ host: '127.0.0.1', port, path, method, agent: false, headers }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (text += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text }));
    });
    r.on('error', reject);
    r.setTimeout(60_000, () => r.destroy(new Error(`no answer to ${method} ${path} within 60 s`)));
    r.end(data);
  });
}
