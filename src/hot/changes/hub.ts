// The change feed's per-thread hub: the open streams of this thread, one poller that reads
// new change_events rows (only while streams are open) and fans each event out to the
// streams of its namespace, heartbeats, and catch-up from PostgreSQL for streams that
// resume (Last-Event-ID) or fell behind under backpressure.
//
// Ordering: change ids are handed out in commit order (registry/events.ts), so "id > last"
// never skips a row that commits late. Each stream remembers the last id it was sent;
// it is either live (fed by the poller) or catching up (reading PostgreSQL up to the
// poller's cursor, then switching to live in the same tick, so no event is sent twice
// or lost at the hand-over).
import type { Config } from '../config.js';
import type { Reply } from '../http/reply.js';
import type { Pool } from '../pg/pool.js';
import { countBackendError } from '../metrics/metrics.js';
import { changeStreams } from './metrics.js';
import { lastChangeId, pruneChanges, readAllChanges, readChanges, type ChangeEvent } from '../registry/index.js';
import { StreamShares } from './shares.js';

const BATCH = 500;
const PRUNE_EVERY_MS = 10 * 60_000;

interface Stream {
  ns: string;
  /** id of the last event sent (or skipped as not of this namespace) */
  last: number;
  state: 'catchup' | 'live' | 'paused';
  reply: Reply;
  end: () => void;
}

export function frame(e: ChangeEvent): string {
  // data is one line of JSON: no newline can break the frame
  return `id: ${e.id}\nevent: ${e.type}\ndata: ${e.data}\n\n`;
}

export class ChangeHub {
  private streams = new Set<Stream>();
  private byNs = new Map<string, Set<Stream>>();
  /** every event with an id <= cursor has been handed to the live streams */
  private cursor = 0;
  private polling = false;
  private pollTimer: NodeJS.Timeout | null = null;
  private beatTimer: NodeJS.Timeout | null = null;
  private pruneTimer: NodeJS.Timeout | null = null;
  private starting: Promise<void> | null = null;
  private closed = false;

  /**
   * `shares`: the process's stream counters (total and per address), shared by its threads
   * (shares.ts); the route reserves a slot there before it awaits anything
   */
  constructor(
    private readonly pg: Pool,
    private readonly cfg: Config,
    readonly shares: StreamShares = new StreamShares(cfg.changesMaxStreams, cfg.changesStreamsPerAddress),
  ) {}

  /** Start pruning expired change events (at start-up, not at the first stream). */
  start(): void {
    this.pruneTimer ??= setInterval(() => {
      pruneChanges(this.pg, this.cfg.changesRetentionHours).catch(() => countBackendError('postgres', 'query'));
    }, PRUNE_EVERY_MS);
    this.pruneTimer.unref();
  }

  isClosed(): boolean {
    return this.closed;
  }

  size(): number {
    return this.streams.size;
  }

  /** The id a new stream without Last-Event-ID starts after: the newest committed event. */
  latest(): Promise<number> {
    return lastChangeId(this.pg).then(Number);
  }

  /**
   * Attach a begun SSE reply. Resolves when the stream ends (client gone, shutdown).
   * `after`: send the events after this id (Last-Event-ID), in order.
   */
  async attach(reply: Reply, ns: string, after: number): Promise<void> {
    try {
      await this.wake();
    } catch {
      countBackendError('postgres', 'query');
      reply.finish(); // the client reconnects (retry:) and resumes
      return;
    }
    return new Promise<void>((resolve) => {
      const s: Stream = { ns, last: after, state: 'catchup', reply, end: resolve };
      if (this.closed || reply.done) {
        reply.finish();
        return resolve();
      }
      this.streams.add(s);
      let set = this.byNs.get(ns);
      if (!set) this.byNs.set(ns, (set = new Set()));
      set.add(s);
      changeStreams(1);
      reply.onAbort(() => this.drop(s));
      void this.catchUp(s);
    });
  }

