// Discovery bench (issue 44): the DNS server's answers per second against a bare node:dgram
// server answering the same bytes (the ceiling, in the same run, under the same pinning), and
// GET /discovery/prometheus and the Consul health route at 1,000 and 10,000 targets against
// /services paging through the same set (time and bytes).
//
//   node dist/bench/discovery.js [--seconds S] [--rounds R] [--requests N] [--sizes 1000,10000]
//
// The server (dist/src/hot/main.js, WORKERS=1, DNS on, DNS_RATE_PER_ADDRESS out of reach: the
// row measures answers, not the limiter) and the ceiling run pinned to core 0; dnsperf (Debian's,
// scripts/services.sh dnsperf) on core 1, 100 queries outstanding, for --seconds (5) per run,
// --rounds (3) alternating registry and ceiling; the row's figure is the median ratio. HTTP
// rows: --requests (20) sequential requests from this process (core 1) per figure, the median:
// warm (a result-cache hit), cold (each after a write to production: computed again, the near
// cache holding the sets and documents), 304 (If-None-Match), and /services paged by 1000 for
// the same set (warm).
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import dnsPacket from 'dns-packet';
import { createSocket } from 'node:dgram';
import { once } from 'node:events';
import { ROOT } from '../src/hot/paths.js';
import { loadConfig } from '../src/hot/config.js';
import { numArg, strArg } from './args.js';
import { freePort, get, HAS_TASKSET, spawnNode, waitFor200 } from './procs.js';
import { ADMIN_KEY, baseEnv } from '../test/helpers/env.js';
import { freshDatabase } from '../test/helpers/database.js';

const run = promisify(execFile);
const SECONDS = numArg('seconds', 5);
const ROUNDS = numArg('rounds', 3);
const REQUESTS = numArg('requests', 20);
const SIZES = strArg('sizes', '1000,10000').split(',').map(Number);
const RESULTS = join(ROOT, 'bench/results');
mkdirSync(RESULTS, { recursive: true });
const pin = (core: number) => (HAS_TASKSET ? String(core) : null);
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

const cfg = loadConfig(baseEnv());
const db = await freshDatabase();
const [port, dnsPort, ceilingPort] = [await freePort(), await freePort(), await freePort()];
const server = spawnNode(join(ROOT, 'dist/src/hot/main.js'), [], {
  DATABASE_URL: db.url, REDIS_URL: cfg.redisUrl, REDIS_KEY_PREFIX: `bd${randomBytes(3).toString('hex')}:`, PORT: String(port), HOST: '127.0.0.1',
  METRICS_PORT: '0', WORKERS: '1', NODE_ENV: 'production', ADMIN_API_KEY: ADMIN_KEY, LOG_LEVEL: 'warn',
  DNS_PORT: String(dnsPort), DNS_RATE_PER_ADDRESS: '1000000000', DISCOVERY_MAX_TARGETS: String(Math.max(...SIZES)),
}, pin(0), join(RESULTS, 'discovery-server.log'));
const url = `http://127.0.0.1:${port}`;

async function post(path: string, body: unknown): Promise<void> {
  const r = await fetch(url + path, { method: 'POST', headers: { authorization: `Bearer ${ADMIN_KEY}`, 'content-type': 'application/json' }, body: JSON.stringify(body) });
  if (r.status !== 201) throw new Error(`${path}: ${r.status} ${await r.text()}`);
}

/** `n` production services with capability `cap`, IPv4 endpoints, a property each. */
async function seed(cap: string, n: number): Promise<void> {
  for (let i = 0; i < n; i += 1000) {
    const services = Array.from({ length: Math.min(1000, n - i) }, (_, k) => ({
      endpoint: `http://10.${(i + k) >> 16}.${((i + k) >> 8) & 255}.${(i + k) & 255}:${8000 + ((i + k) % 1000)}/metrics`,
      capabilities: [cap, 'bench'],
      properties: { team: `t${(i + k) % 7}`, zone: `z${(i + k) % 3}` },
    }));
    await post('/admin/api/services/batch', { services });
  }
}

