// The expiry's own way into the index (docs/decisions/expiry-sweeper.md): one
// health-flip-1.lua call per page of a namespace patches the documents' health and the
// health-dependent sets (EXPIRY_PATCH, from the dimensions table) instead of an apply-service
// per service. The sweeper calls it twice: flipIndex() as soon as the leases turned critical
// (visible before PostgreSQL has it; the revision stays), applyExpired() after the commit (the
// revision recorded, the leases settled by lease-settle-2.lua, the outbox acknowledged; what
// the scripts cannot patch goes through the projector).
import { EXPIRY_PATCH } from './expiry-patch.js';
import type { Keys } from '../domain/keys.js';
import type { Projector } from '../registry/index.js';
import type { RedisClient } from '../redis/client.js';
import { healthFlipReply, stringArray } from '../redis/replies.js';
import type { ExpiredEntry } from './store.js';
import { applyLease, shardOf } from './redis-lease.js';

/** services per health-flip call: one Lua call holds Redis for its whole page */
const PAGE = 250;

/**
 * The live generation when no rebuild is writing another one (null otherwise: the general
 * path, which also writes the generation being built, applies). Read as the projector
 * does: a changed live pointer after `building` means a switch went by, read both again.
 */
export async function liveGeneration(redis: RedisClient, keys: Keys): Promise<string | null> {
  let live: string | null;
  let building: string | null;
  do {
    live = await redis.get(keys.gen());
    building = await redis.get(keys.building());
  } while ((await redis.get(keys.gen())) !== live);
  return building ? null : live;
}

/** One expiry for health-flip: the service, its namespace, the revision it expires from, and the one committed (flip: the same). */
export interface FlipItem {
  id: string;
  ns: string;
  from: number;
  to: number;
}

/** The items in pages of one namespace each. */
function pages(items: FlipItem[]): { ns: string; items: FlipItem[] }[] {
  const byNs = new Map<string, FlipItem[]>();
  for (const x of items) {
    const l = byNs.get(x.ns);
    if (l) l.push(x);
    else byNs.set(x.ns, [x]);
  }
  const out: { ns: string; items: FlipItem[] }[] = [];
  for (const [ns, l] of byNs) for (let i = 0; i < l.length; i += PAGE) out.push({ ns, items: l.slice(i, i + PAGE) });
  return out;
}

/** health-flip on one page: null when the namespace is not indexed in `gen` */
async function flipPage(redis: RedisClient, keys: Keys, gen: string, ns: string, mode: 'flip' | 'commit', items: FlipItem[]): Promise<{ changed: number; left: string[] } | null> {
  const args: (string | number)[] = [keys.ver(ns, gen), keys.base(ns, gen), keys.invalidationChannel(), ns, EXPIRY_PATCH.oldTail, EXPIRY_PATCH.newTail, EXPIRY_PATCH.left.join('\n'), EXPIRY_PATCH.joined.join('\n'), mode];
  for (const x of items) args.push(x.id, x.from, x.to);
  return healthFlipReply(await redis.healthFlip(...args));
}

/**
 * Make the expiries visible in generation `gen` (the sweeper's provisional flip, before
 * PostgreSQL has them). Returns how many documents changed (an id whose index holds another
 * revision is left to the durable write).
 */
export async function flipIndex(redis: RedisClient, keys: Keys, gen: string, items: FlipItem[]): Promise<number> {
  const r = await Promise.all(pages(items).map((p) => flipPage(redis, keys, gen, p.ns, 'flip', p.items)));
  return r.reduce((n, x) => n + (x?.changed ?? 0), 0);
}

/**
 * Apply committed expiries (liveness/store.ts expireMany) to Redis: the index (health-flip in
 * commit mode; the general path for what it leaves, and for everything while a rebuild
 * runs), then each lease's committed record; their outbox rows go with the projector's next
 * ack flush. Returns whether all of it reached Redis; when not, the outbox rows stay and the
 * projector's sweeper applies them (throws only what the projector's own path throws).
 */
export async function applyExpired(redis: RedisClient, keys: Keys, projector: Projector, done: ExpiredEntry[], now: number): Promise<boolean> {
  if (!done.length) return true;
  const entry = (e: ExpiredEntry) => ({ row: e.row, ns: e.ns, id: e.id });
  const gen = await liveGeneration(redis, keys);
  if (!gen) return projector.syncQuietly(done.map(entry));
  const byId = new Map(done.map((e) => [e.id, e]));
  const general: ExpiredEntry[] = [];
  await Promise.all(
    pages(done.map((e) => ({ id: e.id, ns: e.ns, from: e.from, to: e.version }))).map(async (p) => {
      const r = await flipPage(redis, keys, gen, p.ns, 'commit', p.items);
      for (const id of r ? r.left : p.items.map((x) => x.id)) general.push(byId.get(id)!);
    }),
  );
  const slow = new Set(general);
  const fast = done.filter((e) => !slow.has(e));
  // the general path loads the committed state again and applies index and lease together
  const ok = general.length ? await projector.syncQuietly(general.map(entry)) : true;
  await settleLeases(redis, keys, fast, now);
  projector.ack(fast.map((e) => e.row));
  return ok;
}

/** The committed leases: lease-settle per shard page; a record it cannot settle gets a full lease-apply. */
async function settleLeases(redis: RedisClient, keys: Keys, done: ExpiredEntry[], now: number): Promise<void> {
  const byShard = new Map<number, ExpiredEntry[]>();
  for (const e of done) {
    const s = shardOf(e.id);
    const l = byShard.get(s);
    if (l) l.push(e);
    else byShard.set(s, [e]);
  }
  const byId = new Map(done.map((e) => [e.id, e]));
  const rest: ExpiredEntry[] = [];
  await Promise.all(
    [...byShard].flatMap(([shard, list]) => {
      const calls: Promise<void>[] = [];
      for (let i = 0; i < list.length; i += PAGE) {
        const args: (string | number)[] = [keys.leases(shard), keys.deadlines(shard)];
        for (const e of list.slice(i, i + PAGE)) args.push(e.id, e.from, e.version, e.lease.criticalSince ?? now);
        calls.push(redis.leaseSettle(...args).then((r) => void rest.push(...stringArray(r, 'lease-settle').map((id) => byId.get(id)!))));
      }
      return calls;
    }),
  );
  await Promise.all(rest.map((e) => applyLease(redis, keys, e.id, e.ns, e.version, e.lease, now)));
}
