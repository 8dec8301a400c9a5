// The Redis index's live generation and the calls that are not searches: which generation
// is live (refreshGen), where a read-only call runs (a replica in turn, or the primary), and
// one service, its replacements, a namespace's version or marker. Index (index.ts) is this
// with the searches on top, so the hot paths call straight into the part they need.
import { ApiError } from '../domain/errors.js';
import type { DimensionFilters } from '../domain/dimensions.js';
import { filterSuffixes, Keys, PRODUCTION } from '../domain/keys.js';
import { isRedisUnavailable } from '../domain/outage.js';
import type { RedisClient } from '../redis/client.js';
import { NOT_INDEXED, replacementsReply, serviceReply, type ReplacementsReply, type ServiceRow } from '../redis/replies.js';
import { markNamespace } from '../registry/index.js';

/** The dimension fields of Filters (domain/dimensions.ts). */
export type FilterSets = DimensionFilters;

export function notIndexed(): ApiError {
  return new ApiError('INDEX_REBUILDING', [], { 'Retry-After': '2' });
}

/** An entry of the shared public replacements cache, and whether this call hit it. */
export type Replacements = ReplacementsReply;

export class LiveIndex {
  /**
   * The live generation; null until known (or after Redis lost it). One writer:
   * refreshGen(), which reads it from Redis (`reg:gen`, set by the rebuild that built it).
   * The readiness watcher, this thread's rebuild and a rebuild announced over pub/sub
   * (compose.ts) all ask for a refresh rather than set it.
   */
  private live: string | null = null;
  private turn = 0;

  constructor(
    readonly redis: RedisClient,
    readonly keys: Keys,
    /** read-only replicas for pure reads (REDIS_REPLICA_URLS); empty: the primary serves all */
    readonly replicas: RedisClient[] = [],
  ) {}

  /**
   * Run a read-only script call on the next replica in turn, or on the primary when there
   * is none. A replica that cannot answer, or that lacks the namespace (-1: it has not
   * replicated a fresh generation or marker yet), hands the call to the primary: a replica
   * only ever adds capacity, never an outage or a 503 of its own.
   */
  protected async read<T>(call: (r: RedisClient) => Promise<T>): Promise<T> {
    if (!this.replicas.length) return call(this.redis);
    const r = this.replicas[this.turn++ % this.replicas.length]!;
    try {
      const v = await call(r);
      if (v !== NOT_INDEXED) return v;
    } catch (e) {
      if (!isRedisUnavailable(e)) throw e;
    }
    return call(this.redis);
  }

  get gen(): string | null {
    return this.live;
  }

  /** Re-read the live generation; returns it (null when the index is missing). */
  async refreshGen(): Promise<string | null> {
    this.live = await this.redis.get(this.keys.gen());
    return this.live;
  }

  protected liveGen(): string {
    if (!this.gen) throw notIndexed();
    return this.gen;
  }

  filterKeys(ns: string, gen: string, f: FilterSets): string[] {
    const base = this.keys.base(ns, gen);
    return filterSuffixes(f).map((s) => base + s);
  }

  /**
   * A sandbox created while Redis was away has no namespace marker in a generation that is
   * otherwise complete. Callers only reach a sandbox namespace after its key was verified
   * against PostgreSQL, so it is safe to create the marker and try once more.
   */
  protected async retryNamespace<T>(ns: string, r: T, again: () => Promise<T>): Promise<T> {
    if (r !== NOT_INDEXED || ns === PRODUCTION || !this.gen) return r;
    if ((await this.redis.get(this.keys.gen())) !== this.gen) return r;
    if (!(await markNamespace(this.redis, this.keys, ns, this.gen))) return r;
    return again();
  }

  async getService(ns: string, id: string): Promise<ServiceRow | null> {
    const gen = this.liveGen();
    const run = () => this.read(async (r) => serviceReply(await r.getService(this.keys.ver(ns, gen), this.keys.base(ns, gen), id)));
    const r = await this.retryNamespace(ns, await run(), run);
    if (r === NOT_INDEXED) throw notIndexed();
    return r;
  }

  async replacements(
    ns: string,
    id: string,
    ttlSeconds: number,
  ): Promise<Replacements | null> {
    const gen = this.liveGen();
    const r = replacementsReply(await this.redis.replacements(this.keys.ver(ns, gen), this.keys.base(ns, gen), id, ttlSeconds, Date.now()));
    if (r === NOT_INDEXED) throw notIndexed();
    return r;
  }

  /** Version counter of a namespace: changes on every applied write. */
  async version(ns: string): Promise<string | null> {
    const gen = this.liveGen();
    return this.redis.get(this.keys.ver(ns, gen));
  }

  /** Mark a namespace as indexed in the live (and any building) generation. */
  async ensureNamespace(ns: string): Promise<void> {
    const gens = [await this.redis.get(this.keys.gen()), await this.redis.get(this.keys.building())];
    for (const g of gens) if (g) await this.redis.set(this.keys.ver(ns, g), '1', 'NX');
  }
}
