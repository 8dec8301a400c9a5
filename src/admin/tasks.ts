// Operator tasks run by the Makefile: `migrate`, `seed`, `reindex`.
import { loadConfig } from '../hot/config.js';
import { ConfigError } from '../hot/config-env.js';
import { Keys } from '../hot/domain/keys.js';
import { createRedis } from '../hot/redis/client.js';
import { createPool } from '../hot/pg/pool.js';
import { migrate } from '../hot/migrate.js';
import { rebuildIndex } from '../hot/reindex/index.js';
import { seedDemo } from './seed.js';

async function main(cmd: string | undefined): Promise<void> {
  const cfg = loadConfig();
  const pool = createPool(cfg.databaseUrl, 4);
  try {
    switch (cmd) {
      case 'migrate': {
        const applied = await migrate(pool);
        console.log(applied.length ? `applied ${applied.join(', ')}` : 'database schema is up to date');
        break;
      }
      case 'seed': {
        const r = await seedDemo(pool, cfg.defaultTier);
        console.log(r.skipped ? 'demo data: production already has services, nothing added' : `demo data: ${r.services} production services (deprecated example: /services/${r.deprecatedId}), ${r.sandboxes} sandboxes`);
        break;
      }
      case 'reindex': {
        const redis = createRedis(cfg);
        try {
          const r = await rebuildIndex(pool, redis, new Keys(cfg.redisKeyPrefix), cfg.tiers);
          console.log(r ? `index rebuilt: ${r.services} services, ${r.sandboxes} sandboxes in ${r.ms} ms (generation ${r.gen})` : 'another rebuild is running');
          if (r) console.log(`previous generation dropped: ${await r.retired} keys`);
        } finally {
          redis.disconnect();
        }
        break;
      }
      default:
        console.error('usage: node dist/src/admin/tasks.js migrate|seed|reindex');
        process.exitCode = 2;
    }
  } finally {
    await pool.end();
  }
}

main(process.argv[2]).catch((e: unknown) => {
  console.error(e instanceof ConfigError ? `configuration error: ${e.message}` : e);
  process.exit(1);
});
