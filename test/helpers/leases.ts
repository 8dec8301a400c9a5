// The liveness tests' server: leases on an injected clock (ThreadHooks.leaseNow) and the
// sweeper driven by hand (sweep: false, sweepOnce), so no test sleeps through a ttl; and what
// those tests ask of it: a heartbeat, a service's health as served, its PostgreSQL row and
// its change events.
import type { Test } from 'tap';
import type { Svc } from './svc.js';
import { serve, type TestServer } from './server.js';

export interface LeaseServer {
  s: TestServer;
  /** the injected clock's time, ms */
  now(): number;
  /** move the injected clock on */
  advance(seconds: number): number;
  /** one pass of the server's own sweeper */
  sweep(): Promise<number>;
  /** PUT a heartbeat to `path` with `token` (and a JSON body, when given) */
  beat(path: string, token: string, body?: unknown): Promise<Response>;
  health(id: string): Promise<Svc['health']>;
  row(id: string): Promise<{ version: string; xmin: string; hs: string } | undefined>;
  events(id: string): Promise<string[]>;
}

/** A test server (torn down with `t`) whose lease deadlines run on a clock the test moves. */
export async function serveOnLeaseClock(t: Test): Promise<LeaseServer> {
  let clock = Date.now();
  const s = await serve(t, { hooks: { leaseNow: () => clock, sweep: false } });
  const advance = (seconds: number) => (clock += seconds * 1000);
  const sweep = () => s.app.sweeper.sweepOnce();
  const beat = (path: string, token: string, body?: unknown) =>
    s.req(path, { method: 'PUT', headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) }, body: body === undefined ? undefined : JSON.stringify(body) });
  const health = async (id: string) => ((await (await s.req(`/services/${id}`)).json()) as Svc).health;
  const row = async (id: string) => (await s.app.pg.query<{ version: string; xmin: string; hs: string }>('SELECT version, xmin::text, health_status AS hs FROM services WHERE id = $1', [id])).rows[0];
  const events = async (id: string) => (await s.app.pg.query<{ type: string }>('SELECT type FROM change_events WHERE service_id = $1 ORDER BY id', [id])).rows.map((r) => r.type);
  return { s, now: () => clock, advance, sweep, beat, health, row, events };
}
