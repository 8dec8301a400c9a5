// Response rate limiting for UDP (contract, "DNS": no amplifier). A UDP source address can be
// forged, so a query may be an attack on the address it claims: each address gets at most
// `perSecond` answers in a second of the clock; beyond, every second query gets an empty TC
// answer (`slip`: no larger than the query, and a real client retries over TCP, which cannot
// be forged) and the others nothing (`drop`).
//
// The table is cleared at each new second and holds at most `maxAddresses` addresses; under a
// flood of forged addresses the ones that find it full share a single budget, so memory stays
// bounded and the flood as a whole gets no more than one address would.

export type RateDecision = 'answer' | 'slip' | 'drop';

export interface RateLimiterOptions {
  perSecond: number;
  maxAddresses: number;
  /** the clock (ms) */
  now: () => number;
}

export class ResponseRateLimiter {
  private second = Number.NaN;
  private readonly counts = new Map<string, number>();
  /** queries this second from addresses that found the table full */
  private overflow = 0;

  constructor(private readonly o: RateLimiterOptions) {}

  /** Count one query from `address` and say what it gets. */
  take(address: string): RateDecision {
    const second = Math.floor(this.o.now() / 1000);
    if (second !== this.second) {
      this.second = second;
      this.counts.clear();
      this.overflow = 0;
    }
    let n: number;
    const seen = this.counts.get(address);
    if (seen !== undefined || this.counts.size < this.o.maxAddresses) {
      n = (seen ?? 0) + 1;
      this.counts.set(address, n);
    } else {
      n = ++this.overflow;
    }
    if (n <= this.o.perSecond) return 'answer';
    return (n - this.o.perSecond) % 2 === 1 ? 'slip' : 'drop';
  }

  /** addresses tracked this second (for tests of the bound) */
  get size(): number {
    return this.counts.size;
  }
}
