// Held requests in tests (contract, "Waiting for a change"): a conditional GET that prefers a
// wait, sent now and awaited later, and the waits that tell when the server holds it (its
// thread's count, or the process's gauge on /metrics when the test cannot reach the thread).
import { http } from './proxy.js';
import type { TestServer } from './server.js';
import { waitFor } from './wait.js';

export interface Held {
  /** the answer, once the server gives it (checked against /openapi.json) */
  answer: Promise<Response>;
  /** whether the answer came (without waiting for it) */
  settled(): boolean;
  /** the client goes away */
  abort(): void;
}

/** GET `path` with If-None-Match `etag` and `Prefer: wait=<wait>` (or `prefer` as given). */
export function holdOn(s: TestServer, path: string, etag: string, wait: number | string, headers: Record<string, string> = {}): Held {
  const ac = new AbortController();
  let done = false;
  const prefer = typeof wait === 'number' ? `wait=${wait}` : wait;
  const answer = s.req(path, { headers: { 'if-none-match': etag, prefer, ...headers }, signal: ac.signal });
  answer.then(
    () => (done = true),
    () => (done = true),
  );
  return { answer, settled: () => done, abort: () => ac.abort() };
}

/** The ETag of `path` now (a 200). */
export async function etagOf(s: TestServer, path: string, headers: Record<string, string> = {}): Promise<string> {
  const r = await s.req(path, { headers });
  if (r.status !== 200) throw new Error(`${path}: ${r.status} ${await r.text()}`);
  await r.arrayBuffer();
  return r.headers.get('etag')!;
}

/** Until the server's thread holds exactly `n` requests. */
export function heldCount(s: TestServer, n: number): Promise<true> {
  return waitFor(`${n} held requests (${s.app.held.size} now)`, () => s.app.held.size === n, 20_000, 5);
}

/** The process's held requests, all threads together, from its /metrics listener (`registry_held_requests`). */
export async function heldGauge(metricsPort: number): Promise<number> {
  const text = (await http(metricsPort, '/metrics')).body;
  const m = /^registry_held_requests (\d+)/m.exec(text);
  return m ? Number(m[1]) : 0;
}
