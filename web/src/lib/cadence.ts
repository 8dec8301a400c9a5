// Poll cadence of the live chart: every second while traffic flows, every five seconds
// once fifteen seconds have passed without any. No DOM and no timers here (the element
// owns the timer), so the rule is unit-tested with plain numbers (test/unit/web-cadence).

export const FAST_MS = 1000;
export const SLOW_MS = 5000;
/** how long without traffic before slowing down */
export const QUIET_MS = 15_000;

export class PollCadence {
  private lastTotal: number | null = null;
  private lastTrafficAt: number;

  /**
   * Opening the chart counts as activity: the first fifteen seconds poll fast, so a
   * freshly opened chart fills in at once and catches traffic that is about to start.
   */
  constructor(openedAt: number) {
    this.lastTrafficAt = openedAt;
  }

  /**
   * Record one poll's cumulative request counter. Returns true when it grew since the
   * previous poll (traffic). The first poll only sets the baseline; a counter that went
   * down (Redis lost its counters) resets the baseline without counting as traffic.
   */
  observe(total: number, now: number): boolean {
    const prev = this.lastTotal;
    this.lastTotal = total;
    if (prev !== null && total > prev) {
      this.lastTrafficAt = now;
      return true;
    }
    return false;
  }

  /** Milliseconds to wait before the next poll. */
  delay(now: number): number {
    return now - this.lastTrafficAt < QUIET_MS ? FAST_MS : SLOW_MS;
  }

  /** A failed poll: try again at the slow pace, without forgetting the baseline. */
  failedDelay(): number {
    return SLOW_MS;
  }
}
