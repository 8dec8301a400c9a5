// A serving thread's memory of heartbeat tokens (contract "Liveness"; docs/decisions.md,
// "Heartbeat tokens in memory"). Redis holds each lease's token hash and checks every
// heartbeat against it, so a node needs no PostgreSQL look-up ever; this memory saves the
// rest of the work in front of Redis and bounds what a repeated miss costs:
//
// - accepted: (namespace, service, token) -> the token's sha256 (hex), for tokens Redis
//   accepted: no hashing and no checksum per heartbeat (SHA-256 is a pure function, the
//   entry never goes stale; Redis still compares the hash, so a rotation is seen at once).
//   A sandbox heartbeat of a known token is counted against the rate limit, then checked
//   and renewed in one call (liveness.ts).
// - refused: the same key -> until when to answer 401 without asking Redis (REFUSED_MS):
//   a client repeating a refused token (an agent still using the token of before a rotation)
//   costs one Redis call per period, not one per request. Tokens are random and never
//   reused, so no valid token is hidden by it (a lease whose record has not reached Redis
//   yet is answered 503 while the index is incomplete, never remembered).
//
// Both maps are bounded by the bytes they occupy (key-maps.ts), a fixed share of the
// process's HEARTBEAT_TOKEN_CACHE_MB per thread: 3/4 for accepted tokens, 1/4 for refused
// ones, so a flood of forged tokens evicts other forged tokens, never real ones.
import { hashKey } from './keys.js';
import { tokenWellFormed } from './heartbeat-tokens.js';
import { ByteBoundedMap } from './key-maps.js';

export const REFUSED_MS = 10_000;

/** What the memory says of a presented token. */
export type TokenLook =
  /** refused without asking Redis: not well-formed, or refused by Redis within REFUSED_MS */
  | { refused: true }
  /** ask Redis with this hash; `known`: Redis accepted it before on this thread */
  | { refused: false; hash: string; known: boolean };

const REFUSED: TokenLook = { refused: true };

export class HeartbeatTokenMemory {
  private accepted: ByteBoundedMap<string>;
  private refusedUntil: ByteBoundedMap<number>;
  /** tokens hashed (not found in memory), refused from memory, refused by their text (tests, bench) */
  readonly stats = { hashed: 0, refusedFromMemory: 0, refusedByShape: 0 };

  constructor(budgetBytes: number, private readonly now: () => number = Date.now) {
    this.accepted = new ByteBoundedMap(Math.floor((budgetBytes * 3) / 4));
    this.refusedUntil = new ByteBoundedMap(Math.floor(budgetBytes / 4));
  }

  /** bytes the maps hold (tests, metrics) */
  bytes(): number {
    return this.accepted.bytes + this.refusedUntil.bytes;
  }

  look(ns: string, id: string, token: string): TokenLook {
    const k = memoryKey(ns, id, token);
    const hash = this.accepted.get(k);
    if (hash !== undefined) return { refused: false, hash, known: true };
    const until = this.refusedUntil.get(k);
    if (until !== undefined) {
      if (until > this.now()) {
        this.stats.refusedFromMemory++;
        return REFUSED;
      }
      this.refusedUntil.delete(k);
    }
    // a mistyped or forged token (wrong checksum) is refused from its text, before any look-up
    if (!tokenWellFormed(token)) {
      this.stats.refusedByShape++;
      return REFUSED;
    }
    this.stats.hashed++;
    return { refused: false, hash: hashKey(token).toString('hex'), known: false };
  }

  /** Redis accepted the token for this service. */
  accept(ns: string, id: string, token: string, hash: string): void {
    this.accepted.set(memoryKey(ns, id, token), hash);
  }

  /** Redis refused the token for this service (wrong token, or no lease while the index is complete). */
  refuse(ns: string, id: string, token: string): void {
    const k = memoryKey(ns, id, token);
    this.accepted.delete(k);
    this.refusedUntil.set(k, this.now() + REFUSED_MS);
  }
}

/** One string per (namespace, service, token): none of them holds a space. */
function memoryKey(ns: string, id: string, token: string): string {
  return ns + ' ' + id + ' ' + token;
}
