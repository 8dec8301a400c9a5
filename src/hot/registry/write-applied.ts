// WriteApplied: what the projector tells this thread once committed writes reached the Redis
// index, before the writes are acknowledged. Whatever keeps a copy of the index or answers
// from it subscribes (search/: the result caches, the near cache and the other nodes' copies;
// a held request waiting on a namespace). Listeners run synchronously and must not throw.

export interface WriteApplied {
  /** namespaces whose services changed in the index (their cached answers are stale) */
  readonly namespaces: ReadonlySet<string>;
  /**
   * namespace bases (keys.base(ns, gen)) and the index version each reached: this thread's
   * near cache must not answer from anything older (read-your-writes). Reported even when the
   * batch as a whole failed after some of it reached Redis.
   */
  readonly versions: readonly (readonly [base: string, version: number])[];
  /**
   * namespaces of committed writes that did NOT reach the index (Redis away: the outbox keeps
   * them): answers cached from PostgreSQL meanwhile (the fallback) are stale. Absent: none.
   */
  readonly unapplied?: ReadonlySet<string>;
}

export type WriteAppliedListener = (e: WriteApplied) => void;

export class WriteAppliedEvents {
  private readonly listeners: WriteAppliedListener[] = [];

  /** Hear every WriteApplied of this thread from now on. */
  subscribe(l: WriteAppliedListener): void {
    this.listeners.push(l);
  }

  publish(e: WriteApplied): void {
    if (!e.namespaces.size && !e.versions.length && !e.unapplied?.size) return;
    for (const l of this.listeners) l(e);
  }
}
