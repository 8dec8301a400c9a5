// The admin API read by the dashboard: stats, the paged sandbox list, sandbox detail, the
// located sandboxes for the overview map, and tier changes. Every handler authenticates
// first, so an unauthenticated caller learns nothing (401) before anything else is checked.
import type { TemplatedApp } from 'uWebSockets.js';
import type { App } from '../hot/app.js';
import { ApiError } from '../hot/domain/errors.js';
import { check, validators } from '../hot/domain/validation.js';
import { route, type Headers, type RouteOptions } from '../hot/http/route.js';
import { parseJson } from '../hot/http/body.js';
import { getSandbox, pollData, sandboxSummary, sandboxUuid, serviceQuota, setTier } from '../hot/sandboxes/index.js';
import { healthCounts } from '../hot/liveness/index.js';
import { countProjectorFailure } from '../hot/registry/index.js';
import { adminGuard, requireAdmin } from './auth.js';
import { pageFields, parseListQuery } from './paging.js';
import { listSandboxes, locatedSandboxes, tierHistory } from './queries.js';
import { stats } from './stats.js';

const NO_STORE: Headers = [['Cache-Control', 'no-store']];
/** markers on the overview map; more would only be ink */
const MAP_POINTS = 2000;

export function registerAdminApi(uws: TemplatedApp, app: App, o: RouteOptions): void {
  // the credential before the body (adminGuard): a stranger's body is never read
  const ob = { ...o, body: true, guard: adminGuard(app) };

  route(uws, 'get', '/admin/api/stats', async (req, reply) => {
    await requireAdmin(app, req);
    reply.json(200, JSON.stringify(await stats(app)), NO_STORE);
  }, o);

  route(uws, 'get', '/admin/api/sandboxes', async (req, reply) => {
    await requireAdmin(app, req);
    const q = parseListQuery(req.query, app.cfg.tiers);
    const size = app.cfg.adminPageSize;
    const { rows, total } = await listSandboxes(app.pg, q.tier, size, q.page * size);
    const items = rows.map((r) => ({ ...sandboxSummary(app.cfg.tiers, r), serviceCount: r.service_count }));
    reply.json(200, JSON.stringify({ items, tier: q.tier, ...pageFields(total, size, q.page) }), NO_STORE);
  }, o);

  route(uws, 'get', '/admin/api/locations', async (req, reply) => {
    await requireAdmin(app, req);
    reply.json(200, JSON.stringify(await locatedSandboxes(app.pg, MAP_POINTS)), NO_STORE);
  }, o);

  route(uws, 'get', '/admin/api/sandboxes/:uuid', async (req, reply) => {
    await requireAdmin(app, req);
    const uuid = req.params[0]!;
    const s = sandboxUuid(uuid) ? await getSandbox(app.pg, uuid) : null;
    if (!s) throw new ApiError('SANDBOX_NOT_FOUND');
    const [health, history, poll] = await Promise.all([
      healthCounts(app.pg, s.uuid),
      tierHistory(app.pg, s.uuid),
      // counters are derived data: the detail still answers while Redis is away
      pollData(app.redis, app.keys, s.uuid, 12, app.auth.records).catch(() => null),
    ]);
    reply.json(
      200,
      JSON.stringify({
        ...sandboxSummary(app.cfg.tiers, s),
        ...serviceQuota(app.cfg.tierMaxServices, s),
        health: health.sandboxes,
        counters: poll ? { total: poll.total, rejected: poll.rejected, windowTotal: poll.buckets.reduce((a, b) => a + b, 0) } : null,
        tierChanges: history.map((h) => ({ from: h.old_tier, to: h.new_tier, by: h.changed_by, at: h.changed_at.toISOString() })),
      }),
      NO_STORE,
    );
  }, o);

  route(uws, 'post', '/admin/api/sandboxes/:uuid/tier', async (req, reply, body) => {
    const who = await requireAdmin(app, req);
    const { tier } = check(validators.tierChange, parseJson(req, body));
    const limit = app.cfg.tiers[tier];
    if (!Object.hasOwn(app.cfg.tiers, tier) || limit === undefined) {
      throw new ApiError('UNKNOWN_TIER', [tier, Object.keys(app.cfg.tiers).join(', ')]);
    }
    const uuid = req.params[0]!;
    if (!sandboxUuid(uuid)) throw new ApiError('SANDBOX_NOT_FOUND');
    // committed with an outbox row, then applied like every other write: with the row's
    // version (a slower, older change never overwrites it) and swept if this apply fails;
    // the rate-limit script reads the limit from Redis, so it holds from the next request
    const row = await setTier(app.pg, uuid.toLowerCase(), tier, who.by);
    if (row.outbox !== null) await app.projector.syncQuietly([{ row: row.outbox, ns: row.uuid, id: row.uuid, kind: 'sandbox' }]);
    // Threads holding a rate-limit lease of this sandbox drop it: this one at once, the
    // others (and other nodes) when the message arrives, at the latest when it expires
    app.auth.dropAdmissions(row.uuid);
    await app.redis.publish(app.keys.invalidationChannel(), 'lease:' + row.uuid).catch((err: unknown) => {
      countProjectorFailure('invalidate');
      app.log.warn({ err: String(err), uuid: row.uuid }, 'lease drop not published: other threads keep their lease until it expires (BATCH_MS)');
    });
    reply.json(200, JSON.stringify(sandboxSummary(app.cfg.tiers, row)), NO_STORE);
  }, ob);

  // Unknown /admin/api/* paths: 401 first (nothing is revealed to strangers), then 404.
  route(uws, 'any', '/admin/api/*', async (req, reply) => {
    await requireAdmin(app, req);
    reply.error('ROUTE_NOT_FOUND', [req.method, req.path]);
  }, o);
}
