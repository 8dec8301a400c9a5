// Waiting in tests: a plain sleep, and polling a probe until it holds (a hang detector that
// fails with what it waited for, instead of at tap's timeout).

export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/**
 * For a test of a per-minute throttle: when the current minute has less than `marginMs` left,
 * wait into the next one, so that a burst falls in one window, not across a boundary.
 */
export async function freshMinute(marginMs: number): Promise<void> {
  const left = 60_000 - (Date.now() % 60_000);
  if (left < marginMs) await sleep(left + 100);
}

/** Poll `probe` until it returns a truthy value; throws after `timeoutMs` (a hang detector). */
export async function waitFor<T>(what: string, probe: () => Promise<T | null | undefined | false> | T | null | undefined | false, timeoutMs = 20_000, everyMs = 100): Promise<T> {
  const end = Date.now() + timeoutMs;
  let last: unknown = null;
  for (;;) {
    try {
      const v = await probe();
      if (v) return v;
    } catch (e) {
      last = e;
    }
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}${last ? `: ${String(last)}` : ''}`);
    await sleep(everyMs);
  }
}

/** what outboxDrained() reads through: a pg Client or Pool */
interface Queryable {
  query(text: string): Promise<{ rows: unknown[] }>;
}

/** Poll until PostgreSQL's outbox is empty: every committed write reached the index, or a rebuild covered it. */
export async function outboxDrained(db: Queryable, timeoutMs = 30_000, everyMs = 100): Promise<void> {
  await waitFor('the outbox drains', async () => ((await db.query('SELECT count(*) AS n FROM outbox')).rows[0] as { n: string }).n === '0', timeoutMs, everyMs);
}
