// One load run of the liveness bench's heartbeat part (bench/liveness.ts): autocannon or wrk
// sends one request for a number of seconds (with a fleet, wrk sends each fleet service's
// heartbeat in turn), and the run reports its requests a second and where the CPU went:
// the server under test, Redis and the generator.
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { promisify } from 'node:util';
import type { RedisClient } from '../src/hot/redis/client.js';
import { redisCpuS } from './cpu.js';
import { childCpuS } from './wrk.js';

const run = promisify(execFile);

/** One load run: requests a second, and the CPU seconds the load generator used (wrk only). */
interface Run {
  rps: number;
  genCpu: number;
}

/** the fleet's heartbeats (--fleet): [path, token] of each service of one namespace */
export type Fleet = { prefix: string; beats: [string, string][] }[];

export interface LoadSettings {
  /** seconds of a measured run (--duration) */
  duration: number;
  connections: number;
  generator: string;
  fleet: Fleet;
  /** the server's Redis, whose CPU each run of cannon() reports (generate() needs none) */
  redis?: RedisClient;
}

/** The load runs of one bench: `generate` loads a URL, `cannon` also says where the CPU went. */
export function heartbeatLoad(o: LoadSettings) {
  /**
   * wrk (C, one thread: does not saturate before a one-core uWS server) with the same request.
   * Run under bash so that its `times` builtin reports wrk's CPU (user + system of the child):
   * a generator near a full core is the bound, not the server.
   */
  async function wrk(url: string, token: string, method: string, dur: number): Promise<Run> {
    const dir = mkdtempSync('/tmp/wrk-lv-');
    const file = `${dir}/hb.lua`;
    // a URL that ends in a fleet service's heartbeat path: that namespace's fleet, in turn
    const f = method === 'PUT' ? o.fleet.find((x) => url.includes(x.prefix)) : undefined;
    if (f) {
      const list = (i: 0 | 1) => f.beats.map((b) => JSON.stringify(b[i])).join(',');
      writeFileSync(
        file,
        `local paths = {${list(0)}}\nlocal toks = {${list(1)}}\nlocal i = 0\n` +
          `request = function()\n  i = i % #paths + 1\n  return wrk.format("PUT", paths[i], { ["authorization"] = "Bearer " .. toks[i] })\nend\n`,
      );
    } else writeFileSync(file, `wrk.method = "${method}"\nwrk.headers["authorization"] = "Bearer ${token}"\n`);
    try {
      const { stdout } = await run('bash', ['-c', 'wrk "$@" && times', 'wrk', '-t1', `-c${o.connections}`, `-d${dur}s`, '-s', file, url], { maxBuffer: 1 << 26 });
      const bad = /Non-2xx or 3xx responses: (\d+)/.exec(stdout);
      const errs = /Socket errors: (.*)/.exec(stdout);
      if (bad || errs) throw new Error(`${url}: ${bad?.[0] ?? ''} ${errs?.[0] ?? ''}`);
      // `times`: the shell's own user/system line, then its children's ("0m1.234s 0m0.567s")
      return { rps: Number(/Requests\/sec:\s+([\d.]+)/.exec(stdout)![1]), genCpu: childCpuS(stdout) };
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }

  async function generate(url: string, token: string, method: string, dur = o.duration): Promise<Run> {
    if (o.generator === 'wrk') return wrk(url, token, method, dur);
    const { stdout } = await run('npx', ['autocannon', '-j', '-m', method, '-H', `authorization=Bearer ${token}`, '-c', String(o.connections), '-d', String(dur), url], { maxBuffer: 1 << 26 });
    const r = JSON.parse(stdout) as { requests: { average: number }; non2xx: number; errors: number };
    if (r.non2xx || r.errors) throw new Error(`${url}: ${r.non2xx} non-2xx, ${r.errors} errors`);
    return { rps: r.requests.average, genCpu: NaN };
  }

  /**
   * One load run, with where the CPU went: this process (the server under test, or the
   * ceiling app: both run on this thread, one at a time), Redis and the generator, as % of a
   * core over the run, and this process's µs of CPU per request. The lines say whether the
   * generator was the bound (near 100 %) and what the server costs per request.
   */
  async function cannon(url: string, token: string, method = 'PUT', label = url): Promise<number> {
    const t0 = performance.now();
    const c0 = process.cpuUsage();
    const r0 = o.redis ? await redisCpuS(o.redis) : NaN;
    const r = await generate(url, token, method);
    const c = process.cpuUsage(c0);
    const wall = (performance.now() - t0) / 1000;
    const node = (c.user + c.system) / 1e6;
    const redis = o.redis ? (await redisCpuS(o.redis)) - r0 : NaN;
    const pc = (x: number) => (Number.isNaN(x) ? '?' : ((100 * x) / wall).toFixed(0) + ' %');
    console.log(`  ${label}: ${Math.round(r.rps)} req/s; CPU: server ${pc(node)} (${((1e6 * node) / (r.rps * o.duration)).toFixed(1)} µs/request), Redis ${pc(redis)}, ${o.generator} ${pc(r.genCpu)}`);
    return r.rps;
  }

  return { generate, cannon };
}
