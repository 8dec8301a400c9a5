// Prepares what the bench runs against: the generated data set in its own PostgreSQL
// database (reused while its fingerprint matches), the Redis index under a dedicated key
// prefix (rebuilt with the project's own rebuildIndex(), timed), and a fresh API key for
// the enterprise sandbox of the keyed scenario. Run alone: node dist/bench/generate.js [--quick | --services N] [--regenerate] [--rebuild]
import { createHash, randomBytes } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { dropGeneration, rebuildIndex } from '../src/hot/reindex/rebuild.js';
import { loadConfig, type Config } from '../src/hot/config.js';
import { Keys, PRODUCTION } from '../src/hot/domain/keys.js';
import { ROOT } from '../src/hot/paths.js';
import { createRedis, type RedisClient } from '../src/hot/redis/client.js';
import { writeSandboxMeta } from '../src/hot/sandboxes/meta.js';
import { MIGRATIONS_DIR } from '../src/hot/pg/migrator.js';
import { createPool, type Pool } from '../src/hot/pg/pool.js';
import { indexText } from '../src/hot/registry/state.js';
import { capabilityName, QUICK, sizedSpec, type DatasetSpec } from './dataset.js';
import { cachedDataset, countWhere, databaseUrl, loadDataset, recreateDatabase, rotateKey, type StoredDataset } from './load.js';

const HERE = dirname(fileURLToPath(import.meta.url));

/**
 * Tier limits of the bench server. `enterprise` is raised from 6000/min so that the keyed
 * scenario measures the admitted path (key resolution + counting + search) rather than a
 * stream of 429s; the counting itself is unchanged. bench/README.md says so.
 */
export const BENCH_TIERS = 'free=60,pro=600,enterprise=100000000';

export interface PrepareOptions {
  quick: boolean;
  /** production services of a named size (--services N); 100,000 (FULL) when absent */
  services?: number;
  /** drop and regenerate the database even when it matches */
  regenerate: boolean;
  /** rebuild the Redis index even when the stored one matches */
  rebuild: boolean;
  log: (m: string) => void;
}

export interface IndexInfo {
  gen: string;
  services: number;
  sandboxes: number;
  /** rebuildIndex() wall time when this index was built */
  ms: number;
  /** true when this run reused an index built earlier (ms is from that build) */
  cached: boolean;
}

export interface Facts {
  popularCapability: string;
  midCapability: string;
  /** three popular capabilities intersected with iotReady=true */
  heavyCapabilities: string[];
  property: string;
  deviceClass: string;
  /** production services per set or intersection, counted in PostgreSQL */
  sizes: Record<string, number>;
}

export interface BenchData {
  spec: DatasetSpec;
  /** configuration of the bench server (database, key prefix, tiers) */
  cfg: Config;
  /** environment the server child gets on top of the caller's */
  serverEnv: Record<string, string>;
  stored: StoredDataset;
  dataCached: boolean;
  dataMs: number;
  index: IndexInfo;
  sandbox: { uuid: string; key: string; tier: string; capability: string; matches: number };
  facts: Facts;
}

function hashFiles(h: ReturnType<typeof createHash>, files: string[]): void {
  for (const f of files) {
    h.update(f);
    h.update(readFileSync(f));
  }
}

/**
 * Changes when the spec, the schema, the generator code or the index text the data set
 * stores changes (the write path's serialiser, fingerprinted by its output for a sample
 * state rather than by its files, which change for other reasons too).
 */
function datasetFingerprint(spec: DatasetSpec): string {
  const h = createHash('sha256').update(JSON.stringify(spec));
  h.update(
    JSON.stringify(
      indexText({
        id: 'fingerprint',
        ns: PRODUCTION,
        seq: 1,
        endpoint: 'https://a.example.com/"ü"',
        capabilities: ['b', 'a'],
        properties: { z: '1', '10': 'x', a: 'y' },
        iot: { deviceClasses: ['sensor'], protocols: ['mqtt', 'coap'] },
        deprecated: true,
        deprecatedAt: 1_700_000_000,
        locked: true,
        sunsetDate: '2027-06-30',
        replacementSeqs: [2],
      }),
    ),
  );
  const migrations = readdirSync(MIGRATIONS_DIR).filter((f) => f.endsWith('.sql')).sort().map((f) => join(MIGRATIONS_DIR, f));
  hashFiles(h, [...migrations, join(HERE, 'dataset.js'), join(HERE, 'load.js')]);
  return h.digest('hex').slice(0, 32);
}

