// The discovery tests' real tools and backends: a tool's path from scripts/services.sh (which
// installs Debian's package when it is missing), a tool run as a child process tied to the
// test, and little HTTP servers that stand for the backends a registry lists (each answers
// its name and counts its requests).
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { ROOT } from '../../src/hot/paths.js';
import { dieWithTest } from '../helpers/die-with-test.js';

const run = promisify(execFile);
const paths = new Map<string, Promise<string>>();

/** The path of `tool` (prometheus, haproxy, python-consul, dig, dnsperf): scripts/services.sh installs it when missing. */
export function toolPath(tool: string): Promise<string> {
  let p = paths.get(tool);
  if (!p) {
    p = run('bash', [join(ROOT, 'scripts', 'services.sh'), tool], { maxBuffer: 1 << 20 }).then((r) => r.stdout.trim());
    paths.set(tool, p);
  }
  return p;
}

/** A directory of its own, removed at teardown. */
export async function scratchDir(teardown: (f: () => Promise<void>) => void, name: string): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), `${name}-`));
  teardown(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

export interface Child {
  proc: ChildProcess;
  /** stdout and stderr so far */
  output(): string;
  stop(): Promise<void>;
}

/** `bin args` as a child of the test (stopped at teardown, and by the watchdog if the test dies). */
export function startTool(bin: string, args: string[]): Child {
  const proc = spawn(bin, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  dieWithTest(proc);
  let out = '';
  proc.stdout!.on('data', (d: Buffer) => (out = (out + d.toString()).slice(-20_000)));
  proc.stderr!.on('data', (d: Buffer) => (out = (out + d.toString()).slice(-20_000)));
  const exited = once(proc, 'exit');
  return {
    proc,
    output: () => out,
    async stop() {
      if (proc.exitCode !== null || proc.signalCode !== null) return;
      proc.kill('SIGTERM');
      const timer = setTimeout(() => proc.kill('SIGKILL'), 5000);
      await exited;
      clearTimeout(timer);
    },
  };
}

export interface Backend {
  name: string;
  port: number;
  /** requests it answered, by path */
  hits: Map<string, number>;
  close(): Promise<void>;
}

/** An HTTP server on 127.0.0.1 that answers every request with its name (and /metrics in Prometheus's text format). */
export async function startBackend(name: string): Promise<Backend> {
  const hits = new Map<string, number>();
  const server: Server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0]!;
    hits.set(path, (hits.get(path) ?? 0) + 1);
    if (path === '/metrics') {
      res.writeHead(200, { 'content-type': 'text/plain; version=0.0.4' });
      res.end(`# HELP backend_info The backend's name\n# TYPE backend_info gauge\nbackend_info{name="${name}"} 1\n`);
      return;
    }
    res.writeHead(200, { 'content-type': 'text/plain', connection: 'close' });
    res.end(name);
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return {
    name,
    port: (server.address() as { port: number }).port,
    hits,
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}
