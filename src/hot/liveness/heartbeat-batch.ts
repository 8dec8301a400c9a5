// The heartbeats of one event-loop turn, sent to Redis together: one heartbeat-2.lua call
// per lease shard and turn instead of one per request. A call through ioredis costs the
// serving thread ~15 µs of CPU whatever it carries (command object, promise, RESP reply),
// more than the rest of a heartbeat; the script's own start-up cost in Redis (~5 µs) is
// shared the same way (docs/decisions.md, "Heartbeats in batches"). The batch is sent from
// setImmediate: after the poll phase has handed every request that arrived to its route,
// so waiting for it adds no turn of latency. A call carries at most MAX_BATCH heartbeats
// (a script blocks Redis while it runs).
import type { Keys } from '../domain/keys.js';
import type { RedisClient } from '../redis/client.js';
import { heartbeatReplies } from '../redis/replies.js';
import { leaseKeys, shardOf } from './redis-lease.js';

export const MAX_BATCH = 256;

interface Pending {
  /** the script's arguments after `now`: 5 per heartbeat */
  args: string[];
  done: ((r: number) => void)[];
  fail: ((e: unknown) => void)[];
}

export class HeartbeatBatch {
  private shards = new Map<number, Pending>();
  private scheduled = false;
  /** script calls sent and heartbeats they carried (tests, the bench) */
  readonly stats = { calls: 0, beats: 0 };

  constructor(
    private readonly redis: RedisClient,
    private readonly keys: Keys,
    private readonly now: () => number,
  ) {}

  /** One heartbeat's answer from heartbeat-2.lua (checkOnly: renew nothing). */
  beat(ns: string, id: string, tokenHash: string, want: 'p' | 'c', checkOnly: boolean): Promise<number> {
    const s = shardOf(id);
    let p = this.shards.get(s);
    if (!p) this.shards.set(s, (p = { args: [], done: [], fail: [] }));
    p.args.push(id, tokenHash, want, checkOnly ? '1' : '0', ns);
    const r = new Promise<number>((ok, no) => {
      p.done.push(ok);
      p.fail.push(no);
    });
    if (p.done.length >= MAX_BATCH) {
      this.shards.delete(s);
      this.send(id, p);
    } else if (!this.scheduled) {
      this.scheduled = true;
      setImmediate(() => this.flush());
    }
    return r;
  }

  private flush(): void {
    this.scheduled = false;
    const all = this.shards;
    this.shards = new Map();
    for (const p of all.values()) this.send(p.args[0]!, p);
  }

  /** `id`: any service of the batch's shard (its keys are the shard's) */
  private send(id: string, p: Pending): void {
    const n = p.done.length;
    this.stats.calls++;
    this.stats.beats += n;
    const [l, d] = leaseKeys(this.keys, id);
    this.redis.heartbeat(l, d, this.now(), ...p.args).then(
      (r) => {
        const rs = heartbeatReplies(r, n);
        for (let i = 0; i < n; i++) p.done[i]!(rs[i]!);
      },
      (e: unknown) => {
        for (const f of p.fail) f(e);
      },
    ).catch((e: unknown) => {
      // a reply of the wrong shape: every heartbeat of the batch fails with it
      for (const f of p.fail) f(e);
    });
  }
}
