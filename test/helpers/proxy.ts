// The shipped nginx (deploy/nginx.conf rendered by scripts/proxy.sh) in front of a test
// server, on an ephemeral port with its own prefix directory, over the server's proxy
// sockets (socketDir(): give the same directory to both as PROXY_SOCKET_DIR) or its TCP
// port; and a small HTTP client that can choose its source address on the loopback network
// (127.0.0.0/8), so tests can be several "clients" and see what the server makes of their
// addresses.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { request, type Agent } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort } from './free-port.js';
import { waitFor } from './wait.js';

const root = fileURLToPath(new URL('../../../', import.meta.url));

export interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

export interface GetOptions {
  method?: string;
  headers?: Record<string, string>;
  body?: string;
  /** source address of the connection (127.0.0.x) */
  from?: string;
  agent?: Agent;
}

export function http(port: number, path: string, o: GetOptions = {}): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const r = request(
      { host: '127.0.0.1', port, path, method: o.method ?? 'GET', headers: o.headers, localAddress: o.from, agent: o.agent ?? false },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (body += c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
      },
    );
    r.on('error', reject);
    r.end(o.body);
  });
}

export interface Proxy {
  port: number;
  stderr(): string;
  close(): Promise<void>;
}

/**
 * A directory for a test server's proxy sockets (mode 0700, as the server wants it), removed
 * by `teardown`: PROXY_SOCKET_DIR for the server and for startProxy().
 */
export function socketDir(teardown: (f: () => void) => void): string {
  const dir = mkdtempSync(join(tmpdir(), 'registry-sock-'));
  teardown(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/**
 * Render the shipped config and run nginx in the foreground on a free port, in front of the
 * sockets in env.PROXY_SOCKET_DIR, or else of the server's TCP port `upstreamPort`.
 */
export async function startProxy(upstreamPort: number, env: Record<string, string> = {}): Promise<Proxy> {
  const port = await freePort();
  const prefix = mkdtempSync(join(tmpdir(), 'registry-proxy-'));
  const child: ChildProcess = spawn('bash', ['scripts/proxy.sh', 'run'], {
    cwd: root,
    env: { ...process.env, HOST: '127.0.0.1', PORT: String(upstreamPort), PROXY_PORT: String(port), PROXY_PREFIX: prefix, PROXY_SOCKET_DIR: '', ...env },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let err = '';
  child.stderr!.on('data', (b: Buffer) => (err += b.toString()));
  let gone = false;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  void exited.then(() => (gone = true));
  // ready once it answers; an exit before that fails at once, with what nginx said
  const answers = waitFor(`nginx to answer on ${port}`, () => http(port, '/livez').then((r) => r.status === 200), 20_000, 50);
  const died = exited.then(() => Promise.reject(new Error('nginx exited')));
  for (const p of [answers, died]) p.catch(() => undefined);
  await Promise.race([answers, died]).catch((e: Error) => Promise.reject(new Error(`${e.message}: ${err}`)));
  return {
    port,
    stderr: () => err,
    async close() {
      if (!gone) child.kill('SIGTERM'); // scripts/proxy.sh execs nginx: this is nginx's master
      await exited;
      rmSync(prefix, { recursive: true, force: true });
    },
  };
}
