// Two servers at once, for a lever worth a few per cent (bench/README.md, "Micro-benchmarks"):
// whole bench calls drift by ±10 % within minutes, so one tree's call against another's
// cannot see 2 %. Here each side is a server process of its
// own (a tree's compiled dist/, or the same tree with other environment variables), both
// up at once on the same Redis and PostgreSQL, and wrk loads one heartbeat URL of each in
// 1-second slices, alternated (A then B, then B then A), so drift falls on both sides alike.
// Both sides also get production heartbeats before the slices and every tenth slice, so
// their code sees both routes as in the liveness bench.
//
//   node dist/bench/side-by-side.js --a DIR --b DIR [--slices N] [--route sandbox|production]
//        [--a-env K=V,...] [--b-env K=V,...] [--connections C] [--warmup S]
//
// DIR is a tree root with dist/ built (`git worktree add` the other revision, link its
// node_modules, `npx tsc -p tsconfig.json`). The same DIR twice measures the noise (about
// ±2.5 % over 40 slices). Prints each slice and B's total over A's.
//
// One side (--serve DIR, used by the above): a test server of that tree on a fresh database,
// a sandbox of a tier no bench reaches (its rate limit counted, never a 429) with one leased
// service, and one leased production service, each heartbeaten once (their tokens are then
// known to the thread); prints them as one JSON line and serves until SIGTERM.
import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { numArg as arg, strArg as sarg } from './args.js';
import { heartbeatLoad } from './liveness-load.js';

interface Side {
  url: string;
  sandbox: { path: string; token: string };
  production: { path: string; token: string };
}

type Leased = { id: string; heartbeatToken: string };

/** The helpers of the tree being served (its own build: the tree under test, not this one). */
interface TreeHelpers {
  startTestServer(o: object): Promise<{ url: string; close(): Promise<void>; admin(m: string, p: string, b?: unknown): Promise<Response>; req(p: string, i?: RequestInit): Promise<Response> }>;
  createSandbox(s: unknown, name: string): Promise<{ uuid: string; apiKey: string }>;
  registerProduction(s: unknown, body: Record<string, unknown>): Promise<unknown>;
}

async function serve(dir: string): Promise<void> {
  const h = (await import(pathToFileURL(join(resolve(dir), 'dist/test/helpers/server.js')).href)) as TreeHelpers;
  const s = await h.startTestServer({ hooks: { sweep: false }, env: { TIERS: 'free=60,pro=600,enterprise=6000,bench=999999999', TIER_MAX_SERVICES: 'bench=999999999' } });
  const sb = await h.createSandbox(s, 'Side');
  if ((await s.admin('POST', `/admin/api/sandboxes/${sb.uuid}/tier`, { tier: 'bench' })).status !== 200) throw new Error('tier');
  const r = await s.req(`/sandbox/${sb.uuid}/services`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${sb.apiKey}` }, body: JSON.stringify({ endpoint: 'https://side-sb.example.com', capability: 'bench', ttl: 3600 }) });
  const svc = (await r.json()) as Leased;
  const prod = (await h.registerProduction(s, { endpoint: 'https://side.example.com', capability: 'bench', ttl: 3600 })) as Leased;
  const side: Side = {
    url: s.url,
    sandbox: { path: `/sandbox/${sb.uuid}/services/${svc.id}/heartbeat`, token: svc.heartbeatToken },
    production: { path: `/services/${prod.id}/heartbeat`, token: prod.heartbeatToken },
  };
  for (const b of [side.sandbox, side.production]) {
    const res = await fetch(s.url + b.path, { method: 'PUT', headers: { authorization: `Bearer ${b.token}` } });
    if (res.status !== 204) throw new Error(`first heartbeat: ${res.status}`);
  }
  console.log(JSON.stringify(side));
  process.on('SIGTERM', () => void s.close().then(() => process.exit(0)));
}

/** A side's server process, and its Side once it printed it. */
function start(dir: string, env: string): Promise<{ child: ChildProcess; side: Side }> {
  const extra = Object.fromEntries(env ? env.split(',').map((kv) => kv.split('=', 2) as [string, string]) : []);
  const child = spawn(process.execPath, [process.argv[1]!, '--serve', dir], { env: { ...process.env, ...extra }, stdio: ['ignore', 'pipe', 'inherit'] });
  return new Promise((ok, fail) => {
    child.on('exit', (code) => fail(new Error(`side ${dir} exited (${code})`)));
    createInterface({ input: child.stdout! }).once('line', (l) => ok({ child, side: JSON.parse(l) as Side }));
  });
}

async function compare(): Promise<void> {
  const a = sarg('a', '');
  const b = sarg('b', '');
  if (!a || !b) throw new Error('usage: --a DIR --b DIR (see the head of bench/side-by-side.ts)');
  const slices = arg('slices', 40);
  const route = sarg('route', 'sandbox') as 'sandbox' | 'production';
  const load = heartbeatLoad({ duration: 1, connections: arg('connections', 50), generator: 'wrk', fleet: [] });
  const [A, B] = await Promise.all([start(a, sarg('a-env', '')), start(b, sarg('b-env', ''))]);
  try {
    const go = async (x: Side, r: 'sandbox' | 'production', s: number) => (await load.generate(x.url + x[r].path, x[r].token, 'PUT', s)).rps;
    const warm = arg('warmup', 5);
    for (const x of [A.side, B.side]) await go(x, 'production', Math.ceil(warm / 2));
    for (const x of [A.side, B.side, A.side, B.side]) await go(x, route, warm);
    let ta = 0;
    let tb = 0;
    for (let i = 1; i <= slices; i++) {
      const first = i % 2 === 1; // A first in odd slices, B first in even ones
      const r1 = await go((first ? A : B).side, route, 1);
      const r2 = await go((first ? B : A).side, route, 1);
      const [sa, sb] = first ? [r1, r2] : [r2, r1];
      ta += sa;
      tb += sb;
      console.log(`${i} A ${Math.round(sa)} B ${Math.round(sb)}`);
      if (i % 10 === 0) for (const x of [A.side, B.side]) await go(x, route === 'sandbox' ? 'production' : 'sandbox', 1);
    }
    console.log(`${route} heartbeats, ${slices} slices of 1 s each: A ${Math.round(ta)} B ${Math.round(tb)} requests a second summed; B ÷ A ${(tb / ta).toFixed(4)}`);
  } finally {
    A.child.kill('SIGTERM');
    B.child.kill('SIGTERM');
  }
}

if (process.argv.includes('--serve')) await serve(sarg('serve', ''));
else await compare();
