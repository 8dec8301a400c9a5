// Throw-away redis-server instances on free loopback ports (no persistence), tied to the test
// process, that can be killed and restarted empty on the same port; and one inline command
// sent to such a server without a client library.
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { connect } from 'node:net';
import { dieWithTest } from './die-with-test.js';
import { freePort } from './free-port.js';
import { waitFor } from './wait.js';

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