try {
  await waitFor200(url + '/readyz', server, 60_000);
  await seed('web', 10);
  for (const n of SIZES) await seed(`k${n}`, n);

  // ---- DNS: dnsperf against the registry and against the ceiling ----
  const dnsperf = (await run('bash', [join(ROOT, 'scripts/services.sh'), 'dnsperf'])).stdout.trim();
  const queries = join(mkdtempSync(join(tmpdir(), 'dnsperf-')), 'queries.txt');
  writeFileSync(queries, 'web.service.registry SRV\n_web._tcp.service.registry SRV\nweb.service.registry A\n');
  // the ceiling answers the registry's bytes for the first query
  const sock = createSocket('udp4');
  sock.bind(0, '127.0.0.1');
  await once(sock, 'listening');
  sock.send(dnsPacket.encode({ type: 'query', id: 1, questions: [{ type: 'SRV', name: 'web.service.registry' }] }), dnsPort, '127.0.0.1');
  const [answer] = (await once(sock, 'message')) as [Buffer];
  sock.close();
  const ceiling = spawnNode(join(ROOT, 'dist/bench/dns-ceiling.js'), [String(ceilingPort)], { ANSWER_HEX: answer.toString('hex') }, pin(0), join(RESULTS, 'discovery-ceiling.log'));
  await new Promise((r) => setTimeout(r, 500));
  const perf = async (p: number): Promise<number> => {
    const cmd = HAS_TASKSET ? 'taskset' : dnsperf;
    const args = [...(HAS_TASKSET ? ['-c', '1', dnsperf] : []), '-s', '127.0.0.1', '-p', String(p), '-d', queries, '-l', String(SECONDS), '-c', '4', '-q', '100'];
    const out = (await run(cmd, args, { maxBuffer: 1 << 22 })).stdout;
    const qps = /Queries per second:\s+([\d.]+)/.exec(out)?.[1];
    const lost = /Queries lost:\s+(\d+)/.exec(out)?.[1];
    if (!qps) throw new Error(`dnsperf said:\n${out}`);
    if (Number(lost) > 0) console.log(`  (port ${p}: ${lost} queries lost)`);
    return Number(qps);
  };
  const ratios: number[] = [];
  for (let r = 0; r < ROUNDS; r++) {
    const reg = await perf(dnsPort);
    const ceil = await perf(ceilingPort);
    ratios.push(reg / ceil);
    console.log(`DNS round ${r + 1}: registry ${reg.toFixed(0)} q/s, ceiling ${ceil.toFixed(0)} q/s, ${(reg / ceil).toFixed(2)}x`);
  }
  console.log(`DNS: median ${median(ratios).toFixed(2)}x the ceiling (answer ${answer.length} bytes)`);
  await ceiling.stop();

  // ---- HTTP: Prometheus SD and the Consul health route against /services paging ----
  const time = async (path: string, headers: Record<string, string> = {}, before?: () => Promise<void>) => {
    const ms: number[] = [];
    let bytes = 0;
    let status = 0;
    for (let i = 0; i < REQUESTS; i++) {
      if (before) await before();
      const t0 = performance.now();
      const r = await get(url + path, headers);
      ms.push(performance.now() - t0);
      bytes = r.body.length;
      status = r.status;
    }
    return { ms: median(ms), bytes, status };
  };
  // a write to production (another capability): every cached answer of production is computed again
  let n = 0;
  const write = () => post('/admin/api/services', { endpoint: `https://w${n++}.example.com`, capabilities: ['churn'] });
  for (const size of SIZES) {
    const sd = `/discovery/prometheus?capability=k${size}`;
    const warm = await time(sd);
    const cold = await time(sd, {}, write);
    const etag = (await get(url + sd)).headers.find(([k]) => k.toLowerCase() === 'etag')![1];
    const nm = await time(sd, { 'if-none-match': etag });
    const cw = await time(`/v1/health/service/k${size}`);
    const cc = await time(`/v1/health/service/k${size}`, {}, write);
    const pages = async () => {
      const t0 = performance.now();
      let bytes = 0;
      for (let after = ''; ; ) {
        const r = await get(`${url}/services?${after ? `after=${after}&` : ''}capability=k${size}&limit=1000`);
        bytes += r.body.length;
        const next = r.headers.find(([k]) => k.toLowerCase() === 'link')?.[1];
        const m = next && /after=(\d+)/.exec(next);
        if (!m) break;
        after = m[1]!;
      }
      return { ms: performance.now() - t0, bytes };
    };
    const paged: number[] = [];
    let pagedBytes = 0;
    for (let i = 0; i < REQUESTS; i++) {
      const p = await pages();
      paged.push(p.ms);
      pagedBytes = p.bytes;
    }
    console.log(
      `${size} targets: /discovery/prometheus warm ${warm.ms.toFixed(1)} ms, cold ${cold.ms.toFixed(1)} ms, 304 ${nm.ms.toFixed(2)} ms, ${(warm.bytes / 1024).toFixed(0)} KiB (${warm.status}); ` +
        `/v1/health/service warm ${cw.ms.toFixed(1)} ms, cold ${cc.ms.toFixed(1)} ms, ${(cw.bytes / 1024).toFixed(0)} KiB; ` +
        `/services paged by 1000 (warm) ${median(paged).toFixed(1)} ms, ${(pagedBytes / 1024).toFixed(0)} KiB`,
    );
  }
} finally {
  await server.stop();
  await db.drop();
}
