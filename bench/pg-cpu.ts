// The CPU a PostgreSQL server spends over a run (bench/writes.ts): its postmaster and every
// backend, told apart from other PostgreSQL servers on the machine by parent pid.
import { readdirSync } from 'node:fs';
import { childrenOf, jiffies, procStat, TICK } from './proc-stat.js';

/**
 * CPU of a PostgreSQL server: the postmaster and its children. Backends come and go
 * (pgbench's exit with it), so the children are sampled through the run and each one's
 * last reading kept; call stop() before the load's connections close.
 */
export function pgCpu(postmaster: number) {
  const seen = new Map<number, number>();
  const sample = () => {
    seen.set(postmaster, jiffies(postmaster));
    // the postmaster's children from its own list: a scan of every /proc/<pid>/stat blocks
    // this process's event loop (the load generator's), and every write in flight would wait
    // for it in the p99 measured
    const kids = childrenOf(postmaster);
    if (kids) {
      for (const k of kids) {
        const j = jiffies(k);
        if (j > 0) seen.set(k, j);
      }
      return;
    }
    for (const d of readdirSync('/proc')) {
      if (!/^\d+$/.test(d)) continue;
      const st = procStat(Number(d)); // null: gone
      if (st?.ppid === postmaster) seen.set(Number(d), st.jiffies);
    }
  };
  sample();
  const start = new Map(seen);
  const timer = setInterval(sample, 250);
  return {
    stop(): number {
      clearInterval(timer);
      sample();
      let d = 0;
      for (const [pid, j] of seen) d += j - (start.get(pid) ?? 0);
      return d / TICK;
    },
  };
}
