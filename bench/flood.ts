// Issue 20's unique-query flood: the real server over a bench data set, flooded with distinct
// queries from one loopback address (64 connections): half for capabilities that do not exist
// (`capability=u<n>`, each value new), half distinct pages of real filter combinations (a real
// capability, maybe a device class, a limit and a cursor: each one new), which fill the near
// cache's sets and documents and the result cache. Every second it samples the server's RSS
// (/proc/<pid>/status VmRSS) and the bytes its caches count (registry_near_cache_bytes,
// registry_result_cache_bytes on the metrics listener), and prints them as a table and an
// ASCII plot, then checks the budget: RSS growth within 1.25 × (NEAR_CACHE_MB + RESULT_CACHE_MB)
// plus the fixed allowance, and RSS flat over the last half of the flood (its peak no more than
// 5 % above the first half's: RSS swings with the garbage collector, its peak is what must stop).
//   node dist/bench/flood.js [--count 1000000] [--connections 64] [--near-mb 64] [--result-mb 64]
//                            [--result-entries 10000] [--services 100000 | --quick] [--allowance-mb 160] [--no-pin]
// (REDIS_URL / DATABASE_URL as for make bench: the data set and index are reused when built.)
import autocannon from 'autocannon';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { ROOT } from '../src/hot/paths.js';
import { canonicalize, SEARCH_SPEC } from '../src/hot/search/canonical.js';
import { capabilityName, DEVICE_CLASSES } from './dataset.js';
import { prepare } from './generate.js';
import { freePort, HAS_TASKSET, pinning, spawnNode, waitFor200 } from './procs.js';
import { rssKb } from './proc-stat.js';
import { sleep } from '../test/helpers/wait.js';

const log = (m: string) => console.log(m);

function flag(name: string, def: number): number {
  const i = process.argv.indexOf(name);
  return i > 0 ? Number(process.argv[i + 1]) : def;
}
const has = (name: string) => process.argv.includes(name);

const COUNT = flag('--count', 1_000_000);
const CONNECTIONS = flag('--connections', 64);
const NEAR_MB = flag('--near-mb', 64);
const RESULT_MB = flag('--result-mb', 64);
const ALLOWANCE_MB = flag('--allowance-mb', 160);
/** RESULT_CACHE_ENTRIES for the server: large, so that the byte budget is what binds */
const RESULT_ENTRIES = flag('--result-entries', 10_000);
const QUICK = has('--quick');
const SERVICES = flag('--services', 100_000);

interface Sample {
  s: number;
  rssMb: number;
  nearMb: number;
  resultMb: number;
  responses: number;
}

/** Resident memory of the server, MB (NaN once it is gone). */
function rssMb(pid: number): number {
  return rssKb(pid) / 1024 || NaN;
}

function metric(text: string, name: string): number {
  let sum = 0;
  for (const line of text.split('\n')) if (line.startsWith(name + ' ') || line.startsWith(name + '{')) sum += Number(line.slice(line.lastIndexOf(' ') + 1));
  return sum;
}

/** A canonical search path (the server answers anything else with a 302). */
function canonical(q: string): string {
  const c = canonicalize('/services', q, SEARCH_SPEC);
  if (c.kind === 'ok') return '/services?' + q;
  if (c.kind === 'redirect') return c.location;
  throw new Error(`not a valid query: ${q} (${c.message})`);
}

