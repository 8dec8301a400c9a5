// The heartbeat part of the liveness bench (bench/liveness.ts): production and sandbox
// heartbeats of a leased service (or of a fleet in turn) against a bare uWS ceiling answering
// 204, the Redis floor (bench/floor.ts) and GET /livez, round by round; each row's figure is
// the median of its per-round ratios over the ceiling. Then the heartbeat batch's script
// calls, the fleet's renewed leases and the rate limit's work over the runs.
import uWS from 'uWebSockets.js';
import { createSandbox, registerProduction, type TestServer } from '../test/helpers/server.js';
import { shardOf } from '../src/hot/liveness/redis-lease.js';
import { loadAverage } from './cpu.js';
import { floorHandler } from './floor.js';
import { heartbeatLoad, type Fleet } from './liveness-load.js';

/** the ttl (s) of every bench lease; a fleet deadline past registration + this was renewed */
const LEASE_TTL = 60;

/** The part's flags (bench/liveness.ts says what each means). */
export interface HeartbeatSettings {
  /** seconds of each measured run (--duration) */
  duration: number;
  /** --connections */
  connections: number;
  /** autocannon or wrk (--generator) */
  generator: string;
  /** --warmup, seconds */
  warmup: number;
  /** --rounds */
  rounds: number;
  /** --fleet: leased services per namespace heartbeating in turn; 1: one service's heartbeats */
  fleet: number;
}