/** Changes with the data (every generation), the Lua scripts and the code that writes index entries. */
function indexFingerprint(stored: StoredDataset): string {
  // not JSON.stringify(stored): jsonb gives the keys back in another order
  const h = createHash('sha256').update([stored.fingerprint, stored.deprecatedId, stored.loadMs, BENCH_TIERS].join('|'));
  const lua = ['redis', 'redis/lib'].flatMap((d) => readdirSync(join(ROOT, d)).filter((f) => f.endsWith('.lua')).sort().map((f) => join(ROOT, d, f)));
  const code = ['hot/domain/service.js', 'hot/domain/keys.js', 'hot/domain/doc-codec.js', 'hot/registry/projector.js', 'hot/registry/apply-services.js', 'hot/registry/state.js', 'hot/sandboxes/meta.js', 'hot/reindex/rebuild.js', 'hot/reindex/index-text.js'];
  hashFiles(h, [...lua, ...code.map((c) => join(ROOT, 'dist/src', c))]);
  return h.digest('hex').slice(0, 32);
}

async function ensureIndex(pool: Pool, redis: RedisClient, keys: Keys, cfg: Config, fp: string, force: boolean, log: (m: string) => void): Promise<IndexInfo> {
  const markerKey = keys.prefix + 'bench:index';
  const marker = JSON.parse((await redis.get(markerKey)) ?? 'null') as (IndexInfo & { fingerprint: string }) | null;
  const live = await redis.get(keys.gen());
  if (!force && marker && marker.fingerprint === fp && marker.gen === live) return { ...marker, cached: true };
  log('  rebuilding the Redis index with rebuildIndex() …');
  let r = await rebuildIndex(pool, redis, keys, cfg.tiers, {
    onProgress: (n) => {
      if (n % 100_000 === 0) log(`    ${n} services indexed`);
    },
  });
  if (!r) {
    // the lock of an interrupted earlier bench run (nothing else uses this prefix)
    await redis.del(keys.rebuildLock());
    r = await rebuildIndex(pool, redis, keys, cfg.tiers);
    if (!r) throw new Error('could not take the rebuild lock');
  }
  // rebuildIndex drops the old generation in the background; wait for it, so the bench
  // does not run while Redis is busy unlinking a whole generation
  for (const g of new Set([live, marker?.gen])) if (g && g !== r.gen) await dropGeneration(redis, keys, g);
  const info: IndexInfo = { gen: r.gen, services: r.services, sandboxes: r.sandboxes, ms: r.ms, cached: false };
  await redis.set(markerKey, JSON.stringify({ ...info, fingerprint: fp }));
  return info;
}

const PROD_CAP_COUNT = `SELECT count(*) AS n FROM service_capabilities sc JOIN services s ON s.id = sc.service_id WHERE s.ns = '${PRODUCTION}' AND sc.capability = $1`;

async function facts(pool: Pool, spec: DatasetSpec): Promise<Facts> {
  const popular = capabilityName(0);
  const mid = capabilityName(Math.floor(spec.capabilities / 40));
  const heavy = [0, 1, 2].map(capabilityName);
  const property = 'region:eu-west';
  const deviceClass = 'sensor';
  const [pk, pv] = property.split(':') as [string, string];
  const sizes: Record<string, number> = {
    [`capability=${popular}`]: await countWhere(pool, PROD_CAP_COUNT, [popular]),
    [`capability=${mid}`]: await countWhere(pool, PROD_CAP_COUNT, [mid]),
    [`capability=${popular}&property=${property}`]: await countWhere(
      pool,
      `SELECT count(*) AS n FROM service_capabilities sc JOIN service_properties sp ON sp.service_id = sc.service_id
        JOIN services s ON s.id = sc.service_id WHERE s.ns = '${PRODUCTION}' AND sc.capability = $1 AND sp.key = $2 AND sp.value = $3`,
      [popular, pk, pv],
    ),
    [`iotReady=true`]: await countWhere(pool, `SELECT count(*) AS n FROM iot_profiles i JOIN services s ON s.id = i.service_id WHERE s.ns = '${PRODUCTION}'`, []),
    [`capability=${heavy.join('&capability=')}&iotReady=true`]: await countWhere(
      pool,
      `SELECT count(*) AS n FROM services s JOIN iot_profiles i ON i.service_id = s.id
        WHERE s.ns = '${PRODUCTION}' AND (SELECT count(*) FROM service_capabilities sc WHERE sc.service_id = s.id AND sc.capability = ANY($1)) = 3`,
      [heavy],
    ),
    [`deviceClass=${deviceClass}`]: await countWhere(
      pool,
      `SELECT count(*) AS n FROM iot_profiles i JOIN services s ON s.id = i.service_id WHERE s.ns = '${PRODUCTION}' AND $1 = ANY(i.device_classes)`,
      [deviceClass],
    ),
  };
  for (const c of heavy.slice(1)) sizes[`capability=${c}`] = await countWhere(pool, PROD_CAP_COUNT, [c]);
  return { popularCapability: popular, midCapability: mid, heavyCapabilities: heavy, property, deviceClass, sizes };
}