  /** First stream of an idle hub: learn where the feed is, start polling and heartbeats. */
  private wake(): Promise<void> {
    if (this.pollTimer) return Promise.resolve();
    this.starting ??= (async () => {
      try {
        this.cursor = await this.latest();
        const cfg = this.cfg;
        this.pollTimer = setInterval(() => void this.poll(), cfg.changesPollMs);
        this.beatTimer = setInterval(() => this.heartbeat(), cfg.changesHeartbeatMs);
        this.pollTimer.unref();
        this.beatTimer.unref();
      } finally {
        this.starting = null;
      }
    })();
    return this.starting;
  }

  private sleep(): void {
    if (this.pollTimer) clearInterval(this.pollTimer);
    if (this.beatTimer) clearInterval(this.beatTimer);
    this.pollTimer = this.beatTimer = null;
  }

  private drop(s: Stream): void {
    if (!this.streams.delete(s)) return;
    const set = this.byNs.get(s.ns);
    set?.delete(s);
    if (set && !set.size) this.byNs.delete(s.ns);
    changeStreams(-1);
    s.end();
    if (!this.streams.size) this.sleep();
  }

  /** Write a chunk; under backpressure the stream pauses and catches up once writable. */
  private write(s: Stream, chunk: string): boolean {
    if (s.reply.write(chunk)) return true;
    if (s.reply.aborted || s.reply.done) {
      this.drop(s);
      return false;
    }
    // uWS buffered the chunk; what follows is read back from PostgreSQL when drained,
    // so a slow client costs no memory here
    s.state = 'paused';
    s.reply.res.onWritable(() => {
      if (s.state === 'paused') {
        s.state = 'catchup';
        void this.catchUp(s);
      }
      return true;
    });
    return false;
  }

  private async catchUp(s: Stream): Promise<void> {
    try {
      while (this.streams.has(s) && s.state === 'catchup') {
        const upTo = this.cursor;
        if (s.last >= upTo) {
          s.state = 'live'; // same tick as the check: the poller feeds it from here on
          return;
        }
        const rows = await readChanges(this.pg, s.ns, String(s.last), String(upTo), BATCH);
        for (const e of rows) {
          if (!this.streams.has(s)) return;
          s.last = Number(e.id);
          if (!this.write(s, frame(e))) return;
        }
        if (rows.length < BATCH) s.last = Math.max(s.last, upTo);
      }
    } catch {
      countBackendError('postgres', 'query');
      // the client reconnects with its Last-Event-ID
      this.end(s);
    }
  }

  private async poll(): Promise<void> {
    if (this.polling || !this.streams.size) return;
    this.polling = true;
    try {
      for (;;) {
        const rows = await readAllChanges(this.pg, String(this.cursor), BATCH);
        for (const e of rows) {
          const id = Number(e.id);
          const set = this.byNs.get(e.ns);
          if (set) {
            let f: string | null = null;
            for (const s of set) {
              if (s.state !== 'live' || s.last >= id) continue;
              s.last = id;
              this.write(s, (f ??= frame(e)));
            }
          }
          this.cursor = id;
        }
        if (rows.length < BATCH) return;
      }
    } catch {
      countBackendError('postgres', 'query');
    } finally {
      this.polling = false;
    }
  }

  /** Ask for an immediate poll (a write of this thread just committed). */
  nudge(): void {
    if (this.streams.size) void this.poll();
  }

  private heartbeat(): void {
    for (const s of this.streams) if (s.state !== 'paused') this.write(s, ': heartbeat\n\n');
  }

  private end(s: Stream): void {
    s.reply.finish();
    this.drop(s);
  }

  /**
   * Server shutdown: end every stream (clients reconnect elsewhere with Last-Event-ID). The
   * hub stays, closed, so that a stream asked for while the server drains is refused.
   */
  close(): void {
    this.closed = true;
    for (const s of [...this.streams]) this.end(s);
    this.sleep();
    if (this.pruneTimer) clearInterval(this.pruneTimer);
  }
}
