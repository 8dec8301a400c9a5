// Reads of one key by the requests of one event-loop turn, in one round trip: the admin key
// check reads its address's failure count before every admin request (admin/auth.ts), and
// concurrent writers of one script would otherwise send one GET of the same key each per turn
// (docs/decisions/admin-auth.md). A request joins only a read sent in its own turn, never one
// of an earlier turn: what it sees is no older than what a read of its own would have seen.
export class TurnReads<T> {
  private readonly pending = new Map<string, Promise<T>>();

  constructor(private readonly read: (key: string) => Promise<T>) {}

  get(key: string): Promise<T> {
    let p = this.pending.get(key);
    if (!p) {
      p = this.read(key);
      this.pending.set(key, p);
      // the turn's I/O callbacks all ran before the check phase: later requests read anew
      setImmediate(() => this.pending.delete(key));
    }
    return p;
  }
}
