// Real processes for fault tests: throw-away redis-server instances on free loopback ports,
// the built server (`node dist/src/hot/main.js`) as a child process with its own env and
// captured logs, and a tiny TCP proxy that can cut a connection path (refuse, or black-hole)
// to one server without touching the server itself.
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { createServer, connect, type Server as NetServer, type Socket } from 'node:net';
import { request as httpRequest } from 'node:http';
import { join } from 'node:path';
import pg from 'pg';
import { Redis } from 'ioredis';
import { ROOT } from '../../src/hot/paths.js';

export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** A port that was free a moment ago (the kernel picks it). */
export async function freePort(): Promise<number> {
  const s = createServer();
  s.listen(0, '127.0.0.1');
  await once(s, 'listening');
  const port = (s.address() as { port: number }).port;
  s.close();
  await once(s, 'close');
  return port;
}

/** Poll `probe` until it returns a truthy value; throws after `timeoutMs` (a hang detector). */
export async function waitFor<T>(what: string, probe: () => Promise<T | null | undefined | false> | T | null | undefined | false, timeoutMs = 20_000, everyMs = 100): Promise<T> {
  const end = Date.now() + timeoutMs;
  let last: unknown = null;
  for (;;) {
    try {
      const v = await probe();
      if (v) return v;
    } catch (e) {
      last = e;
    }
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}${last ? `: ${String(last)}` : ''}`);
    await sleep(everyMs);
  }
}

// ---------------------------------------------------------------- data

/**
 * Insert `n` services of namespace `ns` straight into PostgreSQL, in a few statements (fast
 * enough for tens of thousands; no outbox rows: the index learns them from a rebuild).
 * Service `<idPrefix><g>` (g = 1..n, zero-padded) has capabilities `cap<g % 7>` and
 * `seeded`, and the property `zone:z<g % 3>`.
 */
export async function seedServices(databaseUrl: string, n: number, ns = 'production', idPrefix = 'seed'): Promise<void> {
  const c = new pg.Client({ connectionString: databaseUrl });
  await c.connect();
  try {
    const id = `$2::text || lpad(g::text, 8, '0')`;
    const each = (cols: string, select: string) => `INSERT INTO ${cols} SELECT ${select} FROM generate_series(1, $1::int) g`;
    await c.query('BEGIN');
    await c.query(each('services (id, ns, endpoint)', `${id}, $3::text, 'https://' || ${id} || '.example.com/'`), [n, idPrefix, ns]);
    await c.query(each('service_capabilities (service_id, capability, ord)', `${id}, 'cap' || (g % 7), 1`), [n, idPrefix]);
    await c.query(each('service_capabilities (service_id, capability, ord)', `${id}, 'seeded', 2`), [n, idPrefix]);
    await c.query(each('service_properties (service_id, key, value)', `${id}, 'zone', 'z' || (g % 3)`), [n, idPrefix]);
    await c.query('COMMIT');
  } finally {
    await c.end();
  }
}

/** Delete every key under `prefix` in the (standalone) Redis at `url`: a child server's leftovers. */
export async function dropRedisPrefix(url: string, prefix: string): Promise<void> {
  const r = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 1 });
  r.on('error', () => undefined);
  try {
    await r.connect();
    let cursor = '0';
    do {
      const [next, keys] = await r.scan(cursor, 'MATCH', prefix + '*', 'COUNT', 1000);
      cursor = next;
      if (keys.length) await r.unlink(...keys);
    } while (cursor !== '0');
  } finally {
    r.disconnect();
  }
}

// ---------------------------------------------------------------- redis-server

/** Send one inline command to a Redis on loopback and return the first reply line. */
export async function redisCommand(port: number, line: string, timeoutMs = 2000): Promise<string> {
  return new Promise((resolve, reject) => {
    const s = connect(port, '127.0.0.1');
    let buf = '';
    const t = setTimeout(() => {
      s.destroy();
      reject(new Error(`redis :${port} did not answer ${line}`));
    }, timeoutMs);
    s.on('error', (e) => {
      clearTimeout(t);
      reject(e);
    });
    s.on('connect', () => s.write(line + '\r\n'));
    s.on('data', (d) => {
      buf += d.toString();
      const i = buf.indexOf('\r\n');
      if (i >= 0) {
        clearTimeout(t);
        s.destroy();
        resolve(buf.slice(0, i));
      }
    });
  });
}

class RedisStartError extends Error {}

export interface RedisProcess {
  port: number;
  url: string;
  /** stop it (SIGKILL: no persistence anyway, and the fastest "crash") */
  kill(): Promise<void>;
  /** start a fresh, empty redis-server on the same port */
  restart(): Promise<void>;
  running(): boolean;
  /** the running redis-server's pid (null when stopped) */
  pid(): number | null;
}

/**
 * Tie `child` to this test process: a detached watchdog stops it (SIGTERM, SIGKILL 5 s later)
 * once this process is gone, and itself ends when the child does. A test process killed
 * from outside (tap's timeout, a SIGKILL, a crash) runs no teardown, and its servers used
 * to live on: listening, sweeping and using CPU through later tests and benchmarks.
 */
export function dieWithTest(child: ChildProcess): void {
  const pid = child.pid;
  if (!pid) return;
  const watch = `while kill -0 ${process.pid} 2>/dev/null; do kill -0 ${pid} 2>/dev/null || exit 0; sleep 1; done; kill -TERM ${pid} 2>/dev/null; sleep 5; kill -KILL ${pid} 2>/dev/null; exit 0`;
  spawn('sh', ['-c', watch], { detached: true, stdio: 'ignore' }).unref();
}

/**
 * A throw-away redis-server: no persistence, loopback only, killed by the caller. Its log is
 * kept (the last 4 KB): a server that exits before it answers fails at once with that log,
 * instead of a bare "timed out" (CI has no other way to show why). When the caller gave no
 * port, a server that dies on start (another process took the port between freePort() and
 * the bind) is tried again on a fresh port, up to three times.
 */
export async function startRedis(extraArgs: string[] | (() => Promise<string[]>) = [], port?: number): Promise<RedisProcess> {
  let p = port ?? (await freePort());
  let proc: ChildProcess | null = null;
  const argsFor = async () => (typeof extraArgs === 'function' ? await extraArgs() : extraArgs);
  let args = await argsFor();
  const start = async () => {
    const child = spawn('redis-server', ['--port', String(p), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', '/tmp', ...args], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    proc = child;
    dieWithTest(child);
    let log = '';
    const keep = (d: Buffer) => {
      log = (log + d.toString()).slice(-4096);
    };
    child.stdout!.on('data', keep);
    child.stderr!.on('data', keep);
    let exited: number | string | null = null;
    child.on('exit', (code, signal) => {
      exited = code ?? signal ?? 'exit';
      if (proc === child) proc = null;
    });
    await waitFor(`redis-server on :${p}`, async () => {
      if (exited !== null) throw new RedisStartError(`redis-server on :${p} exited (${exited}) before answering; its log:\n${log}`);
      return (await redisCommand(p, 'PING')) === '+PONG';
    }, 10_000, 50).catch((e: unknown) => {
      throw exited !== null ? new RedisStartError(`redis-server on :${p} exited (${exited}) before answering; its log:\n${log}`) : e;
    });
  };
  for (let attempt = 1; ; attempt++) {
    try {
      await start();
      break;
    } catch (e) {
      if (port !== undefined || !(e instanceof RedisStartError) || attempt >= 3) throw e;
      p = await freePort();
      args = await argsFor();
    }
  }
  const kill = async () => {
    const c = proc;
    if (!c) return;
    const gone = once(c, 'exit');
    c.kill('SIGKILL');
    await gone;
  };
  return {
    port: p,
    url: `redis://127.0.0.1:${p}`,
    running: () => proc !== null,
    pid: () => proc?.pid ?? null,
    kill,
    async restart() {
      await kill();
      await start();
    },
  };
}

