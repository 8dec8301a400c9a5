// Liveness bench (issue 23): heartbeats against a bare uWS server answering 204, and the
// expiry lag of N leased services that stop heartbeating, on real Redis and PostgreSQL.
//
//   node --expose-gc dist/bench/liveness.js [--services N] [--ttl S] [--duration S] [--connections C]
//        [--part all|heartbeats|expiry] [--generator autocannon|wrk] [--writers W] [--warmup S] [--rounds R]
//
// Heartbeats: one leased service, autocannon or wrk (a child process: its own core) sends PUT
// /services/{id}/heartbeat with its token for --duration seconds, in --rounds rounds (6) of
// production, the ceiling, sandbox, the floor and GET /livez, after --warmup seconds (2) of
// load on each, not counted. A ratio is taken within each round (this run over the round's
// ceiling run) and the median of the rounds is the row's figure; each side's best run over
// the other's is printed too. The floor is a bare uWS app answering 204 once one Redis PING
// per event-loop turn came back: what any heartbeat confirmed by Redis could do here. Each run prints where the CPU went (server,
// Redis, the generator: a generator near a full core is the bound) and the server's µs of
// CPU per request, the figure to compare when the generator saturates before the server. Expiry: N
// services registered in one statement with ttl S, leases seeded by the rebuild (a fresh
// ttl each), then one sweeper (LEASE_SWEEP_MS 250) until all are critical; the lag of each
// expiry is the time it became visible in the index (documents, healthy=true) minus its
// deadline, and apart from it the time its durable write was committed and applied. W loops
// register services over HTTP meanwhile (and for up to 3 s before the first deadline, the
// baseline): their latency says whether the mass expiry starves ordinary writes. Memory: Redis bytes of the lease shards
// (MEMORY USAGE) per leased service, and this process's RSS before and after seeding.
import { startTestServer } from '../test/helpers/server.js';
import { numArg as arg, strArg as sarg } from './args.js';
import { expiry } from './liveness-expiry.js';
import { heartbeats } from './liveness-heartbeats.js';

const N = arg('services', 100_000);
const TTL = arg('ttl', 10);
const DUR = arg('duration', 5);
const CONN = arg('connections', 50);
/** seconds of load on each target before the measured rounds (not counted) */
const WARMUP = arg('warmup', 2);
/** heartbeat rounds: each runs production, the ceiling, sandbox, the Redis floor and GET /livez once */
const ROUNDS = arg('rounds', 6);
/**
 * --fleet N: heartbeats of N leased services in turn (one request each, round robin) instead
 * of one service's: a fleet's heartbeats fall in all 16 lease shards, so a turn's batch is up
 * to 16 script calls. The ceiling and the floor get the same request stream (paths, headers).
 */
const FLEET = arg('fleet', 1);
const PART = sarg('part', 'all');
/** concurrent registration loops during the expiry (and for a while before it, as the baseline) */
const WRITERS = arg('writers', 4);
/** --profile: CPU seconds of this process, Redis and PostgreSQL's top statements (pg_stat_statements, when preloaded) over the expiry */
const PROFILE = process.argv.includes('--profile');
const GEN = sarg('generator', 'autocannon');
/** --first-page N: the sweeper's first lease-sweep call per shard and pass (its default when absent; the batch: the old fixed pages) */
const FIRST_PAGE = process.argv.includes('--first-page') ? arg('first-page', 0) : undefined;

// a tier whose limit a bench cannot reach: the sandbox row measures the rate limit's cost, not 429s
const s = await startTestServer({ hooks: { sweep: false }, env: { TIERS: 'free=60,pro=600,enterprise=6000,bench=999999999', TIER_MAX_SERVICES: 'bench=999999999' } });
try {
  // ---- heartbeats against the ceiling ----
  if (PART !== 'expiry') await heartbeats(s, { duration: DUR, connections: CONN, generator: GEN, warmup: WARMUP, rounds: ROUNDS, fleet: FLEET });
  // ---- expiry lag ----
  if (PART !== 'heartbeats') await expiry(s, { services: N, ttl: TTL, writers: WRITERS, profile: PROFILE, firstPage: FIRST_PAGE });
} finally {
  await s.close();
}
