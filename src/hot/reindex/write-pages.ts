// The rebuild's writes into the generation it builds (rebuild.ts): a page of services per
// namespace run (index-page-1.lua), their set members held and written a bucket range at a
// time (index-sets-1.lua).
import { type Keys, PRODUCTION } from '../domain/keys.js';
import { type IndexPageRow, markNamespace, pageArgs, pageRowApplyArgs } from '../registry/index.js';
import { type RedisClient, scriptSource } from '../redis/client.js';
import { evalshaPrebuilt } from '../redis/prebuilt.js';
import { indexPageReply, NOT_INDEXED } from '../redis/replies.js';
import { BUCKET_WIDTH } from '../../workers/buckets.js';
import { PendingSets } from './pending-sets.js';

/** members of one index-sets-1.lua call (2 bytes each in its blob): a few ms of Redis */
const CALL_MEMBERS = 131_072;

const INDEX_PAGE = scriptSource('index-page-1.lua');

/** The rebuild lost its footing (Redis emptied or restarted under it, lock lost): retry. */
export class RebuildAborted extends Error {}

export const vanished = () => new RebuildAborted('the index being built vanished (Redis emptied or restarted); starting over');

/** A namespace run of a page as index-page-1.lua wrote it (its members not yet written), or NOT_INDEXED. */
export type Run = { ns: string; rows: IndexPageRow[] } | typeof NOT_INDEXED;

/**
 * One page into the building generation: one index-page.lua call per namespace run,
 * pipelined. When the script finds ids of the run already in the generation (a sync applied
 * them while the rebuild ran), it writes nothing and names them: the run is sent again
 * without them, and those with an older state in place ("left") are applied one by one with
 * apply-service, at the version read. Resolves to each run as written, whose members the
 * caller holds for the set writes (NOT_INDEXED when the namespace marker was gone).
 */
export function writePage(redis: RedisClient, keys: Keys, gen: string, page: IndexPageRow[], sets: SetWriter): Promise<Run[]> {
  const calls: Promise<Run>[] = [];
  for (let i = 0; i < page.length; ) {
    const [, ns] = page[i]!;
    let j = i + 1;
    while (j < page.length && page[j]![1] === ns) j++;
    calls.push(writeRun(redis, keys, gen, ns, page.slice(i, j), sets));
    i = j;
  }
  return Promise.all(calls);
}

/** A run of one namespace's services (seq order) into the building generation. */
async function writeRun(redis: RedisClient, keys: Keys, gen: string, ns: string, run: IndexPageRow[], sets: SetWriter): Promise<Run> {
  await sets.defer(ns);
  const left: IndexPageRow[] = [];
  let marked = false;
  for (;;) {
    const args = pageArgs(keys, gen, ns, run);
    const r = indexPageReply(await evalshaPrebuilt(redis, INDEX_PAGE, 1, args, () => redis.indexPage(...args)));
    if (r === NOT_INDEXED) {
      // a sandbox created after the rebuild listed them, whose creation could not mark this
      // generation (Redis away then): marked now, unless the generation itself is gone
      if (!marked && ns !== PRODUCTION && (await markNamespace(redis, keys, ns, gen))) {
        marked = true;
        continue;
      }
      return NOT_INDEXED;
    }
    if (!r) break;
    // each retry leaves at least one id out (the script names only ids of the run), so this ends
    const out = new Set([...r.skip, ...r.left]);
    const back = new Set(r.left);
    for (const s of run) if (back.has(s[0])) left.push(s);
    run = run.filter(([id]) => !out.has(id));
    if (!run.length) break;
  }
  // a state already in place was replaced with its members, by apply-service
  const rs = await Promise.all(left.map((s) => redis.applyService(...pageRowApplyArgs(keys, gen, s))));
  return rs.includes(NOT_INDEXED) ? NOT_INDEXED : { ns, rows: run };
}

/**
 * The set buckets of the generation being built, written once each (index-sets-1.lua). A
 * namespace's buckets from <base>wm up are unwritten: from its first page on, removals by
 * syncs there are noted for the write to honour (lib/buckets.lua, rxNote).
 */
export class SetWriter {
  readonly held = new PendingSets();
  /** every set member below this seq is written */
  written = 0;
  private readonly deferred = new Set<string>();
  constructor(
    private readonly redis: RedisClient,
    private readonly keys: Keys,
    private readonly gen: string,
  ) {}

  /** before a namespace's first page: its buckets are unwritten from 0 */
  async defer(ns: string): Promise<void> {
    if (this.deferred.has(ns)) return;
    this.deferred.add(ns);
    await this.redis.set(this.keys.base(ns, this.gen) + 'wm', '0');
  }

  /** write every held member below `bound` (a bucket boundary; Infinity: all, and the deferral ends) */
  async write(bound: number): Promise<void> {
    const end = bound === Infinity;
    const calls = this.held.take(bound, CALL_MEMBERS);
    const sent: Promise<unknown>[] = [];
    for (const ns of this.deferred) {
      const list = calls.get(ns) ?? [];
      if (!list.length && !end) continue;
      if (!list.length) list.push({ index: '', blob: Buffer.alloc(0) });
      const wm = end ? 'end' : String(bound / BUCKET_WIDTH);
      list.forEach((c, i) => sent.push(this.redis.indexSets(this.keys.ver(ns, this.gen), this.keys.base(ns, this.gen), i === list.length - 1 ? wm : '', c.index, c.blob)));
    }
    if (!end) this.written = bound;
    if ((await Promise.all(sent)).includes(NOT_INDEXED)) throw vanished();
  }
}
