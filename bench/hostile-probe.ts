// The legitimate client of the hostile-load bench (bench/hostile.ts): keep-alive searches from
// its own loopback address for a number of seconds, their p50/p99 and statuses, and the
// lines that compare it idle, under attack and idle again.
import { Agent, request } from 'node:http';

export const CLIENT = '127.0.0.3';

export interface Probe {
  n: number;
  p50: number;
  p99: number;
  statuses: Record<string, number>;
}

/** The legitimate client: 4 keep-alive connections from CLIENT searching for `seconds`. */
export async function probe(port: number, seconds: number): Promise<Probe> {
  const agent = new Agent({ keepAlive: true, maxSockets: 4, localAddress: CLIENT } as ConstructorParameters<typeof Agent>[0] & { localAddress: string });
  const lat: number[] = [];
  const statuses: Record<string, number> = {};
  const end = Date.now() + seconds * 1000;
  let i = 0;
  const one = () =>
    new Promise<void>((resolve) => {
      const t0 = performance.now();
      const r = request({ host: '127.0.0.1', port, path: `/services?capability=bench${i++ % 4}`, agent }, (res) => {
        res.resume();
        res.on('end', () => {
          lat.push(performance.now() - t0);
          statuses[String(res.statusCode)] = (statuses[String(res.statusCode)] ?? 0) + 1;
          resolve();
        });
      });
      r.setTimeout(10_000, () => r.destroy(new Error('timeout')));
      r.on('error', (e) => {
        lat.push(performance.now() - t0);
        statuses[e.message] = (statuses[e.message] ?? 0) + 1;
        resolve();
      });
      r.end();
    });
  await Promise.all(Array.from({ length: 4 }, async () => {
    while (Date.now() < end) await one();
  }));
  agent.destroy();
  lat.sort((a, b) => a - b);
  const q = (p: number) => lat[Math.min(lat.length - 1, Math.floor(p * lat.length))] ?? NaN;
  return { n: lat.length, p50: q(0.5), p99: q(0.99), statuses };
}

export const fmt = (p: Probe) => `p50 ${p.p50.toFixed(2)} ms, p99 ${p.p99.toFixed(2)} ms (${p.n} requests: ${JSON.stringify(p.statuses)})`;

/** The three probes of a scenario: idle, under attack (with its p99 over idle's) and idle again. */
export function showProbes(idle: Probe, hit: Probe, after: Probe): void {
  console.log(`  idle:          ${fmt(idle)}`);
  console.log(`  under attack:  ${fmt(hit)}   (p99 ${(hit.p99 / idle.p99).toFixed(2)}× idle)`);
  console.log(`  idle again:    ${fmt(after)}`);
}
