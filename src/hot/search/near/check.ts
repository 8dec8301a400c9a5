// The near cache's periodic version check (NEAR_CHECK_MS): the safety net for a delta that
// was lost with no later write to reveal it (NearCache.checkVersions). One round at a time;
// a round that fails (Redis away) is skipped: the subscription's own reconnect clears the
// near cache then anyway.
import type { NearCache } from './near-cache.js';

export class NearVersionCheck {
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<void> | null = null;

  constructor(
    private readonly near: NearCache,
    private readonly periodMs: number,
    private readonly read: (bases: string[]) => Promise<(number | null)[]>,
    /** a namespace (by base) found to have lost a delta: what else follows the deltas hears of it */
    private readonly stale?: (base: string) => void,
  ) {}

  start(): void {
    if (this.timer || this.periodMs <= 0 || !this.near.enabled) return;
    this.timer = setInterval(() => void this.round(), this.periodMs);
    this.timer.unref();
  }

  /** One check now (also what the timer runs); resolves when it is done. */
  round(): Promise<void> {
    if (this.running || !this.near.usable) return this.running ?? Promise.resolve();
    this.running = this.near
      .checkVersions(this.read, this.stale)
      .then(
        () => undefined,
        () => undefined,
      )
      .finally(() => (this.running = null));
    return this.running;
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.running;
  }
}
