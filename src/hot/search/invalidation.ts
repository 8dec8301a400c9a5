// Cross-thread and cross-node invalidation of the in-process result cache: a dedicated
// subscriber connection per thread listens on the changes channel. Messages are a namespace
// (drop that namespace's results), "<namespace>\t<sender>" (the same, from the thread whose
// listener has that id: it dropped its own results when it applied the write, so its echo is
// skipped rather than dropping a result computed since), "gen:<id>" (a rebuild switched generations: drop all),
// "lease:<uuid>" (that sandbox's tier changed: drop its rate-limit admission batch), "delta\t..." (the
// sets and documents one applied write changed: the near cache follows it, search/near/near-cache.ts) or
// "deltas\t..." (the same for a page of expiries, health-flip-1.lua).
// A (re)connected subscriber may have missed messages, so it drops everything too.
import type { WriteAppliedEvents } from '../registry/index.js';
import { randomBytes } from 'node:crypto';
import type { Keys } from '../domain/keys.js';
import type { Replacements } from './live-index.js';
import type { RedisClient } from '../redis/client.js';
import type { ResultCache } from './result-cache.js';

/** The in-process caches of a thread. */
export interface Caches {
  cache: ResultCache;
  /** in-process copies of the shared public replacements cache (Redis), per service id */
  replacements: ResultCache<Replacements>;
}

/** Drop what the in-process caches hold for a namespace (a write was applied there). */
export function invalidateCaches(c: Caches, ns: string): void {
  c.cache.invalidate(ns);
  c.replacements.invalidate(ns);
}

/** Drop everything the in-process caches hold (invalidations may have been missed). */
export function clearCaches(c: Caches): void {
  c.cache.clear();
  c.replacements.clear();
}

export interface InvalidationHandlers {
  /** a sandbox's tier changed: forget its rate-limit admission batch */
  tierChanged(uuid: string): void;
  /** a rebuild switched to this generation */
  generation(gen: string): void;
  /**
   * the subscriber lost Redis (once per outage) or could not subscribe: this thread sees
   * other threads' writes late (log it, count it)
   */
  failed(err: unknown, what: string): void;
  /** an applied write's delta (apply-service-1.lua) */
  delta?(msg: string): void;
  /** the subscription is confirmed (true) or gone (false): deltas flow only while it holds */
  subscribed?(live: boolean): void;
  /** everything was dropped (a reconnect or a generation switch) */
  cleared?(): void;
}

/** How long start() waits for the first subscription before the thread serves anyway (ms). */
const SUBSCRIBE_WAIT_MS = 5000;

export class InvalidationListener {
  private sub: RedisClient | null = null;
  /** this thread's sender id in the namespace messages it publishes */
  readonly id = randomBytes(6).toString('base64url');

  constructor(
    private readonly redis: RedisClient,
    private readonly keys: Keys,
    private readonly caches: Caches,
    private readonly on: InvalidationHandlers,
  ) {}

  /**
   * This thread's own writes (the projector's WriteApplied): its caches drop the namespaces
   * at once, every other thread and node through the channel, and the near cache waits for
   * the versions the writes reached before it answers again (read-your-writes).
   */
  followWrites(writes: WriteAppliedEvents, near: { require(base: string, ver: number): void }): void {
    writes.subscribe(({ namespaces, versions, unapplied }) => {
      for (const [base, ver] of versions) near.require(base, ver);
      // committed but not in the index (Redis away): this thread's pages cached from the
      // fallback drop them; other threads and nodes within RESULT_CACHE_TTL_MS (no channel)
      for (const ns of unapplied ?? []) invalidateCaches(this.caches, ns);
      for (const ns of namespaces) {
        invalidateCaches(this.caches, ns);
        // other threads and nodes keep their cached results until RESULT_CACHE_TTL_MS
        this.redis.publish(this.keys.invalidationChannel(), this.message(ns)).catch((err: unknown) => this.on.failed(err, 'cache invalidation not published'));
      }
    });
  }

  /** The message that invalidates `ns` everywhere but on this thread (which has already). */
  message(ns: string): string {
    return `${ns}\t${this.id}`;
  }

  /**
   * Resolves once the first subscription is confirmed, or the subscriber failed, or after
   * SUBSCRIBE_WAIT_MS: a thread that opens its port before then would drop what it cached
   * in its first moments when the subscription comes (a subscriber that (re)connects drops
   * everything), so it waits, but never for a Redis that is away.
   */
  start(): Promise<void> {
    if (this.sub) return Promise.resolve();
    const sub = (this.sub = this.redis.duplicate());
    const channel = this.keys.invalidationChannel();
    const clear = () => {
      clearCaches(this.caches);
      this.on.cleared?.();
    };
    let first: () => void = () => undefined;
    const waited = new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, SUBSCRIBE_WAIT_MS);
      timer.unref();
      first = () => {
        clearTimeout(timer);
        resolve();
      };
    });
    // connection errors repeat on every reconnection attempt: one report per outage
    let down = false;
    sub.on('error', (err: unknown) => {
      first();
      if (down) return;
      down = true;
      this.on.failed(err, 'cache invalidation subscriber lost Redis; cached results are dropped when it is back');
    });
    // the near cache follows deltas: without a live subscription it must not answer (a
    // delta missed would leave a set stale for good), and after one it starts empty
    sub.on('close', () => this.on.subscribed?.(false));
    sub.on('ready', () => {
      down = false;
      this.on.subscribed?.(false);
      clear();
      sub.subscribe(channel).then(
        () => {
          this.on.subscribed?.(true);
          first();
        },
        () => first(),
      );
    });
    sub.on('message', (ch: string, msg: string) => {
      if (ch !== channel) return;
      if (msg.startsWith('delta\t') || msg.startsWith('deltas\t')) this.on.delta?.(msg);
      else if (msg.startsWith('lease:')) this.on.tierChanged(msg.slice(6));
      else if (msg.startsWith('gen:')) {
        this.on.generation(msg.slice(4)); // switch at once rather than at the next poll
        clear();
      } else {
        const tab = msg.indexOf('\t');
        if (tab < 0) invalidateCaches(this.caches, msg);
        else if (msg.slice(tab + 1) !== this.id) invalidateCaches(this.caches, msg.slice(0, tab));
      }
    });
    sub.subscribe(channel).catch((err: unknown) => {
      first();
      this.on.failed(err, 'cache invalidation subscribe failed: this thread sees other writes only after RESULT_CACHE_TTL_MS');
    });
    return waited;
  }

  async stop(): Promise<void> {
    const sub = this.sub;
    this.sub = null;
    if (sub) await sub.quit().catch(() => sub.disconnect());
  }
}
