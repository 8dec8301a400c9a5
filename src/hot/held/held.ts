// A thread's held requests (contract, "Waiting for a change"): a conditional GET whose
// If-None-Match matches and that prefers `wait=N` is kept, without a timer, promise or
// closure of its own, in the group of the answer it waits on (types.ts), on the wheel of
// deadlines (wheel.ts) and in the process's shares (domain/shares.ts), until its answer
// changes (200), its wait ends (304), its client leaves, or the drain (304).
//
// What wakes it (wake.ts feeds this): the deltas every node's threads receive over pub/sub,
// which name what a write or a page of expiries changed, so that a change computes each
// affected answer once, and only the requests whose ETag differs from the new one are
// answered; on the writing thread, a fallback after its own WriteApplied should the delta be late.
import type { AddressShares } from '../domain/shares.js';
import { JSON_TYPE, type Reply } from '../http/reply.js';
import type { Headers, Req } from '../http/types.js';
import { countHeld, countHeldEnd } from './metrics.js';
import { preferredWait } from './prefer.js';
import { Group, Waiter, type Answer, type Holder, type Watch } from './types.js';
import { Watches } from './watches.js';
import { Wheel } from './wheel.js';

export interface HeldOptions {
  /** WAIT_MAX_SECONDS */
  waitMaxSeconds: number;
  /** the process's shares of held requests (HELD_MAX, HELD_PER_ADDRESS) */
  shares: AddressShares;
  /** the wheel's slot, ms: a wait ends within this after its deadline (default 100) */
  slotMs?: number;
  /** a failed computation is tried again after this, ms (default 1000) */
  retryMs?: number;
  /** the wheel's clock (ms) */
  now?: () => number;
}

/** Retry-After of a refusal: a held slot comes back when any held request ends */
const RETRY_AFTER = '5';

const isCacheControl = ([k]: [string, string]) => k.toLowerCase() === 'cache-control';

export class HeldRequests implements Holder {
  readonly watches = new Watches();
  private readonly wheel: Wheel<Waiter>;
  private readonly shares: AddressShares;
  readonly waitMax: number;
  /** answers to compute again at the next turn of the event loop (one computation each) */
  private dirty = new Set<Group>();
  private flushing: NodeJS.Immediate | null = null;
  /** answers whose computation failed: tried again after retryMs */
  private failed = new Set<Group>();
  private retry: NodeJS.Timeout | null = null;
  private readonly retryMs: number;
  private draining = false;
  /** answers computed again, ever (tests and the bench read it) */
  computed = 0;

  constructor(o: HeldOptions) {
    this.waitMax = o.waitMaxSeconds;
    this.shares = o.shares;
    this.retryMs = o.retryMs ?? 1000;
    this.wheel = new Wheel<Waiter>(o.slotMs ?? 100, o.waitMaxSeconds * 1000, (w) => this.expire(w), o.now);
  }

  /** requests held by this thread */
  get size(): number {
    return this.wheel.size;
  }

  /** The wait `req` prefers, capped at WAIT_MAX_SECONDS; 0: it asks for none (answer at once). */
  waitOf(req: Req): number {
    return req.prefer ? preferredWait(req.prefer, this.waitMax) : 0;
  }

  /**
   * Hold `reply`, whose client's copy (`etag`) matches the answer of `key` as just computed
   * (`headers`: that answer's own), for `wait` seconds. `watch`: the answer's port, asked
   * for only when no request waits on `key` yet. Answers the request itself when it cannot
   * hold it: 429 when a share is full, 304 at once during the drain. A blocking query's
   * (Watch.blocking) `etag` is the index it waits to see exceeded and `last` the answer as it
   * stands (sent at the end of the wait, or at once during the drain).
   */
  hold(reply: Reply, req: Req, wait: number, key: string, etag: string, headers: Headers, common: Headers, watch: () => Watch, last?: Answer): void {
    if (this.draining) return last ? this.sendLast(reply, common, last) : this.send304(reply, common, etag, headers, wait);
    const share = this.shares.take(req.waiter);
    if (typeof share !== 'number') {
      countHeldEnd('refused');
      const [k, args] = share === 'total' ? (['HELD_FULL', []] as const) : (['HELD_PER_ADDRESS', [this.shares.perAddress]] as const);
      return reply.error(k, args, [...common.filter((h) => !isCacheControl(h) && h[0] !== 'ETag'), ['Retry-After', RETRY_AFTER]]);
    }
    const now = last?.etag ?? etag;
    let g = this.watches.get(key);
    if (!g) {
      const w = watch();
      g = new Group(this, key, w, now, last?.headers ?? headers, w.seq);
      if (w.blocking) g.last = last ?? null;
      this.watches.add(g);
    } else if (g.etag !== now) {
      // computed from another state than the group's last answer (a cache of this thread not
      // yet told of a write, or a write the group has not seen yet): computed again, the
      // requests whose copy differs from the result are answered
      this.mark(g);
    }
    const w = new Waiter(reply, g, etag, common, wait, share);
    w.next = g.head;
    if (g.head) g.head.prev = w;
    g.head = w;
    g.size++;
    this.wheel.add(w, performance.now() + wait * 1000);
    reply.holder = w;
    // what the request's head carried for this decision is not kept while it waits: only what
    // its answer (the waiter) and its access-log line (method, path, query, remote) read
    req.ifNoneMatch = req.prefer = req.waiter = req.authorization = '';
    countHeld(1);
  }