export async function heartbeats(s: TestServer, o: HeartbeatSettings): Promise<void> {
  const { rounds: ROUNDS, fleet: FLEET } = o;
  const svc = (await registerProduction(s, { endpoint: 'https://bench-hb.example.com', capability: 'bench', ttl: LEASE_TTL })) as unknown as { id: string; heartbeatToken: string };
  // the sandbox row: the same heartbeat counted against its sandbox's rate limit
  const sb = await createSandbox(s, 'Bench');
  if ((await s.admin('POST', `/admin/api/sandboxes/${sb.uuid}/tier`, { tier: 'bench' })).status !== 200) throw new Error('tier');
  const sr = await s.req(`/sandbox/${sb.uuid}/services`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${sb.apiKey}` }, body: JSON.stringify({ endpoint: 'https://bench-hb-sb.example.com', capability: 'bench', ttl: LEASE_TTL }) });
  const sbSvc = (await sr.json()) as { id: string; heartbeatToken: string };
  let fleet: Fleet = [];
  /** when the fleet's registrations were done: a deadline later than this + ttl was renewed by a heartbeat */
  let fleetRegistered = 0;
  if (FLEET > 1) {
    // N more leased services in each namespace, registered in batches of up to 1,000
    type Made = { services: { id: string; heartbeatToken: string }[] };
    const made = async (send: (body: unknown) => Promise<Response>, ns: string, heartbeatPath: (id: string) => string): Promise<[string, string][]> => {
      const out: [string, string][] = [];
      for (let i = 0; i < FLEET; i += 1000) {
        const services = Array.from({ length: Math.min(1000, FLEET - i) }, (_, j) => ({ endpoint: `https://fleet-${ns}-${i + j}.example.com`, capability: 'bench', ttl: LEASE_TTL }));
        const r = await send({ services });
        if (r.status !== 201) throw new Error(`fleet registration: ${r.status} ${await r.text()}`);
        for (const x of ((await r.json()) as Made).services) out.push([heartbeatPath(x.id), x.heartbeatToken]);
      }
      return out;
    };
    const prod = await made((body) => s.admin('POST', '/admin/api/services/batch', body), 'p', (id) => `/services/${id}/heartbeat`);
    const sandboxBatch = (body: unknown) => s.req(`/sandbox/${sb.uuid}/services/batch`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${sb.apiKey}` }, body: JSON.stringify(body) });
    const sand = await made(sandboxBatch, 's', (id) => `/sandbox/${sb.uuid}/services/${id}/heartbeat`);
    // the longer prefix first: a sandbox path also contains "/services/"
    fleet = [{ prefix: `/sandbox/${sb.uuid}/services/`, beats: sand }, { prefix: '/services/', beats: prod }];
    fleetRegistered = Date.now();
    console.log(`fleet: ${FLEET} leased services in production and ${FLEET} in the sandbox, heartbeating in turn`);
  }
  const { generate, cannon } = heartbeatLoad({ duration: o.duration, connections: o.connections, generator: o.generator, fleet, redis: s.app.redis });
  // a 204 as the server writes one: no Content-Length (RFC 9110 §8.6; http/route.ts)
  const ceiling = uWS.App().put('/*', (res) => void res.writeStatus('204 No Content').endWithoutBody()).any('/*', (res) => void res.writeStatus('404 Not Found').end());
  let listenSocket: uWS.us_listen_socket | null = null;
  const cport = await new Promise<number>((ok) => ceiling.listen('127.0.0.1', 0, (sock) => ok(uWS.us_socket_local_port((listenSocket = sock)))));
  // the floor (bench/floor.ts): the most a heartbeat confirmed by Redis could do here
  const floor = uWS.App().put('/*', floorHandler(s.app.redis));
  let floorSocket: uWS.us_listen_socket | null = null;
  const fport = await new Promise<number>((ok) => floor.listen('127.0.0.1', 0, (sock) => ok(uWS.us_socket_local_port((floorSocket = sock)))));
  const hb: number[] = [];
  const ce: number[] = [];
  const lz: number[] = [];
  const sh: number[] = [];
  const batch0 = { ...s.app.liveness.batch.stats };
  const auth0 = { ...s.app.auth.stats };
  // warm-up, not counted: the server's code is compiled by V8 under load like the ceiling's
  // (a one-line handler, warm at once); the first production round was up to 30 % slower
  for (const [url, tok, m] of [[`${s.url}/services/${svc.id}/heartbeat`, svc.heartbeatToken, 'PUT'], [`${s.url}/sandbox/${sb.uuid}/services/${sbSvc.id}/heartbeat`, sbSvc.heartbeatToken, 'PUT'], [`http://127.0.0.1:${cport}/x`, '', 'PUT'], [`http://127.0.0.1:${fport}/x`, '', 'PUT'], [`${s.url}/livez`, '', 'GET']] as const) {
    if (o.warmup > 0) await generate(url, tok, m, o.warmup);
  }
  const fl: number[] = [];
  for (let i = 0; i < ROUNDS; i++) {
    // each heartbeat run next to a ceiling run: this machine's speed drifts by up to 2x within
    // a minute (another tenant's load), so a ratio is taken within a round, not across rounds
    hb.push(await cannon(`${s.url}/services/${svc.id}/heartbeat`, svc.heartbeatToken, 'PUT', 'production heartbeat'));
    ce.push(await cannon(`http://127.0.0.1:${cport}/services/${svc.id}/heartbeat`, svc.heartbeatToken, 'PUT', 'ceiling (bare uWS 204)'));
    sh.push(await cannon(`${s.url}/sandbox/${sb.uuid}/services/${sbSvc.id}/heartbeat`, sbSvc.heartbeatToken, 'PUT', 'sandbox heartbeat'));
    fl.push(await cannon(`http://127.0.0.1:${fport}/services/${svc.id}/heartbeat`, svc.heartbeatToken, 'PUT', 'floor (bare uWS 204 after one Redis PING a turn)'));
    // the same server's cheapest route (no Redis): what the machine lets the server do at all
    lz.push(await cannon(`${s.url}/livez`, svc.heartbeatToken, 'GET', 'GET /livez'));
  }
  const med = (xs: number[]) => [...xs].sort((a, b) => a - b)[xs.length >> 1]!;
  /** per-round ratios x_i / ceiling_i: their median, and their range */
  const paired = (xs: number[]) => {
    const r = xs.map((x, i) => x / ce[i]!).sort((a, b) => a - b);
    return `median ${med(r).toFixed(2)} (rounds ${r[0]!.toFixed(2)}-${r[r.length - 1]!.toFixed(2)}; best ÷ best ${(Math.max(...xs) / Math.max(...ce)).toFixed(2)})`;
  };
  console.log(`GET /livez on the same server: ${lz.map(Math.round).join(', ')} req/s; ratio ${paired(lz)}`);
  console.log(`heartbeats (${o.generator}, ${o.connections} connections, ${ROUNDS} rounds of ${o.duration} s): ${hb.map(Math.round).join(', ')} req/s; ceiling 204: ${ce.map(Math.round).join(', ')} req/s; ratio ${paired(hb)} (load ${loadAverage()})`);
  console.log(`sandbox heartbeats (rate limit counted): ${sh.map(Math.round).join(', ')} req/s; ratio ${paired(sh)}`);
  console.log(`floor (any heartbeat that waits for Redis, one round trip a turn): ${fl.map(Math.round).join(', ')} req/s; ratio ${paired(fl)}`);
  if (fleet.length) {
    // the fleet's leases renewed by the runs (a deadline past registration + ttl): each service was heartbeaten
    const renewed = async (beats: [string, string][]) => {
      let n = 0;
      for (const [path] of beats) {
        const id = /\/services\/([^/]+)\/heartbeat$/.exec(path)![1]!;
        if (Number(await s.app.redis.zscore(s.app.keys.deadlines(shardOf(id)), id)) > fleetRegistered + LEASE_TTL * 1000) n++;
      }
      return n;
    };
    console.log(`fleet leases renewed by the runs: ${await renewed(fleet[1]!.beats)} of ${FLEET} in production, ${await renewed(fleet[0]!.beats)} of ${FLEET} in the sandbox`);
  }
  const b = s.app.liveness.batch.stats;
  console.log(`heartbeat script calls: ${b.calls - batch0.calls} (${b.lineCalls - batch0.lineCalls} on the heartbeat connection) answering ${b.beats - batch0.beats} heartbeats (${((b.beats - batch0.beats) / Math.max(1, b.calls - batch0.calls)).toFixed(1)} a call) in ${b.lines - batch0.lines} lines (identical heartbeats of a turn share one), carrying ${b.records - batch0.records} sandboxes' rate records; token memory: ${s.app.heartbeatTokens.stats.hashed} hashed`);
  // the sandbox row's rate limit: requests answered from this thread's admission batch, script calls that
  // requests waited for, and script calls for a batch asked for ahead (nobody waits for those)
  const a = s.app.auth.stats;
  console.log(`rate limit: ${a.batched - auth0.batched} sandbox requests admitted from the thread's admission batch, ${a.asked - auth0.asked} rate-limit script calls for requests, ${a.prefetched - auth0.prefetched} for batches asked ahead`);
  if (listenSocket) uWS.us_listen_socket_close(listenSocket);
  if (floorSocket) uWS.us_listen_socket_close(floorSocket);
}
