// The small commands of bin/registry: reindex (with a progress bar), sandbox create, tier
// set, stats. Each talks to PostgreSQL (the source of truth) and keeps Redis's derived
// copy in step, as the HTTP API does.
import type { App } from '../../hot/app.js';
import type { Config } from '../../hot/config.js';
import { Keys } from '../../hot/domain/keys.js';
import { check, validators } from '../../hot/domain/validation.js';
import pino from 'pino';
import { Index } from '../../hot/search/index.js';
import { Projector } from '../../hot/registry/index.js';
import { createRedis, type RedisClient } from '../../hot/redis/client.js';
import { hashKey, insertSandbox, newSandboxKey, type SandboxRow, sandboxUuid, setTier, writeSandboxMeta } from '../../hot/sandboxes/index.js';
import type { Pool } from '../../hot/pg/pool.js';
import { rebuildIndex, type RebuildResult } from '../../hot/reindex/index.js';
import { stats } from '../stats.js';
import { progressBar, UsageError } from './args.js';

export interface Ctx {
  cfg: Config;
  pool: Pool;
  keys: Keys;
  /** connected on first use */
  redis(): RedisClient;
  out: (line: string) => void;
  err: (line: string) => void;
  /** where progress bars go (stderr) */
  errStream: NodeJS.WritableStream & { isTTY?: boolean };
}

export function lazyRedis(cfg: Config): { get(): RedisClient; close(): Promise<void> } {
  let r: RedisClient | null = null;
  return {
    get: () => (r ??= createRedis(cfg)),
    close: async () => {
      if (r) await r.quit().catch(() => r?.disconnect());
    },
  };
}

export async function reindex(ctx: Ctx, quiet = false): Promise<RebuildResult | null> {
  // the bar's total: the planner's estimate (count(*) reads the whole table, ~1 s a million)
  // unless the table was never analysed
  const est = Number((await ctx.pool.query<{ n: string }>("SELECT reltuples::bigint AS n FROM pg_class WHERE oid = 'services'::regclass")).rows[0]!.n);
  const total = est >= 0 ? est : Number((await ctx.pool.query<{ n: string }>('SELECT count(*) AS n FROM services')).rows[0]!.n);
  const bar = quiet ? null : progressBar('reindex', total, ctx.errStream);
  const r = await rebuildIndex(ctx.pool, ctx.redis(), ctx.keys, ctx.cfg.tiers, { onProgress: (n) => bar?.update(n) });
  bar?.done(r ? `index rebuilt: ${r.services} services, ${r.sandboxes} sandboxes in ${r.ms} ms (generation ${r.gen}); ${r.outboxCovered} outbox writes it covered dropped` : 'another rebuild is running; nothing done');
  // the previous generation goes after a grace period: wait for it before disconnecting
  if (r) await r.retired;
  return r;
}

function summary(cfg: Config, s: SandboxRow): Record<string, unknown> {
  return {
    uuid: s.uuid,
    name: s.name,
    tier: s.tier,
    rateLimit: cfg.tiers[s.tier] ?? 0,
    location: s.lat === null || s.lon === null ? null : { lat: s.lat, lon: s.lon },
    createdAt: s.created_at.toISOString(),
  };
}

export async function sandboxCreate(ctx: Ctx, name: string, loc: { lat: number; lon: number } | null, tier: string | undefined, json: boolean): Promise<void> {
  const body = check(validators.sandboxCreate, loc ? { name, location: loc } : { name });
  const t = tier ?? ctx.cfg.defaultTier;
  if (!Object.hasOwn(ctx.cfg.tiers, t)) throw new UsageError(`unknown tier "${t}"; one of ${Object.keys(ctx.cfg.tiers).join(', ')}`);
  const clean = body.name.trim();
  if (!clean) throw new UsageError('the name must not be blank');
  const { key, prefix } = newSandboxKey(clean);
  const hash = hashKey(key);
  const row = await insertSandbox(ctx.pool, clean, prefix, hash, t, body.location ?? null);
  try {
    await writeSandboxMeta(ctx.redis(), ctx.keys, row, ctx.cfg.tiers[row.tier] ?? 0, hash.toString('hex'));
    await new Index(ctx.redis(), ctx.keys).ensureNamespace(row.uuid);
  } catch (e) {
    ctx.err(`warning: sandbox saved, but Redis could not be updated (${(e as Error).message}); the server catches up by itself`);
  }
  if (json) ctx.out(JSON.stringify({ ...summary(ctx.cfg, row), apiKey: key }));
  else {
    ctx.out(`uuid:    ${row.uuid}`);
    ctx.out(`apiKey:  ${key}`);
    ctx.out(`tier:    ${row.tier} (${ctx.cfg.tiers[row.tier]} requests/minute)`);
    ctx.err('The key is shown only this once: store it now.');
  }
}

export async function tierSet(ctx: Ctx, uuid: string, tier: string): Promise<void> {
  if (!sandboxUuid(uuid)) throw new UsageError(`"${uuid}" is not a sandbox uuid`);
  const limit = ctx.cfg.tiers[tier];
  if (!Object.hasOwn(ctx.cfg.tiers, tier) || limit === undefined) throw new UsageError(`unknown tier "${tier}"; one of ${Object.keys(ctx.cfg.tiers).join(', ')}`);
  const row = await setTier(ctx.pool, uuid.toLowerCase(), tier, 'cli');
  // committed with an outbox row; applied now with the row's version like the server does
  // (the rate-limit script reads the limit from Redis), or by a server's sweeper
  if (row.outbox !== null) {
    const projector = new Projector(ctx.pool, ctx.redis(), ctx.keys, ctx.cfg.tiers, pino({ level: 'warn' }, pino.destination(2)));
    if (!(await projector.syncQuietly([{ row: row.outbox, ns: row.uuid, id: row.uuid, kind: 'sandbox' }]))) {
      ctx.err('warning: tier saved, but Redis could not be updated yet; a running server applies it within OUTBOX_SWEEP_MS');
    }
  }
  ctx.out(JSON.stringify(summary(ctx.cfg, row)));
}

export async function printStats(ctx: Ctx): Promise<void> {
  // stats() reads only these members of the app
  const app = { cfg: ctx.cfg, pg: ctx.pool, redis: ctx.redis(), keys: ctx.keys } as unknown as App;
  ctx.out(JSON.stringify(await stats(app), null, 2));
}
