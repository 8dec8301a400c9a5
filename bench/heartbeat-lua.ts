// Redis's own time a heartbeat line in heartbeats.lua (bench/README.md, Liveness, "Heartbeat
// row", the fleet), from INFO commandstats: calls of 1 and of 50 distinct lines (a fleet's
// heartbeats, spread over the lease shards) against N leased services, so the per-line cost
// is the slope and the call's own cost the intercept. Beside the real script, two stripped
// ones split that cost: "floor" parses each line and does its HGET and ZADD, nothing else;
// "parse" only parses. N decides the shards' encoding: up to 128 members a shard (N ≤ ~2,000)
// a listpack, scanned member by member; beyond, a skip list and a hash table.
//
//   node dist/bench/heartbeat-lua.js [--services 40000] [--calls 2000]
//
// With --native (docs/decisions/liveness-at-scale.md): Redis's whole CPU (its process
// in /proc, so a Redis on this machine; its I/O included) a fleet heartbeat, 8 distinct
// heartbeats a call, heartbeats.lua against 8 pipelined `ZADD … XX CH` on members that carry
// the token hash and ttl, three rounds of --calls calls each (20000 if not given).
//
// Uses REDIS_URL under a key prefix of its own (dropped afterwards).
import { createHash } from 'node:crypto';
import { Redis } from 'ioredis';
import { Keys } from '../src/hot/domain/keys.js';
import { shardOf } from '../src/hot/liveness/redis-lease.js';
import { loadConfig } from '../src/hot/config.js';
import { scriptText } from '../src/hot/redis/client.js';
import { numArg } from './args.js';
import { jiffies, procStat, TICK } from './proc-stat.js';

const NATIVE = process.argv.includes('--native');
const N = numArg('services', NATIVE ? 1000 : 40_000);
const CALLS = numArg('calls', NATIVE ? 20_000 : 2000);
const each = `for i = 1, s do local lk, dk = KEYS[2*i-1], KEYS[2*i]
  for id, tok, want, chk, ns in string.gmatch(ARGV[2+i], '([%w_-]+) (%x+) ([pc]) ([01]) ([%w_-]+)\\n') do`;
const head = `local now = tonumber(ARGV[1]); local s = tonumber(ARGV[2]); local out = {}; local n = 0\n`;
const VARIANTS: Record<string, string> = {
  'heartbeats.lua': scriptText('heartbeats.lua'),
  floor: `${head}${each}\n local rec = redis.call('HGET', lk, id); redis.call('ZADD', dk, now + 30000, id); n = n + 1; out[n] = 0 end end\nreturn out`,
  parse: `${head}${each}\n n = n + 1; out[n] = 0 end end\nreturn out`,
};

const r = new Redis(loadConfig().redisUrl);
const k = new Keys(`hblua${process.pid}:`);
const hash = (id: string) => createHash('sha256').update(id).digest('hex');
const ids = Array.from({ length: N }, (_, i) => `svc${i}`);
try {
  for (let i = 0; i < N; i += 5000) {
    const p = r.pipeline();
    for (const id of ids.slice(i, i + 5000)) p.hset(k.leases(shardOf(id)), id, `3|production|${hash(id)}|30|p|0|`);
    await p.exec();
  }
  if (NATIVE) await native();
  else await lua();
} finally {
  const ks = await r.keys(`hblua${process.pid}:*`);
  for (let i = 0; i < ks.length; i += 1000) await r.del(...ks.slice(i, i + 1000));
  r.disconnect();
}

/** One heartbeats.lua call (or a stripped variant's) with a passing heartbeat line for each of `beats`, by shard. */
async function scriptCall(sha: string, beats: string[]): Promise<void> {
  const by = new Map<number, string>();
  for (const id of beats) by.set(shardOf(id), (by.get(shardOf(id)) ?? '') + `${id} ${hash(id)} p 0 production\n`);
  const keys: string[] = [];
  const args: (string | number)[] = [Date.now(), by.size];
  for (const [s, text] of by) {
    keys.push(k.leases(s), k.deadlines(s));
    args.push(text);
  }
  await r.evalsha(sha, keys.length, ...keys, ...args);
}

/** the script's µs a line (INFO commandstats), each variant */
async function lua(): Promise<void> {
  const stat = async (cmd: string) => Number(/usec_per_call=([\d.]+)/.exec((await r.info('commandstats')).split('\n').find((l) => l.startsWith(`cmdstat_${cmd}:`)) ?? '')?.[1] ?? NaN);
  console.log(`${N} leased services (${Math.round(N / 16)} a shard); µs a call of Redis (INFO commandstats), ${CALLS} calls each`);
  for (const [name, lua] of Object.entries(VARIANTS)) {
    const sha = (await r.script('LOAD', lua)) as string;
    const per: number[] = [];
    for (const lines of [1, 50]) {
      await r.config('RESETSTAT');
      let j = 0;
      for (let c = 0; c < CALLS; c++) await scriptCall(sha, Array.from({ length: lines }, () => ids[j++ % N]!));
      per.push(await stat('evalsha'));
      if (name === 'heartbeats.lua' && lines === 50) console.log(`  inside it: ZADD ${await stat('zadd')} µs, HGET ${await stat('hget')} µs a call`);
    }
    console.log(`  ${name}: ${per[0]} µs a call of 1 line, ${per[1]} of 50: ${((per[1]! - per[0]!) / 49).toFixed(2)} µs a line`);
  }
}

/** Redis's CPU (µs) a heartbeat: heartbeats.lua against native ZADD XX CH, 8 distinct heartbeats a call */
async function native(): Promise<void> {
  const pid = Number(/process_id:(\d+)/.exec(await r.info('server'))?.[1]);
  if (!procStat(pid)) throw new Error(`--native reads Redis's CPU from /proc/${pid}: REDIS_URL must be a Redis on this machine`);
  const cpu = () => (jiffies(pid) * 1e6) / TICK; // µs
  const member = (id: string) => `${id}|${hash(id)}|30`;
  const fast = (s: number) => k.deadlines(s) + ':native';
  for (let i = 0; i < N; i += 5000) {
    const p = r.pipeline();
    for (const id of ids.slice(i, i + 5000)) p.zadd(fast(shardOf(id)), Date.now() + 30_000, member(id));
    await p.exec();
  }
  const sha = (await r.script('LOAD', VARIANTS['heartbeats.lua']!)) as string;
  let j = 0;
  const next8 = () => Array.from({ length: 8 }, () => ids[j++ % N]!);
  const viaScript = () => scriptCall(sha, next8());
  const viaZadd = async () => {
    const p = r.pipeline();
    const deadline = Date.now() + 30_000;
    for (const id of next8()) p.zadd(fast(shardOf(id)), 'XX', 'CH', deadline, member(id));
    await p.exec();
  };
  const round = async (call: () => Promise<void>) => {
    const c0 = cpu();
    for (let c = 0; c < CALLS; c++) await call();
    return ((cpu() - c0) / (8 * CALLS)).toFixed(2);
  };
  console.log(`${N} leased services; Redis's CPU (/proc/${pid}) a heartbeat, 8 distinct heartbeats a call, ${CALLS} calls a round`);
  await round(viaScript);
  await round(viaZadd);
  for (let i = 0; i < 3; i++) console.log(`  heartbeats.lua ${await round(viaScript)} µs, ZADD XX CH ${await round(viaZadd)} µs`);
}
