// Sandbox routes: creation (public, throttled per client address), the public dashboard
// and poll data. The registry of one sandbox (/sandbox/{uuid}/services...) is registered by
// the features that own it (writes/, search/, liveness/) through keyed.ts.
import type { TemplatedApp } from 'uWebSockets.js';
import type { Logger } from 'pino';
import type { Config } from '../config.js';
import { ApiError } from '../domain/errors.js';
import type { Keys } from '../domain/keys.js';
import { check, validators } from '../domain/validation.js';
import { route, type RouteOptions } from '../http/route.js';
import { parseJson } from '../http/body.js';
import type { Pool } from '../pg/pool.js';
import type { RedisClient } from '../redis/client.js';
import { integer } from '../redis/replies.js';
import type { SandboxAuth } from './auth.js';
import { hashKey, newSandboxKey, sandboxUuid } from './keys.js';
import { ensureNamespace, writeSandboxMeta, type PendingSandboxes } from './meta.js';
import { enqueueSandbox, getSandbox, insertSandbox, type SandboxRow } from './store.js';
import { pollData, sandboxSummary, serviceQuota } from './summary.js';

/** What the sandbox routes need of their thread. */
export interface SandboxesContext {
  cfg: Config;
  pg: Pool;
  redis: RedisClient;
  keys: Keys;
  log: Logger;
  auth: SandboxAuth;
  pendingSandboxes: PendingSandboxes;
}

/** The sandbox of a uuid path segment (any case) from PostgreSQL, or the 404. */
async function sandboxOr404(app: SandboxesContext, segment: string): Promise<SandboxRow> {
  const uuid = sandboxUuid(segment);
  const s = uuid ? await getSandbox(app.pg, uuid) : null;
  if (!s) throw new ApiError('SANDBOX_NOT_FOUND');
  return s;
}

export function registerSandbox(uws: TemplatedApp, app: SandboxesContext, o: RouteOptions): void {
  const ob = { ...o, body: true };

  route(uws, 'post', '/sandboxes', async (req, reply, body) => {
    // validate first: the throttle counts sandboxes, so a client's rejected bodies do not
    // use up its allowance
    const b = check(validators.sandboxCreate, parseJson(req, body));
    const name = b.name.trim();
    if (!name) throw new ApiError('SANDBOX_NAME_BLANK');
    const minute = Math.floor(Date.now() / 60_000);
    const tk = app.keys.createThrottle(req.remote, minute);
    const n = integer(await app.redis.count(tk, 120), 'count');
    if (n > app.cfg.sandboxCreatePerMinute) {
      const retry = String(Math.max(1, Math.ceil(((minute + 1) * 60_000 - Date.now()) / 1000)));
      throw new ApiError('SANDBOX_CREATE_THROTTLED', [app.cfg.sandboxCreatePerMinute], { 'Retry-After': retry });
    }
    const { key, prefix } = newSandboxKey(name);
    const hash = hashKey(key);
    const row = await insertSandbox(app.pg, name, prefix, hash, app.cfg.defaultTier, b.location ?? null);
    // derived state; if Redis is away the key resolves through PostgreSQL until the
    // sweeper has written it (the index counts as incomplete meanwhile: sandboxes/key-resolver.ts)
    await Promise.all([
      writeSandboxMeta(app.redis, app.keys, row, app.cfg.tiers[row.tier] ?? 0, hash.toString('hex')),
      ensureNamespace(app.redis, app.keys, row.uuid),
    ]).catch(async (err: unknown) => {
      app.pendingSandboxes.mark();
      app.log.warn({ err: String(err) }, 'sandbox created while Redis was unavailable');
      await enqueueSandbox(app.pg, row.uuid);
    });
    reply.json(201, JSON.stringify({ ...sandboxSummary(app.cfg.tiers, row), apiKey: key }), [['Cache-Control', 'no-store'], ['Location', `/sandbox/${row.uuid}/dashboard`]]);
  }, ob);

  route(uws, 'get', '/sandbox/:uuid/dashboard', async (req, reply) => {
    const s = await sandboxOr404(app, req.params[0]!);
    const poll = await pollData(app.redis, app.keys, s.uuid, 12, app.auth.records);
    reply.json(
      200,
      JSON.stringify({
        ...sandboxSummary(app.cfg.tiers, s),
        ...serviceQuota(app.cfg.tierMaxServices, s),
        counters: {
          total: poll?.total ?? 0,
          rejected: poll?.rejected ?? 0,
          lastMinute: poll ? poll.buckets.reduce((a, b) => a + b, 0) : 0,
        },
      }),
      [['Cache-Control', 'no-store']],
    );
  }, o);

  route(uws, 'get', '/sandbox/:uuid/poll', async (req, reply) => {
    const uuid = sandboxUuid(req.params[0]!) ?? ''; // UUIDs compare case-insensitively; "" is none
    let p = uuid ? await pollData(app.redis, app.keys, uuid, undefined, app.auth.records) : null;
    if (!p) {
      // Redis may have lost the sandbox's hash: PostgreSQL decides whether it exists
      const s = await sandboxOr404(app, uuid);
      await writeSandboxMeta(app.redis, app.keys, s, app.cfg.tiers[s.tier] ?? 0, '');
      p = await pollData(app.redis, app.keys, uuid, undefined, app.auth.records);
      if (!p) throw new ApiError('SANDBOX_NOT_FOUND');
    }
    const window = p.buckets.slice(-12).reduce((a, b) => a + b, 0);
    reply.json(
      200,
      JSON.stringify({ uuid, now: Date.now(), total: p.total, rateLimit: p.limit, bucketSeconds: 5, tier: p.tier, rejected: p.rejected, windowTotal: window, buckets: p.buckets }),
      [['Cache-Control', 'no-store']],
    );
  }, o);
}
