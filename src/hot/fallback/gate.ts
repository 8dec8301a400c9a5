// The bound on fallback queries: at most `max` in flight (running, or waiting for one of the
// fallback pool's connections) per thread; one more is refused at once with 503 and
// Retry-After, never queued. So a flood of reads while Redis is away costs PostgreSQL a fixed
// number of connections and statements, and every caller an answer without waiting.
import { ApiError } from '../domain/errors.js';

export interface GateStats {
  /** queries let through */
  admitted: number;
  /** queries refused (the gate was full) */
  refused: number;
  /** in flight now */
  inFlight: number;
}

export class Gate {
  private n = 0;
  private admittedN = 0;
  private refusedN = 0;

  constructor(readonly max: number) {}

  /** Run `f` inside the bound, or throw FALLBACK_BUSY (503, Retry-After: 1) when it is full. */
  async run<T>(f: () => Promise<T>): Promise<T> {
    if (this.n >= this.max) {
      this.refusedN++;
      throw new ApiError('FALLBACK_BUSY', [], { 'Retry-After': '1' });
    }
    this.n++;
    this.admittedN++;
    try {
      return await f();
    } finally {
      this.n--;
    }
  }

  get stats(): GateStats {
    return { admitted: this.admittedN, refused: this.refusedN, inFlight: this.n };
  }
}