async function main(): Promise<void> {
  const d = await prepare({ quick: QUICK, services: QUICK ? undefined : SERVICES, regenerate: false, rebuild: false, log });
  const port = await freePort();
  const metricsPort = await freePort();
  const pin = pinning(1, !has('--no-pin'));
  const env = { ...d.serverEnv, PORT: String(port), HOST: '127.0.0.1', METRICS_PORT: String(metricsPort), METRICS_HOST: '127.0.0.1', WORKERS: '1', NEAR_CACHE_MB: String(NEAR_MB), RESULT_CACHE_MB: String(RESULT_MB), RESULT_CACHE_ENTRIES: String(RESULT_ENTRIES) };
  const child = spawnNode(join(ROOT, 'dist/src/hot/main.js'), [], env, pin.server, join(ROOT, 'bench/results/flood-server.log'));
  const base = `http://127.0.0.1:${port}`;
  try {
    await waitFor200(base + '/readyz', child, 120_000);
    const pid = child.proc.pid!;
    log(`server pid ${pid} on ${base} (${pin.note}${HAS_TASKSET ? '' : ', no taskset'}), NEAR_CACHE_MB=${NEAR_MB} RESULT_CACHE_MB=${RESULT_MB} RESULT_CACHE_ENTRIES=${RESULT_ENTRIES}, ${d.spec.production} production services`);
    log(`flood: ${COUNT} distinct queries, ${CONNECTIONS} connections from 127.0.0.1; load average before: ${loadavg().map((x) => x.toFixed(2)).join(' ')}`);

    const samples: Sample[] = [];
    let responses = 0;
    const t0 = Date.now();
    const sample = async () => {
      const text = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
      samples.push({ s: (Date.now() - t0) / 1000, rssMb: rssMb(pid), nearMb: metric(text, 'registry_near_cache_bytes') / 2 ** 20, resultMb: metric(text, 'registry_result_cache_bytes') / 2 ** 20, responses });
    };
    await sample();
    let sampling = true;
    const sampler = (async () => {
      while (sampling) {
        await sleep(1000);
        await sample().catch(() => undefined);
      }
    })();

    // the queries: every one distinct (a counter in it), half unknown capabilities
    let n = 0;
    const caps = QUICK ? 200 : 2000;
    const seqMax = d.spec.production + d.spec.sandboxes * d.spec.servicesPerSandbox;
    const next = () => {
      const i = n++;
      if (i % 2 === 0) return `/services?capability=u${i.toString(36)}`;
      // a real capability (spread over all of them), a device class on one in four, a limit and a cursor that make it new
      const cap = capabilityName((i * 7919) % caps);
      const dc = i % 8 === 1 ? `&deviceClass=${DEVICE_CLASSES[(i >> 3) % DEVICE_CLASSES.length]}` : '';
      const limit = 1 + ((i >> 1) % 100);
      const after = (i * 104729) % seqMax;
      return canonical(`after=${after}&capability=${cap}${dc}&limit=${limit}`);
    };
    const statuses: Record<string, number> = {};
    const result = await new Promise<autocannon.Result>((resolve, reject) => {
      const inst = autocannon(
        { url: base, connections: CONNECTIONS, amount: COUNT, timeout: 30, requests: [{ method: 'GET', setupRequest: (req: autocannon.Request) => ({ ...req, path: next() }) }] },
        (err, r) => (err ? reject(err) : resolve(r)),
      );
      inst.on('response', (_c: unknown, status: number) => {
        responses++;
        statuses[status] = (statuses[status] ?? 0) + 1;
      });
    });
    const floodS = (Date.now() - t0) / 1000;
    await sleep(3000); // a few samples after: RSS settles
    sampling = false;
    await sampler;
    await sample();

    // the table (one row per ~1/40 of the run) and the plot
    log(`\n${result.requests.total} requests in ${floodS.toFixed(1)} s (${Math.round(result.requests.total / floodS)} req/s), statuses ${JSON.stringify(statuses)}, errors ${result.errors}, timeouts ${result.timeouts}`);
    log(`load average after: ${loadavg().map((x) => x.toFixed(2)).join(' ')}\n`);
    log('| s | responses | RSS MB | near cache MB | result cache MB | counted MB |');
    log('|--:|--:|--:|--:|--:|--:|');
    const step = Math.max(1, Math.floor(samples.length / 40));
    for (let i = 0; i < samples.length; i++) {
      if (i % step && i !== samples.length - 1) continue;
      const x = samples[i]!;
      log(`| ${x.s.toFixed(0)} | ${x.responses} | ${x.rssMb.toFixed(0)} | ${x.nearMb.toFixed(1)} | ${x.resultMb.toFixed(1)} | ${(x.nearMb + x.resultMb).toFixed(1)} |`);
    }
    plot(samples);

    const first = samples[0]!;
    const budget = NEAR_MB + RESULT_MB;
    const maxRss = Math.max(...samples.map((x) => x.rssMb));
    const growth = maxRss - first.rssMb;
    const bound = 1.25 * budget + ALLOWANCE_MB;
    // flat: the last half of the flood sets no new high (RSS swings with the collector; its peak is what must stop rising)
    const during = samples.filter((x) => x.responses < COUNT);
    const early = during.slice(0, Math.floor(during.length / 2));
    const half = during.slice(Math.floor(during.length / 2));
    const earlyMax = early.length ? Math.max(...early.map((x) => x.rssMb)) : 0;
    const lateMax = half.length ? Math.max(...half.map((x) => x.rssMb)) : 0;
    const maxCounted = Math.max(...samples.map((x) => x.nearMb + x.resultMb));
    log(`\nRSS at start ${first.rssMb.toFixed(0)} MB, at most ${maxRss.toFixed(0)} MB, at the end ${samples[samples.length - 1]!.rssMb.toFixed(0)} MB`);
    log(`counted bytes at most ${maxCounted.toFixed(1)} MB (budget ${budget} MB: near ${NEAR_MB} + result ${RESULT_MB})`);
    log(`RSS growth ${growth.toFixed(0)} MB ${growth <= bound ? '<=' : '>'} 1.25 × ${budget} + ${ALLOWANCE_MB} allowance = ${bound.toFixed(0)} MB: ${growth <= bound ? 'WITHIN' : 'OVER'}`);
    const flat = lateMax <= earlyMax * 1.05;
    log(`RSS peak in the first half of the flood ${earlyMax.toFixed(0)} MB, in the last half ${lateMax.toFixed(0)} MB: ${flat ? 'FLAT (no new high beyond 5 %)' : 'GROWING'}`);
  } finally {
    await child.stop();
  }
}

/** RSS (#) and counted bytes (*) against time, 20 rows high. */
function plot(samples: Sample[]): void {
  const H = 20;
  const W = Math.min(100, samples.length);
  const top = Math.max(...samples.map((x) => Math.max(x.rssMb, x.nearMb + x.resultMb))) * 1.05;
  const grid = Array.from({ length: H }, () => new Array<string>(W).fill(' '));
  for (let c = 0; c < W; c++) {
    const x = samples[Math.floor((c * (samples.length - 1)) / Math.max(1, W - 1))]!;
    const row = (v: number) => H - 1 - Math.min(H - 1, Math.floor((v / top) * H));
    grid[row(x.nearMb + x.resultMb)]![c] = '*';
    grid[row(x.rssMb)]![c] = '#';
  }
  log(`\n  MB   # RSS   * counted bytes (near + result cache)   (x: 0 .. ${samples[samples.length - 1]!.s.toFixed(0)} s)`);
  for (let r = 0; r < H; r++) log(`${((top * (H - r)) / H).toFixed(0).padStart(5)} |${grid[r]!.join('')}`);
  log(`      +${'-'.repeat(W)}`);
}

main().catch((e: unknown) => {
  console.error(e);
  process.exit(1);
});
