// Where the CPU went during a measured run, from /proc (Linux): the server process's share
// of one core, and everything else busy on the machine (Redis, PostgreSQL, other work);
// Redis's own CPU seconds (INFO cpu) and the load average, as the liveness bench prints them.
// A shared 2-core machine makes this the difference between a finding and noise.
import { readFileSync } from 'node:fs';
import { procStat } from './proc-stat.js';
import type { RedisClient } from '../src/hot/redis/client.js';

export interface CpuSnapshot {
  /** jiffies of every core: all, idle (idle + iowait), steal */
  total: number;
  idle: number;
  steal: number;
  /** utime + stime of the watched process (all its threads), jiffies; 0 when unknown */
  proc: number;
}

export interface CpuShare {
  /** the watched process, % of one core */
  serverPct: number;
  /** the whole machine busy, % of one core (up to nproc × 100) */
  machinePct: number;
  /** time the hypervisor gave to someone else, % of one core */
  stealPct: number;
}

export function snapshot(pid: number | undefined): CpuSnapshot | null {
  try {
    const line = readFileSync('/proc/stat', 'utf8').split('\n', 1)[0]!;
    const v = line.trim().split(/\s+/).slice(1, 9).map(Number); // user nice system idle iowait irq softirq steal
    let proc = 0;
    if (pid) {
      const st = procStat(pid);
      if (!st) return null; // the process is gone
      proc = st.jiffies;
    }
    return { total: v.reduce((a, b) => a + b, 0), idle: v[3]! + v[4]!, steal: v[7]!, proc };
  } catch {
    return null; // not Linux, or the process is gone
  }
}

/** Shares between two snapshots; jiffies of all cores / nproc = jiffies of one core. */
export function share(a: CpuSnapshot | null, b: CpuSnapshot | null, nproc: number): CpuShare | null {
  if (!a || !b || b.total <= a.total) return null;
  const core = (b.total - a.total) / nproc;
  return {
    serverPct: ((b.proc - a.proc) / core) * 100,
    machinePct: ((b.total - a.total - (b.idle - a.idle)) / core) * 100,
    stealPct: ((b.steal - a.steal) / core) * 100,
  };
}

/** CPU seconds Redis used so far (INFO cpu: user + system of the server). */
export async function redisCpuS(redis: RedisClient): Promise<number> {
  const info = await redis.info('cpu');
  return Number(/used_cpu_user:([\d.]+)/.exec(info)![1]) + Number(/used_cpu_sys:([\d.]+)/.exec(info)![1]);
}

/** The load average over 1, 5 and 15 minutes, as /proc/loadavg writes it ("2.45 1.48 2.05"). */
export function loadAverage(): string {
  return readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');
}