// ---------------------------------------------------------------- the built server

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
    env: { ...process.env, NODE_ENV: 'test', HOST: '127.0.0.1', METRICS_PORT: '0', PORT: '0', ...env },
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

// ---------------------------------------------------------------- TCP proxy

export type ProxyMode = 'pass' | 'refuse' | 'blackhole';

export interface TcpProxy {
  port: number;
  mode: ProxyMode;
  /**
   * pass: forward. refuse: drop every connection and refuse new ones (the server went
   * away). blackhole: keep connections open but hold every byte (a network partition: TCP
   * keeps the bytes, so they arrive, in order, once it passes again).
   */
  set(mode: ProxyMode): Promise<void>;
  close(): Promise<void>;
}

/** A loopback TCP proxy in front of 127.0.0.1:targetPort. */
export async function startProxy(targetPort: number): Promise<TcpProxy> {
  const pairs = new Set<[Socket, Socket]>();
  let mode: ProxyMode = 'pass';
  let server: NetServer | null = null;
  let port = 0;
  const onConn = (client: Socket) => {
    const upstream = connect(targetPort, '127.0.0.1');
    const pair: [Socket, Socket] = [client, upstream];
    pairs.add(pair);
    const drop = () => {
      pairs.delete(pair);
      client.destroy();
      upstream.destroy();
    };
    for (const [from, to] of [
      [client, upstream],
      [upstream, client],
    ] as const) {
      from.on('error', drop);
      from.on('close', drop);
      from.on('data', (d) => to.write(d));
      if (mode === 'blackhole') from.pause();
    }
  };
  const listen = async () => {
    server = createServer(onConn);
    server.listen(port, '127.0.0.1');
    await once(server, 'listening');
    port = (server.address() as { port: number }).port;
  };
  const unlisten = async () => {
    const s = server;
    server = null;
    if (s) await new Promise<void>((r) => s.close(() => r()));
  };
  const dropAll = () => {
    for (const [a, b] of pairs) {
      a.destroy();
      b.destroy();
    }
    pairs.clear();
  };
  await listen();
  return {
    get port() {
      return port;
    },
    get mode() {
      return mode;
    },
    async set(next) {
      mode = next;
      for (const [a, b] of pairs) {
        if (next === 'blackhole') {
          a.pause();
          b.pause();
        } else {
          a.resume();
          b.resume();
        }
      }
      if (next === 'refuse') {
        dropAll();
        await unlisten();
      } else if (!server) await listen();
    },
    async close() {
      mode = 'refuse';
      dropAll();
      await unlisten();
    },
  };
}

/** A raw HTTP/1.1 exchange on a socket we control (slow, partial and keep-alive requests). */
export function rawSocket(port: number): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const s = connect(port, '127.0.0.1', () => resolve(s));
    s.on('error', reject);
  });
}

/** Everything a socket receives until it closes or `idleMs` pass without data. */
export function collect(s: Socket, idleMs = 1000): Promise<{ data: string; closed: boolean }> {
  return new Promise((resolve) => {
    let data = '';
    let t: NodeJS.Timeout = setTimeout(() => finish(false), idleMs);
    const finish = (closed: boolean) => {
      clearTimeout(t);
      s.removeAllListeners('data');
      resolve({ data, closed });
    };
    s.on('data', (d) => {
      data += d.toString('latin1');
      clearTimeout(t);
      t = setTimeout(() => finish(false), idleMs);
    });
    s.once('close', () => finish(true));
  });
}
