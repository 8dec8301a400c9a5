// Forcing interleavings against the real PostgreSQL and Redis, with no sleeps: a gate a
// test opens by hand, a PostgreSQL trigger that holds a chosen write transaction on an
// advisory lock the test owns, and waits for observable states (a backend waiting on a
// lock, a request that answered) rather than for time to pass.
import pg from 'pg';

export interface Gate {
  /** settles once open() was called */
  wait: Promise<void>;
  open(): void;
  opened: boolean;
}

export function gate(): Gate {
  let open!: () => void;
  const g: Gate = {
    wait: new Promise<void>((r) => (open = r)),
    open: () => {
      g.opened = true;
      open();
    },
    opened: false,
  };
  return g;
}

/** fixed advisory lock id of the hold trigger (the app's own locks are 7_242_00x) */
export const HOLD_LOCK = 4_242_424;

/**
 * A connection to the test's database that can hold, inside its transaction and right
 * after the outbox row is inserted, any write that sets a service's endpoint to one
 * containing "hold-me" (the writer sees its own uncommitted endpoint; other transactions
 * do not, so they pass).
 */
export async function holdControl(url: string): Promise<{
  /** from now on, "hold-me" writes wait at their outbox insert */
  hold(): Promise<void>;
  release(): Promise<void>;
  /** backends of this database waiting for a lock: on the hold, or on anything else (row locks) */
  waiting(): Promise<{ held: number; other: number }>;
  end(): Promise<void>;
}> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  await c.query(`
    CREATE OR REPLACE FUNCTION test_hold_outbox() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      -- (a row of many services, an import's chunk: migration 0017, holds when any of them would)
      IF EXISTS (SELECT 1 FROM services WHERE id = ANY(coalesce(NEW.service_ids, ARRAY[NEW.service_id])) AND endpoint LIKE '%hold-me%') THEN
        PERFORM pg_advisory_xact_lock_shared(${HOLD_LOCK});
      END IF;
      RETURN NEW;
    END $$;
    DROP TRIGGER IF EXISTS test_hold_outbox ON outbox;
    CREATE TRIGGER test_hold_outbox AFTER INSERT ON outbox FOR EACH ROW EXECUTE FUNCTION test_hold_outbox();`);
  return {
    hold: async () => void (await c.query('SELECT pg_advisory_lock($1)', [HOLD_LOCK])),
    release: async () => void (await c.query('SELECT pg_advisory_unlock($1)', [HOLD_LOCK])),
    async waiting() {
      const r = await c.query<{ held: string; other: string }>(
        `SELECT count(*) FILTER (WHERE l.locktype = 'advisory' AND l.objid = $1) AS held,
                count(*) FILTER (WHERE NOT (l.locktype = 'advisory' AND l.objid = $1)) AS other
           FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
          WHERE NOT l.granted AND a.datname = current_database()`,
        [HOLD_LOCK],
      );
      return { held: Number(r.rows[0]!.held), other: Number(r.rows[0]!.other) };
    },
    end: () => c.end(),
  };
}
