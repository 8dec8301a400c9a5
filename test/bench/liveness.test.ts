// The liveness bench's heartbeat part runs end to end (its README rows come from it): a tiny
// call, one round of one second, 8 connections, a fleet of 3 services per namespace, against the test
// run's Redis and PostgreSQL. With wrk (the rows' generator; `scripts/services.sh wrk`
// installs it), each of the fleet's services must have been heartbeaten (its lease renewed).
// Without wrk, autocannon (one URL, no fleet rotation). Checks that it runs and reports,
// never a figure.
import t from 'tap';
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { ROOT } from '../../src/hot/paths.js';
import { HAS_WRK } from '../../bench/wrk.js';

const run = promisify(execFile);
const wrk = HAS_WRK;

t.test(`the liveness bench's heartbeat part runs and reports (${wrk ? 'wrk, fleet rotation' : 'autocannon'})`, async (t) => {
  const args = ['--part', 'heartbeats', '--duration', '1', '--rounds', '1', '--warmup', '0', '--fleet', '3', '--connections', '8', '--generator', wrk ? 'wrk' : 'autocannon'];
  const { stdout } = await run(process.execPath, [join(ROOT, 'dist/bench/liveness.js'), ...args], { cwd: ROOT, timeout: 120_000, maxBuffer: 1 << 24 });
  t.match(stdout, /fleet: 3 leased services in production and 3 in the sandbox/);
  for (const row of ['heartbeats (', 'sandbox heartbeats (rate limit counted)', 'floor (any heartbeat that waits for Redis', 'GET /livez on the same server']) t.ok(stdout.includes(row), `reports: ${row}`);
  t.match(stdout, /ratio median \d\.\d\d \(rounds /, 'a paired ratio');
  const m = /heartbeat script calls: (\d+) \((\d+) on the heartbeat connection\) answering (\d+) heartbeats .* in (\d+) lines .*, carrying (\d+) sandboxes' rate records; token memory: (\d+) hashed/.exec(stdout);
  t.ok(m, 'script calls, records carried and token memory reported');
  // the bench's server runs on a standalone Redis: its calls went on the heartbeat connection
  t.ok(Number(m?.[2]) > 0 && Number(m?.[2]) <= Number(m?.[1]), 'calls on the heartbeat connection reported');
  t.ok(Number(m?.[3]) > 0, 'heartbeats reached Redis');
  t.ok(Number(m?.[4]) > 0 && Number(m?.[4]) <= Number(m?.[3]), 'as lines, at most one a heartbeat');
  // the sandbox's heartbeats are answered from its rate-limit lease: their records ride along
  t.ok(Number(m?.[5]) > 0, 'rate records carried by heartbeat calls');
  // with wrk every fleet service was heartbeaten in turn; autocannon sends one URL, no fleet's
  const r = /fleet leases renewed by the runs: (\d+) of 3 in production, (\d+) of 3 in the sandbox/.exec(stdout);
  t.ok(r, 'the fleet leases renewed are reported');
  if (wrk) t.same([Number(r?.[1]), Number(r?.[2])], [3, 3], 'each fleet service heartbeaten');
});