  /** A held request's client went away: nothing of it is kept. */
  left(w: Waiter): void {
    if (!this.release(w)) return;
    countHeldEnd('left');
  }

  /** The answer of `g` may have changed: computed again at the end of this turn (once, however often marked). */
  mark(g: Group): void {
    if (g.gone) return;
    if (g.running) {
      g.again = true;
      return;
    }
    this.dirty.add(g);
    this.flushing ??= setImmediate(() => this.flush());
  }

  /** Every held answer may have changed (a lost subscription, a new generation). */
  markAll(): void {
    for (const g of this.watches.all()) this.mark(g);
  }

  /**
   * Shutdown: every held request answered 304 now (its connection closed after it), and any
   * that comes later at once.
   */
  drain(): void {
    this.draining = true;
    for (const w of [...this.wheel.entries()]) {
      const g = w.group;
      this.release(w);
      w.reply.closeAfter = true;
      if (g.last) this.sendLast(w.reply, w.common, g.last);
      else this.send304(w.reply, w.common, w.etag, g.etag === w.etag ? g.headers : [], w.wait);
      countHeldEnd('drained');
    }
    this.stop();
  }

  stop(): void {
    this.wheel.stop();
    if (this.flushing) clearImmediate(this.flushing);
    if (this.retry) clearTimeout(this.retry);
    this.flushing = this.retry = null;
  }

  private flush(): void {
    this.flushing = null;
    const groups = this.dirty;
    this.dirty = new Set();
    for (const g of groups) this.run(g);
  }

  private run(g: Group): void {
    if (g.gone) return;
    g.running = true;
    this.computed++;
    let r: Answer | Promise<Answer>;
    try {
      r = g.watch.compute();
    } catch {
      return this.done(g, null);
    }
    if (r instanceof Promise) r.then((a) => this.done(g, a), () => this.done(g, null));
    else this.done(g, r);
  }

  private done(g: Group, a: Answer | null): void {
    g.running = false;
    if (a) this.answer(g, a);
    else if (!g.gone) {
      this.failed.add(g);
      this.retry ??= setTimeout(() => {
        this.retry = null;
        const again = this.failed;
        this.failed = new Set();
        for (const f of again) this.mark(f);
      }, this.retryMs).unref();
    }
    if (g.again) {
      g.again = false;
      this.mark(g);
    }
  }

  /** The answer of `g` now: every request whose copy differs gets it. */
  private answer(g: Group, a: Answer): void {
    if (g.gone) return;
    g.etag = a.etag;
    g.headers = a.headers;
    const blocking = g.watch.blocking === true;
    if (blocking) g.last = a;
    this.watches.reseq(g, a.seq);
    for (let w = g.head; w; ) {
      const next = w.next;
      if (blocking ? exceeds(a.etag, w.etag) : w.etag !== a.etag) {
        this.release(w);
        this.sendAnswer(w, a);
        countHeldEnd('changed');
      }
      w = next;
    }
  }

  /** The wait of `w` ended with its answer unchanged. */
  private expire(w: Waiter): void {
    const g = w.group;
    this.unlink(w);
    this.shares.give(w.share);
    countHeld(-1);
    if (g.last) this.sendLast(w.reply, w.common, g.last);
    else this.send304(w.reply, w.common, w.etag, g.etag === w.etag ? g.headers : [], w.wait);
    countHeldEnd('expired');
  }

  /** Take `w` out of its group, the wheel and the shares; false when it was out already. */
  private release(w: Waiter): boolean {
    if (!w.tick) return false;
    this.wheel.remove(w);
    this.unlink(w);
    this.shares.give(w.share);
    countHeld(-1);
    return true;
  }

  private unlink(w: Waiter): void {
    const g = w.group;
    if (w.prev) w.prev.next = w.next;
    else g.head = w.next;
    if (w.next) w.next.prev = w.prev;
    w.prev = w.next = null;
    w.tick = 0;
    w.reply.holder = null;
    if (--g.size === 0) {
      g.gone = true;
      this.watches.remove(g);
      this.dirty.delete(g);
      this.failed.delete(g);
    }
  }

  private sendAnswer(w: Waiter, a: Answer): void {
    if (w.group.watch.blocking) return this.sendLast(w.reply, w.common, a);
    const applied: [string, string] = ['Preference-Applied', `wait=${w.wait}`];
    if (a.status >= 400) {
      // an error is never stored by a cache, whatever the route's own answers say
      w.reply.send(a.status, [['Content-Type', JSON_TYPE], ['Cache-Control', 'no-store'], ...w.common.filter((h) => !isCacheControl(h)), ...a.headers, applied], a.body);
      return;
    }
    w.reply.send(a.status, [['Content-Type', JSON_TYPE], ...w.common, ['ETag', a.etag!], ...a.headers, applied], a.body);
  }

  /** A blocking query's answer: its own headers (its index), no ETag, no Preference-Applied. */
  private sendLast(reply: Reply, common: Headers, a: Answer): void {
    reply.send(a.status, [['Content-Type', JSON_TYPE], ...common, ...a.headers], a.body);
  }

  private send304(reply: Reply, common: Headers, etag: string, headers: Headers, wait: number): void {
    reply.send(304, [...common, ['ETag', etag], ...headers, ['Preference-Applied', `wait=${wait}`]]);
  }
}

/** A blocking query's index `now` is past the one a request waits on (an error, null: its answer). */
function exceeds(now: string | null, held: string): boolean {
  return now === null || BigInt(now) > BigInt(held);
}
