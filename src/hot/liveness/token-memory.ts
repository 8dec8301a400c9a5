// A serving thread's memory of heartbeat tokens (docs/decisions/heartbeat-tokens.md). Redis
// holds each lease's token hash and checks every heartbeat, so no node ever asks PostgreSQL;
// this memory saves the work in front of Redis and bounds what a repeated miss costs:
// - accepted: token -> its service, namespace, SHA-256 and lease shard, keyed by the token
//   string alone (nothing built or hashed per heartbeat); the entry's service and namespace
//   must be the request's, and it is the batch's identity of the heartbeat
//   (HeartbeatBatch.beatKnown). Redis still compares the hash, so a rotation is seen at once.
// - refused: (namespace, service, token) -> until when to answer 401 without Redis
//   (REFUSED_MS). Tokens are random and never reused, so no valid token hides behind it.
// Both maps are bounded in bytes (domain/byte-map.ts), a share of HEARTBEAT_TOKEN_CACHE_MB per
// thread: 3/4 accepted, 1/4 refused, so forged tokens evict only other forged tokens.
import type { BeatIdentity } from './heartbeat-batch.js';
import { shardOf } from './redis-lease.js';
import { hashKey } from '../sandboxes/index.js';
import { tokenWellFormed } from './tokens.js';
import { ByteBoundedMap, objectBytes, stringBytes } from '../domain/byte-map.js';

export const REFUSED_MS = 10_000;

/** A token Redis accepted on this thread, for its service: the memory's entry, and the batch's identity of its heartbeats. */
export interface KnownToken extends BeatIdentity {
  readonly refused: false;
  readonly known: true;
}

/** What the memory says of a presented token. */
export type TokenLook =
  /** refused without asking Redis: not well-formed, or refused by Redis within REFUSED_MS */
  | { refused: true }
  /** ask Redis with this hash: a token this thread has not seen accepted for this service */
  | { refused: false; hash: string; known: false }
  /** Redis accepted it before on this thread (the entry itself: nothing allocated) */
  | KnownToken;

const REFUSED: TokenLook = { refused: true };

/** an entry's bytes beyond its key (the token): the object and its strings (ns is often shared; counted anyway) */
const knownBytes = (k: KnownToken) => objectBytes(6) + stringBytes(k.hash) + stringBytes(k.ns) + stringBytes(k.id);

export class HeartbeatTokenMemory {
  private accepted: ByteBoundedMap<KnownToken>;
  private refusedUntil: ByteBoundedMap<number>;
  /** tokens hashed (not found in memory), refused from memory, refused by their text (tests, bench) */
  readonly stats = { hashed: 0, refusedFromMemory: 0, refusedByShape: 0 };

  constructor(budgetBytes: number, private readonly now: () => number = Date.now) {
    this.accepted = new ByteBoundedMap(Math.floor((budgetBytes * 3) / 4), knownBytes);
    this.refusedUntil = new ByteBoundedMap(Math.floor(budgetBytes / 4));
  }

  /** bytes the maps hold (tests, metrics) */
  bytes(): number {
    return this.accepted.bytes + this.refusedUntil.bytes;
  }

  look(ns: string, id: string, token: string): TokenLook {
    const known = this.accepted.get(token);
    if (known !== undefined && known.id === id && known.ns === ns) return known;
    const k = memoryKey(ns, id, token);
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

  /** Redis accepted the token for this service (a token is one service's: it replaces any other entry of it). */
  accept(ns: string, id: string, token: string, hash: string): void {
    const k: KnownToken = { refused: false, known: true, hash, ns, id, shard: shardOf(id) };
    this.accepted.set(token, k);
  }

  /** Redis refused the token for this service (wrong token, or no lease while the index is complete). */
  refuse(ns: string, id: string, token: string): void {
    const known = this.accepted.get(token);
    if (known !== undefined && known.id === id && known.ns === ns) this.accepted.delete(token);
    this.refusedUntil.set(memoryKey(ns, id, token), this.now() + REFUSED_MS);
  }
}

/** One string per (namespace, service, token): none of them holds a space. */
function memoryKey(ns: string, id: string, token: string): string {
  return ns + ' ' + id + ' ' + token;
}
