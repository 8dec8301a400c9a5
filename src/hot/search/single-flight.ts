// One computation per key at a time: concurrent misses of the same cache key (a hot query
// whose entry just expired or was invalidated) wait for the computation already running
// instead of each starting its own. Without it, every expiry of a hot heavy query sent a
// burst of identical intersections to the worker pool and overflowed its queue (503s in
// bench rows b and c, see docs/decisions/result-cache.md).
//
// The computation runs under its own AbortSignal, aborted only when every request waiting
// for it has gone away: one client disconnecting must not cancel the others' answer.

/** Who waits for an answer: tells when it has gone away (http/reply.ts Reply) */
export interface Requester {
  onAbort(f: () => void): void;
}

interface Flight<T> {
  promise: Promise<T>;
  controller: AbortController;
  waiters: number;
}

export class SingleFlight<T> {
  private flights = new Map<string, Flight<T>>();
  /** requests that joined a computation already running (for metrics and tests) */
  joined = 0;

  run(key: string, requester: Requester | undefined, fn: (signal: AbortSignal) => Promise<T>): Promise<T> {
    let f = this.flights.get(key);
    if (f) this.joined++;
    else {
      const controller = new AbortController();
      const flight: Flight<T> = { controller, waiters: 0, promise: undefined as unknown as Promise<T> };
      flight.promise = (async () => {
        try {
          return await fn(controller.signal);
        } finally {
          if (this.flights.get(key) === flight) this.flights.delete(key);
        }
      })();
      this.flights.set(key, flight);
      f = flight;
    }
    const flight = f;
    flight.waiters++;
    if (requester) {
      let gone = false;
      // (a requester that goes away after the answer only lowers a count nobody reads)
      requester.onAbort(() => {
        if (gone) return;
        gone = true;
        if (--flight.waiters === 0) {
          // nobody wants the answer: cancel it, and let the next request start afresh
          if (this.flights.get(key) === flight) this.flights.delete(key);
          flight.controller.abort();
        }
      });
    }
    return flight.promise;
  }

  get size(): number {
    return this.flights.size;
  }
}
