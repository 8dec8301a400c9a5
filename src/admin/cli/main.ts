// bin/registry: the operator's command-line tool. Reads DATABASE_URL, REDIS_URL (and the
// rest) through the same validated configuration as the server.
import { createReadStream, createWriteStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import { finished } from 'node:stream/promises';
import type { Readable, Writable } from 'node:stream';
import { loadConfig } from '../../hot/config.js';
import { ConfigError, redactUrl } from '../../hot/config-env.js';
import { Keys } from '../../hot/domain/keys.js';
import { ApiError } from '../../hot/domain/errors.js';
import { createPool } from '../../hot/pg/pool.js';
import { migrate } from '../../hot/migrate.js';
import { backfillIndexText } from '../../hot/reindex/index.js';
import { numberOption, parseArgs, progressBar, UsageError } from './args.js';
import { lazyRedis, printStats, reindex, sandboxCreate, tierSet, type Ctx } from './commands.js';
import { exportServices, importServices } from './transfer.js';

export const USAGE = `usage: registry <command>

  import <file.jsonl|->        upsert production services from JSON Lines (by id; idempotent)
         [--reindex]           into PostgreSQL; running servers index them (a large import by
                               one rebuild once it is over), or --reindex rebuilds right after;
                               a line with "ttl" holds a lease: the tokens of new leases go to
                               stdout ({"id","heartbeatToken"})
  export [file|-]              every production service as JSON Lines (default: stdout)
  reindex                      rebuild the Redis index from PostgreSQL
  backfill-index-text          store the index text of services written before migration
         [--batch N]           0004 (optional: makes their rebuild cheaper), N per page
  sandbox create <name>        create a sandbox; prints its uuid and API key (shown once)
         [--lat N --lon N] [--tier T] [--json]
  tier set <uuid> <tier>       change a sandbox's tier (applies to its next request)
  stats                        registry statistics as JSON
  migrate                      apply database migrations

Configuration comes from the environment: DATABASE_URL, REDIS_URL, REDIS_KEY_PREFIX, TIERS, ...`;

export interface Io {
  stdin: NodeJS.ReadableStream;
  stdout: Writable;
  stderr: Writable;
  /** the environment to configure from (tests); absent: the process's, read by config.ts */
  env?: Record<string, string | undefined>;
}

const VALUED = ['lat', 'lon', 'tier', 'batch'] as const;

export async function main(argv: string[], io: Io = { stdin: process.stdin, stdout: process.stdout, stderr: process.stderr }): Promise<number> {
  const out = (l: string) => void io.stdout.write(l + '\n');
  const err = (l: string) => void io.stderr.write(l + '\n');
  let p;
  try {
    p = parseArgs(argv, VALUED);
  } catch (e) {
    err(`${(e as Error).message}\n\n${USAGE}`);
    return 2;
  }
  const [cmd, ...rest] = p.positionals;
  if (!cmd || cmd === 'help' || p.flags.has('help')) {
    (cmd ? out : err)(USAGE);
    return cmd ? 0 : 2;
  }
  let cfg;
  try {
    cfg = loadConfig(io.env);
  } catch (e) {
    if (e instanceof ConfigError) {
      err(`configuration error: ${e.message}`);
      return 2;
    }
    throw e;
  }
  const pool = createPool(cfg.databaseUrl, 4);
  const redis = lazyRedis(cfg);
  const ctx: Ctx = { cfg, pool, keys: new Keys(cfg.redisKeyPrefix), redis: redis.get, out, err, errStream: io.stderr };
  try {
    await migrate(pool);
    return await run(ctx, cmd, rest, p, io);
  } catch (e) {
    if (e instanceof UsageError) {
      err(`${e.message}\n\n${USAGE}`);
      return 2;
    }
    if (e instanceof ApiError) err(`error: ${e.message}`);
    else if ((e as { code?: string }).code === 'ECONNREFUSED') err(`error: cannot reach ${(e as Error).message.includes('6379') || (e as Error).message.includes('redis') ? redactUrl(cfg.redisUrl) : redactUrl(cfg.databaseUrl)}: ${(e as Error).message}`);
    else err(`error: ${(e as Error).message ?? String(e)}`);
    return 1;
  } finally {
    await redis.close();
    await pool.end();
  }
}

async function run(ctx: Ctx, cmd: string, args: string[], p: ReturnType<typeof parseArgs>, io: Io): Promise<number> {
  switch (cmd) {
    case 'import': {
      const file = args[0];
      if (!file) throw new UsageError('import needs a file (or - for standard input)');
      const size = file === '-' ? 0 : (await stat(file)).size;
      const input = (file === '-' ? io.stdin : createReadStream(file)) as Readable;
      let bytes = 0;
      input.on('data', (b: Buffer | string) => (bytes += b.length));
      const bar = progressBar('import', size || null, io.stderr, { bytes: !!size });
      const t0 = Date.now();
      const batch = numberOption(p, 'batch', 1, 10_000);
      // the bar counts bytes of the file; its note, the services read and their rate
      const rate = (lines: number) => `${lines} lines, ${Math.round(lines / Math.max(0.001, (Date.now() - t0) / 1000))}/s`;
      const sum = await importServices(ctx.pool, input, { batch, warn: ctx.err, progress: (lines) => bar.update(size ? bytes : lines, rate(lines)) });
      // the heartbeat tokens of the leases started (lines with "ttl"), shown once: JSON Lines on stdout
      for (const t of sum.tokens) io.stdout.write(JSON.stringify(t) + '\n');
      bar.done(`imported ${sum.lines} lines in ${((Date.now() - t0) / 1000).toFixed(1)} s (${Math.round(sum.lines / Math.max(0.001, (Date.now() - t0) / 1000))}/s): ${sum.created} created, ${sum.updated} updated, ${sum.unchanged} unchanged, ${sum.rejected} rejected; ${sum.replacementsChanged} replacement lists set`);
      // The index: each chunk left one outbox row for its services. A running server applies
      // them, or covers a large backlog by one rebuild once the import is over
      // (reindex/backlog.ts); --reindex rebuilds here, and drops the rows (reindex/covered.ts).
      // (--no-reindex, the default before, is accepted and changes nothing.)
      if (!sum.indexOnly) return sum.rejected ? 1 : 0; // (leases in Redis it changed: the servers' sweeper)
      if (p.flags.has('reindex')) await reindex(ctx);
      else ctx.err(`index: ${sum.indexOnly} writes wait in the outbox; a running server indexes them (by a rebuild once the import is over, when there are many), or now: registry reindex`);
      return sum.rejected ? 1 : 0;
    }
    case 'export': {
      const file = args[0] ?? '-';
      const dest = file === '-' ? io.stdout : createWriteStream(file);
      const t0 = Date.now();
      const n = await exportServices(ctx.pool, dest);
      if (dest !== io.stdout) {
        dest.end();
        await finished(dest);
      }
      ctx.err(`exported ${n} production services in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
      return 0;
    }
    case 'reindex':
      return (await reindex(ctx)) ? 0 : 1;
    case 'backfill-index-text': {
      const t0 = Date.now();
      const total = Number((await ctx.pool.query<{ n: string }>('SELECT count(*) AS n FROM services')).rows[0]!.n);
      const bar = progressBar('backfill', total || null, io.stderr);
      const filled = await backfillIndexText(ctx.pool, numberOption(p, 'batch', 1, 10_000) ?? 2000, (seen) => bar.update(seen));
      bar.done(`stored the index text of ${filled} services in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
      return 0;
    }
    case 'sandbox': {
      if (args[0] !== 'create' || !args[1]) throw new UsageError('usage: registry sandbox create <name> [--lat N --lon N] [--tier T] [--json]');
      const lat = numberOption(p, 'lat', -90, 90);
      const lon = numberOption(p, 'lon', -180, 180);
      if ((lat === undefined) !== (lon === undefined)) throw new UsageError('give both --lat and --lon, or neither');
      await sandboxCreate(ctx, args.slice(1).join(' '), lat === undefined ? null : { lat, lon: lon! }, p.options.tier, p.flags.has('json'));
      return 0;
    }
    case 'tier': {
      if (args[0] !== 'set' || !args[1] || !args[2]) throw new UsageError('usage: registry tier set <uuid> <tier>');
      await tierSet(ctx, args[1], args[2]);
      return 0;
    }
    case 'stats':
      await printStats(ctx);
      return 0;
    case 'migrate':
      ctx.out('database schema is up to date');
      return 0;
    default:
      throw new UsageError(`unknown command "${cmd}"`);
  }
}
