// One process's readings from /proc (Linux): the CPU it used (utime + stime, in jiffies), its
// children and its resident memory (VmRSS). Used where a bench times processes it did not start itself (PostgreSQL,
// Redis) or that run in another process (the server under test).
import { readFileSync } from 'node:fs';

export const TICK = 100; // jiffies per second (USER_HZ)

/** The fields of /proc/<pid>/stat that we read, or null when it is gone (or not Linux). */
export function procStat(pid: number): { ppid: number; jiffies: number } | null {
  let s: string;
  try {
    s = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return null;
  }
  // after "pid (comm) ": f[0] is field 3 (state), f[1] the parent, f[11] and f[12] utime and stime
  const f = s.slice(s.lastIndexOf(')') + 2).split(' ');
  return { ppid: Number(f[1]), jiffies: Number(f[11]) + Number(f[12]) };
}

/** utime + stime of `pid` (all its threads), jiffies; 0 when it is gone. */
export function jiffies(pid: number): number {
  return procStat(pid)?.jiffies ?? 0;
}

/** The children of `pid` (Linux's /proc/<pid>/task/<pid>/children), or null where that file is missing. */
export function childrenOf(pid: number): number[] | null {
  try {
    return readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').split(' ').filter(Boolean).map(Number);
  } catch {
    return null;
  }
}

/** Resident memory of `pid` (all its threads), kB; 0 when it is gone or has none. */
export function rssKb(pid: number): number {
  try {
    const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) : 0;
  } catch {
    return 0;
  }
}

/** A process and its children, kB (nginx: its master and every worker, children of the master). */
export function treeRssKb(pid: number): number {
  let sum = rssKb(pid);
  for (const c of childrenOf(pid) ?? []) sum += rssKb(c);
  return sum;
}
