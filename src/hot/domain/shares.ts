// Fair shares of one process on shared memory: a count in total and one per client address,
// each under its cap. Every uWS thread of a process gets the same SharedArrayBuffer (main.ts
// hands it over in workerData), so the caps are the process's whatever the thread count. A
// slot is taken synchronously with Atomics (add, check the old value, give it back when
// over): concurrent takes on any number of threads never hold one more than a cap; a race
// may refuse a take that a moment later would have fitted, never admit one too many.
//
// Addresses are counted in ADDRESS_BUCKETS buckets of a hash keyed with a random seed
// drawn once per buffer (stored in it, so every thread hashes alike): two addresses in one
// bucket share one share (stricter, never looser), and without the seed nobody can choose
// an address that lands in someone else's bucket (docs/decisions/change-feed.md). The change
// feed's streams (changes/shares.ts) and held requests (held/) each count on a buffer of their own.
import { randomInt } from 'node:crypto';

/** 2^16 buckets: 256 KiB; a few hundred busy addresses collide with a given one at < 1 % */
export const ADDRESS_BUCKETS = 1 << 16;
const TOTAL = 0;
const SEED = 1;
const FIRST = 2;

export type Refusal = 'total' | 'address';

/** The shared counters of one process (created once, before the threads). */
export function sharesBuffer(): SharedArrayBuffer {
  const buf = new SharedArrayBuffer((FIRST + ADDRESS_BUCKETS) * 4);
  new Int32Array(buf)[SEED] = randomInt(1, 0x7fffffff);
  return buf;
}

export class AddressShares {
  private readonly a: Int32Array;

  constructor(
    readonly total: number,
    readonly perAddress: number,
    buf: SharedArrayBuffer = sharesBuffer(),
  ) {
    if (buf.byteLength !== (FIRST + ADDRESS_BUCKETS) * 4) throw new Error('not a shares buffer');
    this.a = new Int32Array(buf);
  }

  /** slots held in the process */
  held(): number {
    return Atomics.load(this.a, TOTAL);
  }

  /** slots held by the address's bucket */
  heldBy(address: string): number {
    return Atomics.load(this.a, this.bucket(address));
  }

  /**
   * Take a slot for `address`: its bucket (hand it to give() once, when the slot is done
   * with), or which cap refused it. A number, not a closure: a holder of many slots keeps
   * one small integer each.
   */
  take(address: string): number | Refusal {
    const a = this.a;
    if (Atomics.add(a, TOTAL, 1) >= this.total) {
      Atomics.sub(a, TOTAL, 1);
      return 'total';
    }
    const b = this.bucket(address);
    if (Atomics.add(a, b, 1) >= this.perAddress) {
      Atomics.sub(a, b, 1);
      Atomics.sub(a, TOTAL, 1);
      return 'address';
    }
    return b;
  }

  /** Give back a slot take() returned (exactly once per slot). */
  give(bucket: number): void {
    Atomics.sub(this.a, bucket, 1);
    Atomics.sub(this.a, TOTAL, 1);
  }

  private bucket(address: string): number {
    // FNV-1a over the UTF-16 units, seeded, then murmur3's finaliser to spread the bits
    let h = (0x811c9dc5 ^ this.a[SEED]!) >>> 0;
    for (let i = 0; i < address.length; i++) h = Math.imul(h ^ address.charCodeAt(i), 0x01000193);
    h ^= h >>> 16;
    h = Math.imul(h, 0x85ebca6b);
    h ^= h >>> 13;
    h = Math.imul(h, 0xc2b2ae35);
    h ^= h >>> 16;
    return FIRST + ((h >>> 0) % ADDRESS_BUCKETS);
  }
}
