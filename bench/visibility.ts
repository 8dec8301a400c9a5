// Scenario v: how soon a write acknowledged by one node is visible on another. Two server
// processes share PostgreSQL and Redis (key prefix included). Each round: node B answers a
// search of a fresh capability (an empty page, which B now holds in its result cache), node
// A registers a sandbox service with that capability (201 = committed in PostgreSQL), then
// B is asked again and again until its answer holds the new service. The time from A's 201
// to B's first answer with it is the round's visibility delay: the projector's apply to
// Redis plus the invalidation message to B (issue 5: within 100 ms). The service is deleted
// afterwards, so the data set is left as it was.
import { percentile } from './cannon.js';

export interface Visibility {
  rounds: number;
  /** delays in ms, sorted */
  delaysMs: number[];
  p50: number;
  p99: number;
  max: number;
  within100: number;
  /** rounds whose service never showed up on B within the deadline */
  missed: number;
}

const DEADLINE_MS = 5000;

async function must(r: Promise<Response>, want: number, what: string): Promise<Response> {
  const res = await r;
  if (res.status !== want) throw new Error(`visibility: ${what} answered ${res.status}: ${(await res.text()).slice(0, 200)}`);
  return res;
}

export async function visibility(baseA: string, baseB: string, sandbox: { uuid: string; key: string }, rounds: number): Promise<Visibility> {
  const auth = { authorization: `Bearer ${sandbox.key}` };
  const run = Date.now().toString(36);
  const delays: number[] = [];
  let missed = 0;
  for (let i = 0; i < rounds; i++) {
    const cap = `bench-vis-${run}-${i}`;
    const path = `/sandbox/${sandbox.uuid}/services?capability=${cap}`;
    const before = await must(fetch(baseB + path, { headers: auth }), 200, 'B before the write');
    if ((await before.text()) !== '[]') throw new Error(`visibility: ${cap} is not empty before the write`);
    const created = await must(
      fetch(baseA + `/sandbox/${sandbox.uuid}/services`, {
        method: 'POST',
        headers: { ...auth, 'content-type': 'application/json' },
        body: JSON.stringify({ endpoint: `https://vis-${i}.bench.example.net/`, capability: cap }),
      }),
      201,
      'the write on A',
    );
    const t0 = performance.now();
    const { id } = (await created.json()) as { id: string };
    let seen = false;
    while (performance.now() - t0 < DEADLINE_MS) {
      const r = await must(fetch(baseB + path, { headers: auth }), 200, 'B after the write');
      if ((await r.text()).includes(`"${id}"`)) {
        seen = true;
        break;
      }
    }
    if (seen) delays.push(performance.now() - t0);
    else missed++;
    await must(fetch(baseA + `/sandbox/${sandbox.uuid}/services/${id}`, { method: 'DELETE', headers: auth }), 204, 'the clean-up delete');
  }
  delays.sort((a, b) => a - b);
  return {
    rounds,
    delaysMs: delays,
    p50: percentile(Float64Array.from(delays), 50),
    p99: percentile(Float64Array.from(delays), 99),
    max: delays.length ? delays[delays.length - 1]! : NaN,
    within100: delays.filter((d) => d <= 100).length,
    missed,
  };
}
