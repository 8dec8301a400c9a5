// The heartbeats of one event-loop turn, sent to Redis together
// (docs/decisions/heartbeat-batches.md): one script call a turn (a call per lease shard on a
// cluster, which refuses keys of several slots in one script), at most MAX_BATCH heartbeats a
// call, sent from setImmediate (after the poll phase, so no turn of latency is added) and
// written at once rather than held by ioredis's auto-pipeline. A batch is one argument of
// lines "<id> <hash> <p|c> <0|1> <ns>\n" (ioredis encodes every argument on its own);
// identical heartbeats of a turn share a line; answers come back by a callback each, not a
// promise. On a standalone Redis the turn's rate records (ratelimit/records.ts) ride in the
// same heartbeats.lua call, so a record reaches Redis before the heartbeat it counts is answered.
import { Cluster } from 'ioredis';
import type { Keys } from '../domain/keys.js';
import { scriptSource, type RedisClient } from '../redis/client.js';
import type { ScriptLine } from '../redis/script-line.js';
import { RATE_WINDOW } from '../ratelimit/index.js';
import { heartbeatReplies } from '../redis/replies.js';
import { shardOf } from './redis-lease.js';
import { lineOf, plainField, type BeatDone, type BeatIdentity, type RateRecord, type RateRecords } from './beat-lines.js';

export { plainField, type BeatDone, type BeatIdentity, type RateRecord, type RateRecords } from './beat-lines.js';

/** heartbeats a call at most: a script blocks Redis while it runs */
export const MAX_BATCH = 256;

/** The two scripts, for calls on the thread's ScriptLine (EVALSHA, and EVAL after NOSCRIPT). */
const HEARTBEAT = scriptSource('heartbeat-2.lua');
const HEARTBEATS = scriptSource('heartbeats.lua');

interface Pending {
  /** the batch's lines, each once */
  text: string;
  /** the answer index (line) of each heartbeat, by `done`'s order */
  at: number[];
  done: BeatDone[];
  /** line (or the identity of a known token's passing heartbeat) -> its index: identical heartbeats of a turn share one line */
  lines: Map<string | BeatIdentity, number>;
}

/** The line of a known token's passing, renewing heartbeat. */
function knownLine(k: BeatIdentity): string {
  return lineOf(k.id, k.hash, 'p', false, k.ns);
}

export class HeartbeatBatch {
  private shards = new Map<number, Pending>();
  private scheduled = false;
  private readonly flushNow = () => this.flush();
  /** script calls sent (of them on the lean connection), heartbeats they answered, lines and rate records they carried (tests, the bench) */
  readonly stats = { calls: 0, lineCalls: 0, beats: 0, lines: 0, records: 0 };
  /** whether the shards of a turn may share a call (a standalone Redis) */
  private readonly together: boolean;
  /** the rate records a turn's call carries (standalone Redis only: carry()) */
  private records: RateRecords | null = null;
  /** calls carrying rate records in flight, by number: the waiters of landed() on each */
  private carrying = new Map<number, (() => void)[]>();
  private carrySeq = 0;

  /**
   * @param line the thread's lean connection for these calls (redis/script-line.ts); a call
   * goes through `redis` (ioredis) whenever it is not ready, or when there is none
   */
  constructor(
    private readonly redis: RedisClient,
    private readonly keys: Keys,
    private readonly now: () => number,
    private readonly line: ScriptLine | null = null,
  ) {
    this.together = !(redis instanceof Cluster);
  }

  /**
   * One heartbeat (checkOnly: renew nothing); `done` is called once with its answer. `id` and
   * `ns` that are not plain fields (plainField) are answered -2 at once: no lease is theirs.
   * `tokenHash` is sha256 hex (the caller's). `done` must not throw: the other heartbeats
   * of its batch are answered after it.
   */
  beat(ns: string, id: string, tokenHash: string, want: 'p' | 'c', checkOnly: boolean, done: BeatDone): void {
    if (!plainField(id) || !plainField(ns)) return done(-2);
    const line = lineOf(id, tokenHash, want, checkOnly, ns);
    this.add(shardOf(id), line, line, done);
  }

  /**
   * beat() of a passing heartbeat (renewing) with a token this thread knows: its fields were
   * checked when it was accepted, its shard is known, and a turn's identical ones are found
   * by the identity object (its line is built once a turn).
   */
  beatKnown(k: BeatIdentity, done: BeatDone): void {
    this.add(k.shard, k, null, done);
  }

  /** Add a heartbeat to its shard's batch: `key` finds an identical one of the turn; `line` (null: built from `key`) is its text. */
  private add(s: number, key: string | BeatIdentity, line: string | null, done: BeatDone): void {
    let p = this.shards.get(s);
    if (!p) {
      const text = line ?? knownLine(key as BeatIdentity);
      this.shards.set(s, (p = { text, at: [0], done: [done], lines: new Map([[key, 0]]) }));
    } else {
      // the same line twice in one call answers the same and renews the same deadline (one
      // `now` a call; the script writes nothing else): one line serves both
      let k = p.lines.get(key);
      if (k === undefined) {
        p.lines.set(key, (k = p.lines.size));
        p.text += line ?? knownLine(key as BeatIdentity);
      }
      p.at.push(k);
      p.done.push(done);
    }
    if (p.done.length >= MAX_BATCH) {
      this.shards.delete(s);
      this.send([[s, p]]);
    } else if (!this.scheduled) {
      this.scheduled = true;
      setImmediate(this.flushNow);
    }
  }

