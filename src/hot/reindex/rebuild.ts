// Rebuild the Redis index from PostgreSQL into a fresh generation of keys, then switch the
// live generation in one SET. Readers never see a half-built index: until the switch they
// keep the old generation (or, when Redis lost everything, answer 503). Writers apply to
// the building generation too. Every state is applied at its own revision (the version read
// with it), never 0, and deleted ids get their tombstone revisions back: a sync that loaded
// an older state before the rebuild read a newer one loses to it in the new generation as
// in the old (redis/README.md, "Revisions").
import { randomBytes } from 'node:crypto';
import { Cluster } from 'ioredis';
import { type Keys, PRODUCTION } from '../domain/keys.js';
import { reseedLeases } from '../liveness/index.js';
import { applyArgs, loadCapabilityTombstonePage, loadIndexPage, loadTombstonePage } from '../registry/index.js';
import type { RedisClient } from '../redis/client.js';
import type { Pool } from '../pg/pool.js';
import { writeSandboxMeta } from '../sandboxes/index.js';
import { dropCovered, markOutbox, type OutboxMark } from './covered.js';
import type { TierConfig } from '../config.js';
import { ifEqualReply, NOT_INDEXED } from '../redis/replies.js';
import { BUCKET_WIDTH } from '../../workers/buckets.js';
import { RebuildAborted, type Run, SetWriter, vanished, writePage } from './write-pages.js';

export { RebuildAborted };

export interface RebuildResult {
  gen: string;
  services: number;
  sandboxes: number;
  ms: number;
  /** writes of the outbox rows it covered, deleted once it was live (covered.ts) */
  outboxCovered: number;
  /**
   * Settles once the previous generation's keys are gone (after RETIRE_GRACE_MS): a
   * short-lived caller (the CLI) awaits it before disconnecting; a server need not.
   */
  retired: Promise<number>;
  /** how long the previous generation outlives the switch (RETIRE_GRACE_MS or UNHEARD_GRACE_MS) */
  graceMs: number;
}

/**
 * How long the previous generation outlives the switch. Every thread learns of the switch
 * from the "gen:" message at once, or from its watcher within a tick (500 ms) should the
 * message be lost; a search that read the old pointer just before the switch still finds
 * its keys meanwhile instead of answering 503.
 */
export const RETIRE_GRACE_MS = 2000;
/**
 * The grace when no thread received the switch message (no server subscribed: none running,
 * or one whose subscription is down): two ticks of a watcher, the only way such a thread
 * learns of the switch.
 */
export const UNHEARD_GRACE_MS = 1000;

// The lock is short and renewed while the rebuild runs: a rebuilder that dies (SIGKILL,
// lost host) blocks the next one for at most LOCK_MS, not for the length of a rebuild.
const LOCK_MS = 15_000;
const RENEW_MS = 5_000;
// Services per PostgreSQL page and per index-page.lua call: 2,000 keeps every unpack() at
// 4,000 values (two per service), half of Lua's C-stack bound of 8,000.
const BATCH = 2000;

/**
 * Seqs of set members a rebuild holds before writing their buckets (index-sets-1.lua): 32
 * buckets, ~65 pages. Fewer touch each small set more often; the memory held is this many
 * services' members, 8 bytes each (docs/decisions/rebuild.md).
 */
const FLUSH_SEQS = 32 * BUCKET_WIDTH;
/** pages handed to Redis before the oldest is waited for: Redis always has the next one queued */
const IN_FLIGHT = 2;

/** rebuildIndex()'s knobs, for its callers' progress and tests' interleavings */
export interface RebuildOptions {
  /** after each page is written; a returned promise holds the rebuild (tests interleave writes there) */
  onProgress?: (done: number) => unknown;
  /** services per page (tests that interleave writes between pages fix it) */
  pageSize?: number;
  /** seqs of set members held before their buckets are written, a multiple of BUCKET_WIDTH (tests make it one bucket) */
  flushSeqs?: number;
  /** the clock fresh leases are counted from (liveness; tests inject theirs) */
  now?: () => number;
}

