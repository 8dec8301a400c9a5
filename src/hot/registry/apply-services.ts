// Applying services' committed states to Redis (the projector's write to the index): the
// generation pointers read in one consistent view, a sandbox namespace's marker where it is
// missing, one apply-services call per namespace, generation and page, and the leases after.
// Projector (projector.ts) calls it for every sync; the revision rule: redis/README.md,
// "Revisions".
import type { Logger } from 'pino';
import type { Keys } from '../domain/keys.js';
import type { RedisClient } from '../redis/client.js';
import { applyServicesReply, NOT_INDEXED } from '../redis/replies.js';
import type { IndexState } from './state.js';
import { applyManyArgs, type ServiceText, type StateToApply } from './apply-args.js';
import { markNamespace } from './mark-namespace.js';
import type { LeaseSync, OutboxEntry } from './projector-types.js';
import { countProjectorFailure } from './metrics.js';

/**
 * states per apply-services call (a batch, a group commit): one call holds Redis's thread
 * for its length, so 250 keep it to a few ms (docs/decisions/group-commit.md); calls are sent
 * without waiting for each other
 */
const APPLY_PAGE = 250;

/**
 * Apply the states of `entries`' services to the live and any building generation: the ids
 * applied to the live one (or dropped: neither a state nor a tombstone) join `applied`, their
 * namespaces `touched`.
 */
export async function applyServices(
  redis: RedisClient,
  keys: Keys,
  log: Logger,
  /** liveness's side (null: no lease follows, e.g. the CLI's projector) */
  leases: LeaseSync | null,
  /** where each page's namespace base and the version it reached are reported */
  versions: [string, number][],
  entries: OutboxEntry[],
  states: Map<string, IndexState>,
  applied: Set<string>,
  touched: Set<string>,
  noLease: ReadonlySet<string>,
  texts: ReadonlyMap<string, ServiceText>,
): Promise<void> {
  // The two pointers in one consistent view: a rebuild switches by SET gen, then DEL
  // building. Read between those two steps, "live = old, building = none" would apply this
  // write to the retired generation only, and the new live one (built from pages read
  // before the write committed) would miss it for good. Re-reading `gen` after `building`
  // catches that: a changed live pointer means a switch went by, so read both again.
  // (Found by test/pg/near-property.test.ts: a patch racing a reindex, stale after quiescence.)
  // (The first read of `gen` may go with the read of `building`, in one write to Redis:
  // only the re-read must come after `building` was read. Two round trips, not three.)
  let live: string | null;
  let building: string | null;
  do {
    [live, building] = await Promise.all([redis.get(keys.gen()), redis.get(keys.building())]);
  } while ((await redis.get(keys.gen())) !== live);
  const gens = [live, building].filter((g): g is string => !!g);
  if (!gens.length) return;
  const nsOf = new Map(entries.filter((e) => e.kind !== 'sandbox').map((e) => [e.id, e.ns]));
  // a namespace that PostgreSQL has written to exists; a sandbox created while Redis was
  // away lacks its marker in the live generation: create it (never for a missing gen)
  if (live) for (const ns of new Set(nsOf.values())) await markNamespace(redis, keys, ns, live);
  const todo: [string, string, IndexState][] = [];
  for (const [id, ns] of nsOf) {
    const st = states.get(id);
    if (st) {
      todo.push([id, ns, st]);
      continue;
    }
    // neither a row nor a tombstone: nothing can be applied, ever; say so and drop the row
    countProjectorFailure('missing');
    log.error({ serviceId: id, ns }, 'outbox row of a service with neither a state nor a tombstone; dropped');
    applied.add('service:' + id);
  }
  const appliedLive = new Set<string>();
  // one apply-services call per namespace, generation and page of APPLY_PAGE states (each
  // set the page's states join is read and written once), all sent without waiting for
  // each other: the ids differ, so their order does not matter
  const byNs = new Map<string, StateToApply[]>();
  for (const [id, ns, st] of todo) {
    let l = byNs.get(ns);
    if (!l) byNs.set(ns, (l = []));
    l.push({ id, rev: st.version, record: st.record, text: texts.get(id) });
  }
  const calls: Promise<void>[] = [];
  for (const [ns, list] of byNs) {
    for (let i = 0; i < list.length; i += APPLY_PAGE) {
      const page = list.slice(i, i + APPLY_PAGE);
      // the building generation's deltas too: the switch may come between reading the
      // pointers and this apply, and a silent change to a live generation would leave
      // near caches that loaded it stale (found by test/pg/near-property.test.ts)
      for (const gen of gens) {
        calls.push(
          (async () => {
            const r = applyServicesReply(await redis.applyServices(...applyManyArgs(keys, gen, ns, page, keys.invalidationChannel())), page.length);
            // NOT_INDEXED: that generation has no such namespace (Redis was emptied): keep the rows
            if (r === NOT_INDEXED) return;
            let top = 0;
            page.forEach((x, j) => {
              if (gen === live) appliedLive.add(x.id);
              if (r[j]! > top) top = r[j]!;
            });
            // this thread's near cache must not answer from sets older than its own writes
            if (top > 0) versions.push([keys.base(ns, gen), top]);
          })(),
        );
      }
    }
  }
  await Promise.all(calls);
  // leases follow the states applied (liveness/): a failure keeps the outbox rows
  if (leases) await Promise.all(todo.filter(([id]) => appliedLive.has(id) && !noLease.has(id)).map(([id, , st]) => leases.applyState(id, st)));
  for (const [id, ns] of todo) {
    if (!appliedLive.has(id)) continue;
    applied.add('service:' + id);
    touched.add(ns);
  }
}