/** The bench's configuration: the caller's servers, the bench database and key prefix. */
function benchConfig(spec: DatasetSpec): { cfg: Config; serverEnv: Record<string, string>; db: string; baseUrl: string } {
  const base = loadConfig();
  const db = spec.name === 'full' ? 'registry_bench' : spec.name === 'quick' ? 'registry_bench_quick' : 'registry_bench_' + spec.name;
  const serverEnv: Record<string, string> = {
    DATABASE_URL: databaseUrl(base.databaseUrl, db),
    REDIS_URL: base.redisUrl,
    REDIS_CLUSTER_NODES: base.redisClusterNodes.join(','),
    REDIS_KEY_PREFIX: spec.name === 'full' ? 'bench:' : spec.name === 'quick' ? 'benchq:' : `bench${spec.name}:`,
    TIERS: BENCH_TIERS,
    NODE_ENV: 'production',
    ADMIN_API_KEY: 'bench_' + randomBytes(18).toString('base64url'),
    ACCESS_LOG: 'false',
    LOG_LEVEL: 'warn',
    // nothing is in flight when the bench stops a server: skip most of the drain's listen phase
    SHUTDOWN_GRACE_MS: '1000',
  };
  return { cfg: loadConfig(serverEnv), serverEnv, db, baseUrl: base.databaseUrl };
}

export async function prepare(o: PrepareOptions): Promise<BenchData> {
  const spec = o.quick ? QUICK : sizedSpec(o.services ?? 100_000);
  const { cfg, serverEnv, db, baseUrl } = benchConfig(spec);
  const fp = datasetFingerprint(spec);
  const t0 = Date.now();
  let stored = o.regenerate ? null : await cachedDataset(baseUrl, db, fp);
  const dataCached = !!stored;
  if (!stored) {
    o.log(`generating the ${spec.name} data set into database ${db} (${spec.production} production services, ${spec.sandboxes} sandboxes × ${spec.servicesPerSandbox})`);
    await recreateDatabase(baseUrl, db);
    stored = await loadDataset(cfg.databaseUrl, spec, fp, o.log);
    o.log(`  loaded in ${(stored.loadMs / 1000).toFixed(1)} s`);
  } else o.log(`reusing the ${spec.name} data set in database ${db} (built in ${(stored.loadMs / 1000).toFixed(1)} s)`);
  // no statement timeout: the facts' counts take longer than a request's bound at a million
  const pool = createPool(cfg.databaseUrl, 4, { statementMs: 0, queryMs: 0 });
  const redis = createRedis(cfg);
  const keys = new Keys(cfg.redisKeyPrefix);
  try {
    const index = await ensureIndex(pool, redis, keys, cfg, indexFingerprint(stored), o.rebuild || !dataCached, o.log);
    o.log(
      index.cached
        ? `reusing the Redis index (prefix ${cfg.redisKeyPrefix}, generation ${index.gen}; its rebuild took ${(index.ms / 1000).toFixed(1)} s)`
        : `index rebuild of ${index.services} services (${index.sandboxes} sandboxes): ${(index.ms / 1000).toFixed(1)} s`,
    );
    const sb = stored.enterprise[0];
    if (!sb) throw new Error('the data set has no enterprise sandbox');
    const rot = await rotateKey(pool, sb.uuid, sb.name);
    await redis.del(keys.sandboxKey(rot.oldHash));
    await writeSandboxMeta(redis, keys, { uuid: sb.uuid, name: sb.name, tier: rot.tier, version: rot.version }, cfg.tiers[rot.tier] ?? 0, rot.newHash);
    const top = await pool.query<{ capability: string; n: string }>(
      `SELECT sc.capability, count(*) AS n FROM service_capabilities sc JOIN services s ON s.id = sc.service_id
        WHERE s.ns = $1 GROUP BY 1 ORDER BY 2 DESC, 1 LIMIT 1`,
      [sb.uuid],
    );
    return {
      spec,
      cfg,
      serverEnv,
      stored,
      dataCached,
      dataMs: Date.now() - t0,
      index,
      sandbox: { uuid: sb.uuid, key: rot.key, tier: rot.tier, capability: top.rows[0]!.capability, matches: Number(top.rows[0]!.n) },
      facts: await facts(pool, spec),
    };
  } finally {
    redis.disconnect();
    await pool.end();
  }
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const flags = new Set(process.argv.slice(2));
  const n = process.argv.indexOf('--services');
  prepare({ quick: flags.has('--quick'), services: n > 0 ? Number(process.argv[n + 1]) : undefined, regenerate: flags.has('--regenerate'), rebuild: flags.has('--rebuild'), log: (m) => console.log(m) })
    .then((d) => {
      const { key: _key, ...sandbox } = d.sandbox; // the key is a secret of this run only
      console.log(JSON.stringify({ data: d.stored, index: d.index, sandbox, facts: d.facts }, null, 2));
    })
    .catch((e: unknown) => {
      console.error(e);
      process.exit(1);
    });
}