export async function rebuildIndex(pool: Pool, redis: RedisClient, keys: Keys, tiers: TierConfig, opts: RebuildOptions = {}): Promise<RebuildResult | null> {
  const { onProgress = () => undefined, pageSize = BATCH, flushSeqs = FLUSH_SEQS, now = Date.now } = opts;
  const t0 = Date.now();
  const token = randomBytes(8).toString('hex');
  if ((await redis.set(keys.rebuildLock(), token, 'PX', LOCK_MS, 'NX')) !== 'OK') return null; // another node rebuilds
  let lost = false;
  const heartbeat = setInterval(() => {
    redis.pexpireIfEqual(keys.rebuildLock(), token, LOCK_MS).then(
      (r) => {
        try {
          lost ||= !ifEqualReply(r, 'pexpire-if-equal');
        } catch {
          lost = true; // a reply of another shape: the lock is not known to be ours
        }
      },
      () => undefined, // Redis away: the next command of the rebuild fails too
    );
  }, RENEW_MS);
  heartbeat.unref();
  let mark: OutboxMark;
  let done: RebuildResult;
  try {
    const gen = randomBytes(5).toString('hex');
    const oldGen = await redis.get(keys.gen());
    // we hold the lock: a building pointer left now is a dead rebuild's partial generation
    const dead = await redis.get(keys.building());
    await redis.set(keys.building(), gen);
    if (dead && dead !== oldGen) void dropGeneration(redis, keys, dead).catch(() => undefined);
    // before anything is read: the outbox rows committed by now are covered by what follows
    mark = await markOutbox(pool);
    // namespaces first, so that writers can apply to the building generation
    const sbs = await pool.query<{ uuid: string; name: string; tier: string; version: string; key_hash: Buffer }>('SELECT uuid, name, tier, version, key_hash FROM sandboxes');
    await redis.set(keys.ver(PRODUCTION, gen), '1');
    await Promise.all(sbs.rows.map((s) => redis.set(keys.ver(s.uuid, gen), '1')));
    await Promise.all(sbs.rows.map((s) => writeSandboxMeta(redis, keys, s, tiers[s.tier] ?? 0, s.key_hash.toString('hex'))));
    let n = 0;
    // The stages overlap: PostgreSQL reads page k+1 while this thread serialises page k and
    // Redis writes the pages before it, up to IN_FLIGHT of them (docs/decisions/rebuild.md).
    const fetch = (after: number) => {
      const p = loadIndexPage(pool, after, pageSize);
      p.catch(() => undefined); // handled where it is awaited; no unhandled rejection meanwhile
      return p;
    };
    const sets = new SetWriter(redis, keys, gen);
    const settle = async (w: { runs: Promise<Run[]>; last: number }) => {
      const runs = await w.runs;
      // NOT_INDEXED: a namespace marker of this generation vanished — Redis was emptied under us
      if (runs.some((r) => r === NOT_INDEXED)) throw vanished();
      if (lost) throw new RebuildAborted('the rebuild lock was lost; another rebuild may be running');
      for (const r of runs) if (r !== NOT_INDEXED) sets.held.add(r.ns, r.rows);
      // every bucket the page ends past is complete: the pages after it hold larger seqs
      const complete = Math.floor((w.last + 1) / BUCKET_WIDTH) * BUCKET_WIDTH;
      if (complete - sets.written < flushSeqs) return;
      // one write of sets in flight: the next waits for it, the pages go on meanwhile
      if (flushing) await flushing;
      flushing = sets.write(complete);
      flushing.catch(() => undefined); // awaited at the next write or after the last page
    };
    let flushing: Promise<void> | null = null;
    let next = fetch(0);
    // pages handed to Redis and not settled yet, oldest first
    const writing: { runs: Promise<Run[]>; last: number }[] = [];
    for (;;) {
      const page = await next;
      if (!page.length) break;
      const last = Number(page[page.length - 1]![3]);
      next = fetch(last);
      const runs = writePage(redis, keys, gen, page, sets);
      runs.catch(() => undefined); // awaited by settle() below
      writing.push({ runs, last });
      if (writing.length >= IN_FLIGHT) await settle(writing.shift()!);
      n += page.length;
      await onProgress(n);
    }
    for (const w of writing.splice(0)) await settle(w);
    if (flushing) await flushing;
    await sets.write(Infinity);
    // deleted ids keep their tombstone revisions in the new generation too, so that a sync
    // still holding a state loaded before the deletion cannot bring the service back
    for (let after = ''; ; ) {
      const tombs = await loadTombstonePage(pool, after, pageSize);
      if (!tombs.length) break;
      after = tombs[tombs.length - 1]!.id;
      const rs = await Promise.all(tombs.map((x) => redis.applyService(...applyArgs(keys, gen, x.ns, x.id, x.version, null))));
      if (rs.includes(NOT_INDEXED)) throw vanished();
    }
    await writeCapabilityTombstones(pool, redis, keys, gen, pageSize);
    // leases lost with Redis start a full fresh ttl now, before anyone can heartbeat against
    // the new generation (liveness/redis-lease.ts)
    await reseedLeases(pool, redis, keys, now);
    // Switch only to a generation that is whole: our building pointer and production's
    // marker must still be there (a FLUSHALL at any point before removes both), and check
    // again after the switch, undoing it if Redis was emptied in between — a live pointer
    // to a dead generation would answer 503 for good instead of triggering a rebuild.
    const whole = async () => (await redis.get(keys.building())) === gen && (await redis.exists(keys.ver(PRODUCTION, gen))) === 1;
    if (!(await whole())) throw new RebuildAborted('the index being built vanished before the switch; starting over');
    await redis.set(keys.gen(), gen);
    if (!(await redis.exists(keys.ver(PRODUCTION, gen)))) {
      await redis.delIfEqual(keys.gen(), gen);
      throw new RebuildAborted('Redis was emptied during the switch; starting over');
    }
    await redis.delIfEqual(keys.building(), gen);
    // before the lock goes: a server counting the import's backlog (backlog.ts) counts past
    // the rows this generation covers, while dropCovered() below deletes them
    await redis.set(keys.outboxCovered(), String(mark.maxId));
    const receivers = await redis.publish(keys.invalidationChannel(), 'gen:' + gen);
    // a cluster counts the receivers of its own node only
    const graceMs = receivers === 0 && !(redis instanceof Cluster) ? UNHEARD_GRACE_MS : RETIRE_GRACE_MS;
    const retired =
      oldGen && oldGen !== gen
        ? new Promise<void>((r) => setTimeout(r, graceMs)).then(() => dropGeneration(redis, keys, oldGen)).catch(() => 0)
        : Promise.resolve(0);
    done = { gen, services: n, sandboxes: sbs.rowCount ?? 0, ms: Date.now() - t0, outboxCovered: 0, retired, graceMs };
  } finally {
    clearInterval(heartbeat);
    // release only our own lock (compare-and-delete in one step)
    await redis.delIfEqual(keys.rebuildLock(), token).catch(() => undefined);
  }
  // once the generation is live and the lock released (the rows' deletion needs no lock, and
  // another rebuild may start as soon as the switch is seen); a failure leaves them to the
  // sweeper, which finds them applied already
  done.outboxCovered = await dropCovered(pool, mark).catch(() => 0);
  return done;
}

