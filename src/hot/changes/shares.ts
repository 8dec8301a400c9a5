// Fair shares of the change feed, per process: open streams in total (CHANGES_MAX_STREAMS)
// and per client address (CHANGE_STREAMS_PER_ADDRESS), counted on the process's shared
// memory by domain/shares.ts (every thread, one count; a race never admits one too many).
// A stream's route holds its slot as a release function: one stream, one closure, for as
// long as the stream is open.
import { AddressShares, sharesBuffer, type Refusal } from '../domain/shares.js';

export { ADDRESS_BUCKETS, type Refusal } from '../domain/shares.js';

/** The shared counters of one process (created once, before the threads). */
export const streamSharesBuffer = sharesBuffer;

export class StreamShares extends AddressShares {
  /** open streams of the process */
  open(): number {
    return this.held();
  }

  /** open streams of the address's bucket */
  openBy(address: string): number {
    return this.heldBy(address);
  }

  /**
   * Take a slot for `address`: a release function (call it once the stream is over, on
   * every path; later calls do nothing), or which cap refused it.
   */
  reserve(address: string): (() => void) | Refusal {
    const b = this.take(address);
    if (typeof b !== 'number') return b;
    let held = true;
    return () => {
      if (!held) return;
      held = false;
      this.give(b);
    };
  }
}
