// The sandbox tests' server (sandbox creation throttled only at 1000 a minute) with what those
// tests ask of it: register and list a sandbox's services, count a namespace's rows, read a
// sandbox's request total; and the fixtures of the isolation, authentication and registry
// tests: production services and two sandboxes with services of their own.
import type { Test } from 'tap';
import { ids, jsonBody, keyed } from './checks.js';
import type { Svc } from './svc.js';
import { createSandbox, registerProduction, serve, type TestServer } from './server.js';

export type Box = Awaited<ReturnType<typeof createSandbox>>;

export interface SandboxServer {
  s: TestServer;
  /** register a service in sandbox `b` (201 or it throws) */
  register(b: Box, body: unknown): Promise<Svc>;
  /** the ids of sandbox `b`'s list (200 or it throws) */
  list(b: Box, q?: string): Promise<string[]>;
  /** services of namespace `ns` in PostgreSQL */
  count(ns: string): Promise<number>;
  /** the requests counted against sandbox `b` (its /poll total) */
  total(b: Box): Promise<number>;
}

/** A test server (torn down with `t`) for the sandbox tests. */
export async function serveSandboxes(t: Test): Promise<SandboxServer> {
  const s = await serve(t, { env: { SANDBOX_CREATE_PER_MINUTE: '1000' } });
  const register = async (b: Box, body: unknown) => {
    const r = await s.req(`/sandbox/${b.uuid}/services`, jsonBody('POST', body, b.apiKey));
    if (r.status !== 201) throw new Error(`register: ${r.status} ${await r.text()}`);
    return (await r.json()) as Svc;
  };
  const list = async (b: Box, q = '') => {
    const r = await s.req(`/sandbox/${b.uuid}/services${q}`, keyed(b.apiKey));
    if (r.status !== 200) throw new Error(`list: ${r.status} ${await r.text()}`);
    return ids(r);
  };
  const count = async (ns: string) => Number((await s.app.pg.query<{ n: string }>('SELECT count(*) AS n FROM services WHERE ns = $1', [ns])).rows[0]!.n);
  const total = async (b: Box) => ((await (await s.req(`/sandbox/${b.uuid}/poll`)).json()) as { total: number }).total;
  return { s, register, list, count, total };
}

/**
 * Production services (prodPrint: capability print, color blue; prodIso: isolation) and
 * sandboxes Alpha (A: a1 print+sbonly red, a2 Print blue) and Beta (B: b1 print+sbonly red).
 * Made before any test runs (top-level code after the first t.test would run concurrently
 * with it).
 */
export async function sandboxFixtures({ s, register }: SandboxServer) {
  const prodPrint = await registerProduction(s, { endpoint: 'https://prod-print.example.com', capabilities: ['print'], properties: { color: 'blue' } });
  const prodIso = await registerProduction(s, { endpoint: 'https://prod-iso.example.com', capabilities: ['isolation'] });
  const A = await createSandbox(s, 'Alpha');
  const B = await createSandbox(s, 'Beta');
  const a1 = await register(A, { endpoint: 'https://a1.example.com', capabilities: ['print', 'sbonly'], properties: { color: 'red' } });
  const a2 = await register(A, { endpoint: 'https://a2.example.com', capability: 'Print', properties: { color: 'blue' } });
  const b1 = await register(B, { endpoint: 'https://b1.example.com', capabilities: ['print', 'sbonly'], properties: { color: 'red' } });
  return { prodPrint, prodIso, A, B, a1, a2, b1 };
}