/**
 * Who left which capability, into the building generation (the Consul catalog's index:
 * docs/decisions/consul-index.md): one capability-tombstones call per namespace run of a page.
 */
async function writeCapabilityTombstones(pool: Pool, redis: RedisClient, keys: Keys, gen: string, pageSize: number): Promise<void> {
  for (let after: [string, string, string] = ['', '', '']; ; ) {
    const page = await loadCapabilityTombstonePage(pool, after, pageSize);
    if (!page.length) return;
    const last = page[page.length - 1]!;
    after = [last.ns, last.capability, last.id];
    const calls: Promise<unknown>[] = [];
    for (let i = 0; i < page.length; ) {
      const ns = page[i]!.ns;
      const args: string[] = [];
      for (; i < page.length && page[i]!.ns === ns; i++) args.push(page[i]!.capability, page[i]!.id, page[i]!.version);
      calls.push(redis.capabilityTombstones(keys.ver(ns, gen), keys.base(ns, gen), ...args));
    }
    if ((await Promise.all(calls)).includes(NOT_INDEXED)) throw vanished();
  }
}

/**
 * Raise the capability tombstones of generation `gen` to the revisions a rebuild writes (each
 * service's revision now), as the fallback's Consul catalog counts them while the index is
 * away: the readiness watcher calls it when Redis comes back with its data, before reads
 * return to the index, so that no X-Consul-Index steps back below one PostgreSQL answered
 * (docs/decisions/consul-index.md). Raise-only (capability-tombstones-1.lua): it never lowers
 * an index. Throws RebuildAborted when the generation vanished meanwhile.
 */
export function raiseCapabilityTombstones(pool: Pool, redis: RedisClient, keys: Keys, gen: string, pageSize = BATCH): Promise<void> {
  return writeCapabilityTombstones(pool, redis, keys, gen, pageSize);
}

/**
 * A rebuild that died (SIGKILL, lost host) leaves its building pointer, and writers keep
 * applying to its partial generation. Once its lock has expired, drop both. Returns the
 * generation dropped, or null.
 */
export async function dropStaleBuild(redis: RedisClient, keys: Keys): Promise<string | null> {
  const stale = await redis.get(keys.building());
  if (!stale || (await redis.exists(keys.rebuildLock())) === 1) return null;
  // compare-and-delete: a rebuild that just started has put its own generation there
  if (!ifEqualReply(await redis.delIfEqual(keys.building(), stale), 'del-if-equal')) return null;
  if (stale !== (await redis.get(keys.gen()))) await dropGeneration(redis, keys, stale);
  return stale;
}

/** Delete every key of an old generation (SCAN on each primary; UNLINK frees in background). */
export async function dropGeneration(redis: RedisClient, keys: Keys, gen: string): Promise<number> {
  const nodes = 'nodes' in redis && typeof redis.nodes === 'function' ? redis.nodes('master') : [redis];
  let n = 0;
  for (const node of nodes) {
    let cursor = '0';
    do {
      const [next, batch] = await node.scan(cursor, 'MATCH', keys.genPattern(gen), 'COUNT', 1000);
      cursor = next;
      if (batch.length) {
        // a standalone server's batch in one UNLINK; a cluster node's one UNLINK per key (keys
        // of a batch may lie in different slots), pipelined: never a round trip a key
        if (nodes.length === 1 && node === redis && !(redis instanceof Cluster)) await node.unlink(...batch);
        else await Promise.all(batch.map((k) => node.unlink(k)));
        n += batch.length;
      }
    } while (cursor !== '0');
  }
  return n;
}