  /**
   * Carry the turn's rate records in its heartbeat call (a standalone Redis; on a cluster
   * their keys are in other slots, and the records go their own way).
   */
  carry(records: RateRecords): void {
    if (!this.together) return;
    this.records = records;
    records.carriedBy?.(this);
  }

  /**
   * Settles once every call carrying rate records that is in flight now has been answered
   * (or failed); null when none is. A poll waits for it before it reads the totals: those
   * calls may go on the lean connection, and Redis does not promise to run two connections'
   * commands in the order they were written (sandboxes/summary.ts).
   */
  landed(): Promise<void> | null {
    if (this.carrying.size === 0) return null;
    return new Promise((ok) => {
      let left = this.carrying.size;
      for (const waiters of this.carrying.values()) waiters.push(() => --left === 0 && ok());
    });
  }

  /** Whether a call of this turn will take the rate records waiting (carry(); a flush is due). */
  carries(): boolean {
    return this.records !== null && this.scheduled;
  }

  /** beat(), as a promise (the paths that await anyway: a first sight of a token, a transition). */
  beatAsync(ns: string, id: string, tokenHash: string, want: 'p' | 'c', checkOnly: boolean): Promise<number> {
    return new Promise((ok, no) => this.beat(ns, id, tokenHash, want, checkOnly, (r, err) => (err === undefined ? ok(r) : no(err))));
  }

  private flush(): void {
    this.scheduled = false;
    const all = this.shards;
    if (all.size === 0) {
      // the turn's heartbeats went in a full call already (beat()): the records go alone
      this.records?.flush();
      return;
    }
    this.shards = new Map();
    if (!this.together) {
      for (const e of all) this.send([e]);
      return;
    }
    let records = this.records?.take() ?? [];
    // the turn's shards in calls of up to MAX_BATCH heartbeats (a script blocks Redis)
    let group: [number, Pending][] = [];
    let count = 0;
    for (const e of all) {
      if (group.length && count + e[1].done.length > MAX_BATCH) {
        this.send(group, records);
        records = [];
        group = [];
        count = 0;
      }
      group.push(e);
      count += e[1].done.length;
    }
    this.send(group, records);
  }

  /**
   * One script call for these shards' batches: heartbeat-2.lua for one, heartbeats.lua for
   * several or with rate records to carry.
   */
  private send(group: [number, Pending][], records: RateRecord[] = []): void {
    let n = 0;
    for (const [, p] of group) {
      n += p.lines.size;
      this.stats.beats += p.done.length;
    }
    this.stats.calls++;
    this.stats.lines += n;
    this.stats.records += records.length;
    // a call that carries records: landed() waits for it
    let seq = 0;
    if (records.length) this.carrying.set((seq = ++this.carrySeq), []);
    const settled = () => {
      if (seq === 0) return;
      const waiters = this.carrying.get(seq);
      this.carrying.delete(seq);
      if (waiters) for (const w of waiters) w();
    };
    const fail = (e: unknown) => {
      // the records were not counted (the call is one script: all or nothing): again later
      if (records.length) this.records?.restore(records);
      settled();
      for (const [, p] of group) for (const f of p.done) f(NaN, e);
    };
    const answer = (r: unknown) => {
      settled();
      let rs: number[];
      try {
        rs = heartbeatReplies(r, n);
      } catch (e) {
        // a reply of the wrong shape: every heartbeat of the call fails with it
        return fail(e);
      }
      let base = 0;
      for (const [, p] of group) {
        const { at, done } = p;
        for (let i = 0; i < done.length; i++) done[i]!(rs[base + at[i]!]!);
        base += p.lines.size;
      }
    };
    // heartbeat-2.lua (one shard, no records) or heartbeats.lua: its keys, then its arguments
    const one = group.length === 1 && records.length === 0;
    let args: (string | number)[];
    let nKeys: number;
    if (one) {
      const [s, p] = group[0]!;
      args = [this.keys.leases(s), this.keys.deadlines(s), this.now(), p.text];
      nKeys = 2;
    } else {
      const keys: string[] = [];
      const rest: (string | number)[] = [this.now(), group.length];
      for (const [s, p] of group) {
        keys.push(this.keys.leases(s), this.keys.deadlines(s));
        rest.push(p.text);
      }
      if (records.length) {
        rest.push(RATE_WINDOW.bucketMs, RATE_WINDOW.historyTtlS);
        for (const r of records) {
          keys.push(this.keys.rateHistory(r.uuid), this.keys.rateTotals(r.uuid));
          rest.push(r.n, r.rejected);
        }
      }
      nKeys = keys.length;
      args = (keys as (string | number)[]).concat(rest);
    }
    // the lean connection when it is ready: one callback, no promise
    const src = one ? HEARTBEAT : HEARTBEATS;
    if (this.line?.evalsha(src.sha, src.lua, nKeys, args, (err, r) => (err ? fail(err) : answer(r)))) {
      this.stats.lineCalls++;
      return;
    }
    const call = one ? this.redis.heartbeat(...args) : this.redis.heartbeats(nKeys, ...args);
    call.then(answer, fail);
  }
}
