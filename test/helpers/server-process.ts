// The built server (`node dist/src/hot/main.js`) as a child process with its own env and
// captured logs, tied to the test process; a request on a connection of its own (to reach
// either of several uWS threads); and the set-up of a test of several threads.
import { spawn, type ChildProcess } from 'node:child_process';
import { request as httpRequest } from 'node:http';
import { join } from 'node:path';
import { ROOT } from '../../src/hot/paths.js';
import { dieWithTest } from './die-with-test.js';
import { dropRedisPrefix } from './test-data.js';
import { sleep } from './wait.js';

export interface ServerProcess {
  proc: ChildProcess;
  /** the port it listens on, as its banner said */
  port: number;
  /** its /metrics listener's port, as its banner said (null with METRICS_ENABLED=false) */
  metricsPort: number | null;
  url: string;
  /** every stdout and stderr line so far (pino JSON and plain lines) */
  logs: string[];
  /** resolves with the exit code (or signal name) */
  exited: Promise<number | string>;
  signal(sig: NodeJS.Signals): void;
}

/**
 * Spawn `node dist/src/hot/main.js` with `env` on top of the current environment. Resolves
 * once it printed its banner (it is listening) — not necessarily ready. It listens on PORT=0
 * unless `env` names a port: the kernel picks a port no one holds and the banner names it
 * (a port found free beforehand can be taken by a parallel test before the server binds it,
 * and uWS binds with SO_REUSEPORT, so two servers could even share it without an error).
 */
export async function spawnServer(env: Record<string, string | undefined>, timeoutMs = 60_000): Promise<ServerProcess> {
  const proc = spawn(process.execPath, [join(ROOT, 'dist/src/hot/main.js')], {
    env: { ...process.env, NODE_ENV: 'test', HOST: '127.0.0.1', METRICS_PORT: '0', PORT: '0', PROXY_SOCKET_DIR: '', DNS_PORT: 'off', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  dieWithTest(proc);
  const logs: string[] = [];
  const exited = new Promise<number | string>((resolve) => proc.on('exit', (code, sig) => resolve(code ?? sig ?? -1)));
  let port = 0;
  let metricsPort: number | null = null;
  let listening: () => void = () => undefined;
  const up = new Promise<void>((r) => (listening = r));
  for (const stream of [proc.stdout!, proc.stderr!]) {
    let rest = '';
    stream.on('data', (d: Buffer) => {
      const lines = (rest + d.toString()).split('\n');
      rest = lines.pop()!;
      for (const l of lines) {
        logs.push(l);
        const m = /listening on http:\/\/[^\s]*:(\d+)/.exec(l);
        if (m) port = Number(m[1]);
        // the banner's metrics line follows its first line (when /metrics is on)
        const mm = /^ {2}metrics: +http:\/\/[^\s]*:(\d+)\/metrics/.exec(l);
        if (mm) metricsPort = Number(mm[1]);
        if (/^ {2}admin key:/.test(l) && port) listening();
      }
    });
    stream.on('end', () => rest && logs.push(rest));
  }
  const timer = new Promise<never>((_, reject) =>
    setTimeout(() => reject(new Error(`server did not start within ${timeoutMs} ms:\n${logs.slice(-20).join('\n')}`)), timeoutMs).unref(),
  );
  const early = exited.then((c) => {
    throw new Error(`server exited (${c}) before listening:\n${logs.slice(-20).join('\n')}`);
  });
  await Promise.race([up, timer, early]);
  early.catch(() => undefined);
  return { proc, port, metricsPort, url: `http://127.0.0.1:${port}`, logs, exited, signal: (s) => proc.kill(s) };
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

/**
 * spawnServer(env) for a test of several uWS threads (env.WORKERS): a start-up that hangs fails
 * with what the server said within 120 s; at teardown it gets SIGTERM, its exit is awaited and
 * its Redis keys (env.REDIS_KEY_PREFIX) are dropped. Resolves once the banner named the thread
 * count (asserted) and /readyz answered 200 (every thread has learnt the index generation), or
 * after 100 tries 50 ms apart.
 */
export async function spawnThreads(t: { teardown(fn: () => unknown): void; match(found: string, want: RegExp, message: string): void }, env: Record<string, string | undefined>, redisUrl: string): Promise<ServerProcess> {
  const srv = await spawnServer(env, 120_000);
  t.teardown(async () => {
    srv.signal('SIGTERM');
    await srv.exited;
    await dropRedisPrefix(redisUrl, env.REDIS_KEY_PREFIX!);
  });
  t.match(srv.logs.join('\n'), new RegExp(`listening on .*\\(${env.WORKERS} uWS threads\\)`), `${env.WORKERS} uWS threads`);
  for (let i = 0; i < 100 && (await requestAlone(srv.port, 'GET', '/readyz')).status !== 200; i++) await sleep(50);
  return srv;
}
