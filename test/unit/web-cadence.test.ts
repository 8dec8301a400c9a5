// Poll cadence of the live chart (web/src/lib/cadence.ts): 1 s while traffic flows, 5 s
// after 15 s without traffic.
import t from 'tap';
import { FAST_MS, PollCadence, QUIET_MS, SLOW_MS } from '../../web/src/lib/cadence.js';

t.test('constants are the contract values', async (t) => {
  t.equal(FAST_MS, 1000);
  t.equal(SLOW_MS, 5000);
  t.equal(QUIET_MS, 15_000);
});

t.test('fast right after opening, slow once 15 s pass without traffic', async (t) => {
  const c = new PollCadence(0);
  t.equal(c.observe(10, 0), false, 'the first poll only sets the baseline');
  t.equal(c.delay(0), 1000);
  t.equal(c.observe(10, 14_999), false);
  t.equal(c.delay(14_999), 1000, 'still inside 15 s');
  t.equal(c.observe(10, 15_000), false);
  t.equal(c.delay(15_000), 5000, '15 s without traffic: every 5 s');
});

t.test('traffic switches back to 1 s and keeps it for 15 s after the last request', async (t) => {
  const c = new PollCadence(0);
  c.observe(0, 0);
  c.observe(0, 20_000);
  t.equal(c.delay(20_000), 5000);
  t.equal(c.observe(3, 25_000), true, 'the counter grew: traffic');
  t.equal(c.delay(25_000), 1000);
  c.observe(7, 26_000);
  c.observe(7, 27_000);
  t.equal(c.delay(40_999), 1000, '14.999 s after the last growth');
  t.equal(c.delay(41_000), 5000, '15 s after the last growth');
});

t.test('a counter that goes down resets the baseline without counting as traffic', async (t) => {
  const c = new PollCadence(0);
  c.observe(100, 0);
  t.equal(c.observe(0, 30_000), false, 'Redis lost its counters');
  t.equal(c.delay(30_000), 5000);
  t.equal(c.observe(1, 31_000), true, 'growth from the new baseline is traffic');
});

t.test('a failed poll retries at the slow pace', async (t) => {
  t.equal(new PollCadence(0).failedDelay(), 5000);
});
