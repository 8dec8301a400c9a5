// What a thread's heartbeat batch (heartbeat-batch.ts) is made of: a heartbeat's line in the
// script's argument ("<id> <hash> <p|c> <0|1> <ns>\n"), the fields a line may hold, the
// callback that answers a heartbeat and a known token's identity. The rate records a call
// carries are the rate limiter's (ratelimit/records.ts).
import type { RateRecord, RateRecords } from '../ratelimit/index.js';

export type { RateRecord, RateRecords };

/**
 * One heartbeat's answer from heartbeat-2.lua: 0 renewed (status unchanged), 1 the status
 * must change, -1 no lease, -2 not this service's token; or the call's error (then `r` is NaN).
 */
export type BeatDone = (r: number, err?: unknown) => void;

/**
 * A heartbeat token this thread has seen accepted, for its service (liveness/token-memory.ts's
 * entry): the same object for every heartbeat of that token, so a turn's identical passing
 * heartbeats are found by it (beatKnown) without a line built and hashed per request.
 */
export interface BeatIdentity {
  readonly ns: string;
  readonly id: string;
  /** the token's sha256 (hex) */
  readonly hash: string;
  /** shardOf(id) */
  readonly shard: number;
}

/** A batch line: "<id> <hash> <p|c> <0|1> <ns>\n". */
export function lineOf(id: string, tokenHash: string, want: 'p' | 'c', checkOnly: boolean, ns: string): string {
  return id + ' ' + tokenHash + (want === 'p' ? ' p ' : ' c ') + (checkOnly ? '1 ' : '0 ') + ns + '\n';
}

/**
 * Whether `s` can be a field of a batch line: 1-64 of [A-Za-z0-9_-] (service ids, the
 * contract's pattern; namespaces: `production` and sandbox uuids). Nothing else holds a
 * lease, and a space or newline in a field would shift every later line of the batch.
 */
export function plainField(s: string): boolean {
  const n = s.length;
  if (n === 0 || n > 64) return false;
  for (let i = 0; i < n; i++) {
    const c = s.charCodeAt(i);
    // 0-9, A-Z, a-z, '_', '-'
    if (!((c >= 48 && c <= 57) || (c >= 65 && c <= 90) || (c >= 97 && c <= 122) || c === 95 || c === 45)) return false;
  }
  return true;
}
