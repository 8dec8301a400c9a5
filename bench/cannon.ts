// Programmatic autocannon, in this process. Latencies are taken from every 2xx response
// (autocannon's own histogram rounds to whole milliseconds, too coarse at these speeds);
// the CPU this process used during the run tells whether the load generator itself was
// the bottleneck.
import autocannon from 'autocannon';
import { startWrk } from './wrk.js';
import type { LoadOptions, LoadResult, Running } from './load-types.js';

/** Growable sample buffer: a million responses cost 8 MB. */
class Samples {
  private a = new Float64Array(1 << 16);
  n = 0;
  push(v: number): void {
    if (this.n === this.a.length) {
      const b = new Float64Array(this.a.length * 2);
      b.set(this.a);
      this.a = b;
    }
    this.a[this.n++] = v;
  }
  sorted(): Float64Array {
    return this.a.slice(0, this.n).sort();
  }
}

/** Nearest-rank percentile of sorted values. */
export function percentile(sorted: Float64Array, p: number): number {
  if (!sorted.length) return NaN;
  const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[i]!;
}

export function startLoad(o: LoadOptions): Running {
  if (o.generator === 'wrk') {
    if (o.nextPath && !o.cursor) throw new Error('wrk needs the cursor described (LoadOptions.cursor), not only nextPath');
    return startWrk(o);
  }
  const samples = new Samples();
  const wanted = (status: number) => (o.expect ? status === o.expect : status >= 200 && status < 300);
  let answered = 0;
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  let finish: (err: unknown, r: autocannon.Result) => void = () => undefined;
  const done = new Promise<LoadResult>((resolve, reject) => {
    finish = (err, r) => {
      if (err) return reject(err instanceof Error ? err : new Error(String(err)));
      const cpu = process.cpuUsage(cpu0);
      const wallMs = performance.now() - t0;
      const s = samples.sorted();
      const statusCodes: Record<string, number> = {};
      for (const [code, v] of Object.entries(r.statusCodeStats ?? {})) statusCodes[code] = v.count ?? 0;
      const responses = Object.values(statusCodes).reduce((a, b) => a + b, 0);
      const dur = r.duration || wallMs / 1000;
      let sum = 0;
      for (const v of s) sum += v;
      resolve({
        rps: (o.expect ? answered : r['2xx']) / dur,
        totalRps: responses / dur,
        p50: percentile(s, 50),
        p90: percentile(s, 90),
        p99: percentile(s, 99),
        max: s.length ? s[s.length - 1]! : NaN,
        mean: s.length ? sum / s.length : NaN,
        responses,
        ok: o.expect ? answered : r['2xx'],
        non2xx: o.expect ? responses - answered : r.non2xx,
        statusCodes,
        errors: r.errors,
        timeouts: r.timeouts,
        durationS: dur,
        bytesPerSec: r.throughput.average,
        loadgenCpuPct: ((cpu.user + cpu.system) / 1000 / wallMs) * 100,
      });
    };
  });
  // the callback form returns the running instance (the promise form does not expose stop())
  const inst = autocannon(
    {
      url: o.url,
      headers: o.headers,
      connections: o.connections,
      pipelining: o.pipelining ?? 1,
      duration: o.durationS,
      timeout: 10,
      // setupRequest rebuilds the request buffer each time: costlier for autocannon, so only when asked
      ...(o.nextPath ? { requests: [{ method: 'GET' as const, setupRequest: (req: autocannon.Request) => ({ ...req, path: o.nextPath!() }) }] } : {}),
    },
    (err: unknown, r: autocannon.Result) => finish(err, r),
  );
  inst.on('response', (_client, status, _bytes, ms) => {
    if (!wanted(status)) return;
    answered++;
    samples.push(ms);
  });
  return { done, stop: () => inst.stop() };
}

export function load(o: LoadOptions): Promise<LoadResult> {
  return startLoad(o).done;
}
