// Fair shares of the change feed, per process: open streams in total (CHANGES_MAX_STREAMS)
// and per client address (CHANGE_STREAMS_PER_ADDRESS). Every uWS thread of a process gets
// the same SharedArrayBuffer (main.ts hands it over in workerData), so the caps are the
// process's whatever the thread count. A slot is taken synchronously with Atomics (add,
// check the old value, give it back when over), before the route's first await: concurrent
// opens on any number of threads never hold one more than a cap; a race may refuse an open
// that a moment later would have fitted, never admit one too many.
//
// Addresses are counted in ADDRESS_BUCKETS buckets of a hash keyed with a random seed
// drawn once per process (stored in the buffer, so every thread hashes alike): two
// addresses in one bucket share one share (stricter, never looser), and without the seed
// nobody can choose an address that lands in someone else's bucket (docs/decisions/change-feed.md).
import { randomInt } from 'node:crypto';

/** 2^16 buckets: 256 KiB; a few hundred busy addresses collide with a given one at < 1 % */
export const ADDRESS_BUCKETS = 1 << 16;
const TOTAL = 0;
const SEED = 1;
const FIRST = 2;

export type Refusal = 'total' | 'address';

/** The shared counters of one process (created once, before the threads). */
export function streamSharesBuffer(): SharedArrayBuffer {
  const buf = new SharedArrayBuffer((FIRST + ADDRESS_BUCKETS) * 4);
  new Int32Array(buf)[SEED] = randomInt(1, 0x7fffffff);
  return buf;
}

export class StreamShares {
  private readonly a: Int32Array;

  constructor(
    readonly total: number,
    readonly perAddress: number,
    buf: SharedArrayBuffer = streamSharesBuffer(),
  ) {
    if (buf.byteLength !== (FIRST + ADDRESS_BUCKETS) * 4) throw new Error('not a change-stream shares buffer');
    this.a = new Int32Array(buf);
  }

  /** open streams of the process */
  open(): number {
    return Atomics.load(this.a, TOTAL);
  }

  /** open streams of the address's bucket */
  openBy(address: string): number {
    return Atomics.load(this.a, this.bucket(address));
  }

  /**
   * Take a slot for `address`: a release function (call it once the stream is over, on
   * every path; later calls do nothing), or which cap refused it.
   */
  reserve(address: string): (() => void) | Refusal {
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
    let held = true;
    return () => {
      if (!held) return;
      held = false;
      Atomics.sub(a, b, 1);
      Atomics.sub(a, TOTAL, 1);
    };
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
