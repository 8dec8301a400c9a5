// Where the Redis bytes of the index go: MEMORY USAGE of every key of the live generation,
// summed by key kind, per indexed service, beside INFO memory's used_memory. Read-only.
//   node dist/bench/memory.js [--prefix bench:]     (REDIS_URL as for the server)
// Used for issue 14's measurements (docs/decisions/bucketed-sets.md).
import { loadConfig } from '../src/hot/config.js';
import { Keys } from '../src/hot/domain/keys.js';
import { createRedis, type RedisClient } from '../src/hot/redis/client.js';

export interface MemoryReport {
  gen: string;
  services: number;
  usedMemory: number;
  /** used_memory / services (everything in Redis, counters and sandboxes included) */
  usedPerService: number;
  /** kind -> { keys, bytes, bytesPerService } */
  kinds: Record<string, { keys: number; bytes: number; perService: number }>;
}

/** The kind of an index key from its suffix after the generation ("c:cap.0001" → "c:*"). */
export function kindOf(suffix: string): string {
  const m = /^([a-z]+):/.exec(suffix);
  return m ? m[1] + ':*' : suffix;
}

function infoField(info: string, f: string): number {
  const m = new RegExp('^' + f + ':(\\d+)', 'm').exec(info);
  return m ? Number(m[1]) : 0;
}

export async function measureMemory(redis: RedisClient, keys: Keys): Promise<MemoryReport> {
  const gen = await redis.get(keys.gen());
  if (!gen) throw new Error('no live index generation under this prefix');
  const kinds: MemoryReport['kinds'] = {};
  let services = 0;
  const nodes = 'nodes' in redis && typeof redis.nodes === 'function' ? redis.nodes('master') : [redis];
  for (const node of nodes) {
    let cursor = '0';
    do {
      const [next, batch] = await node.scan(cursor, 'MATCH', keys.genPattern(gen), 'COUNT', 2000);
      cursor = next;
      const sizes = await Promise.all(batch.map((k) => node.memory('USAGE', k, 'SAMPLES', 0) as Promise<number | null>));
      batch.forEach((k, i) => {
        const suffix = k.slice(k.indexOf(':' + gen + ':') + gen.length + 2);
        const ns = k.includes('{production}') ? 'production' : 'sandbox';
        const kind = ns + ' ' + kindOf(suffix);
        const e = (kinds[kind] ??= { keys: 0, bytes: 0, perService: 0 });
        e.keys++;
        e.bytes += sizes[i] ?? 0;
      });
      for (const k of batch) if (k.endsWith(':docs')) services += await node.hlen(k);
    } while (cursor !== '0');
  }
  let usedMemory = 0;
  for (const node of nodes) usedMemory += infoField(await node.info('memory'), 'used_memory');
  for (const e of Object.values(kinds)) e.perService = services ? e.bytes / services : 0;
  return { gen, services, usedMemory, usedPerService: services ? usedMemory / services : 0, kinds };
}

if (process.argv[1]?.endsWith('memory.js')) {
  const i = process.argv.indexOf('--prefix');
  const cfg = loadConfig();
  const redis = createRedis(cfg);
  measureMemory(redis, new Keys(i > 0 ? process.argv[i + 1]! : cfg.redisKeyPrefix))
    .then((r) => {
      console.log(`generation ${r.gen}: ${r.services} services, used_memory ${r.usedMemory} B = ${r.usedPerService.toFixed(0)} B/service`);
      const rows = Object.entries(r.kinds).sort((a, b) => b[1].bytes - a[1].bytes);
      let sum = 0;
      for (const [k, e] of rows) {
        sum += e.bytes;
        console.log(`  ${k.padEnd(22)} ${String(e.keys).padStart(7)} keys ${String(e.bytes).padStart(11)} B ${e.perService.toFixed(1).padStart(8)} B/service`);
      }
      console.log(`  ${'sum of MEMORY USAGE'.padEnd(22)} ${''.padStart(12)} ${String(sum).padStart(11)} B ${(r.services ? sum / r.services : 0).toFixed(1).padStart(8)} B/service`);
      redis.disconnect();
    })
    .catch((e: unknown) => {
      console.error(e);
      process.exit(1);
    });
}
