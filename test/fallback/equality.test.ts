// One page, one body, one ETag, whichever source answered (contract, "Availability"): two
// servers on one database, A answering from its Redis index, B with no Redis at all (every
// read from PostgreSQL, the fallback). On generated registries (hostile strings, IoT profiles,
// deprecations, critical leases) and generated queries, every page of every search, device
// query, sandbox search, single read and replacement list must come back from B with A's
// status, bytes, Link and ETag; every Consul catalog answer with A's status, body and
// X-Consul-Index (nothing here leaves a capability: no tombstone whose revision could differ).
import t from 'tap';
import fc from 'fast-check';
import { createSandbox, serve, type TestServer } from '../helpers/server.js';
import { serviceBody, token } from '../helpers/arbitraries.js';
import { noFilters } from '../../src/hot/domain/dimensions.js';
import { PRODUCTION } from '../../src/hot/domain/keys.js';
import { all } from '../../src/hot/search/index.js';
import { ADMIN_KEY } from '../helpers/env.js';

// keyed reads count against the sandbox's limit on A (B's fail open): a limit no run reaches
const UNLIMITED = 'free=1000000,pro=1000000,enterprise=1000000';
const a = await serve(t, { env: { RESULT_CACHE_ENTRIES: '0', TIERS: UNLIMITED }, hooks: { sweep: false } });
// port 1: connections refused at once; B never has an index
const b = await serve(t, { on: a, env: { REDIS_URL: 'redis://127.0.0.1:1', REDIS_CLUSTER_NODES: '', RESULT_CACHE_ENTRIES: '0', TIERS: UNLIMITED }, hooks: { sweep: false } });

interface Answer {
  status: number;
  body: string;
  link: string | null;
  etag: string | null;
  headers: string;
}

/** GET, following a canonical redirect (the same on both: it depends on the query alone). */
async function get(s: TestServer, path: string, key?: string): Promise<Answer> {
  const init = key ? { headers: { authorization: `Bearer ${key}` } } : {};
  let r = await s.req(path, init);
  if (r.status === 302) r = await s.req(r.headers.get('location')!, init);
  const keep = ['deprecation', 'sunset', 'cache-control', 'vary', 'content-type'].map((h) => `${h}: ${r.headers.get(h)}`).join('\n');
  return { status: r.status, body: await r.text(), link: r.headers.get('link'), etag: r.headers.get('etag'), headers: keep };
}

/** Every page of `path` on both servers, compared; returns the pages walked. */
async function samePages(path: string, key?: string): Promise<number> {
  let next: string | null = path;
  let pages = 0;
  while (next) {
    const [x, y]: [Answer, Answer] = await Promise.all([get(a, next, key), get(b, next, key)]);
    if (JSON.stringify(x) !== JSON.stringify(y)) throw new Error(`${next}${key ? ' (keyed)' : ''}:\nindex:    ${JSON.stringify(x)}\nfallback: ${JSON.stringify(y)}`);
    pages++;
    next = x.status === 200 ? (/<([^>]+)>; rel="next"/.exec(x.link ?? '')?.[1] ?? null) : null;
  }
  return pages;
}

/** A Consul catalog answer of both servers (X-Consul-Token for a sandbox), compared. */
async function sameConsul(path: string, key?: string): Promise<number> {
  const init = key ? { headers: { 'x-consul-token': key } } : {};
  const [x, y] = await Promise.all([a, b].map(async (s) => {
    const r = await s.req(path, init);
    return { status: r.status, body: await r.text(), index: r.headers.get('x-consul-index'), type: r.headers.get('content-type') };
  }));
  if (JSON.stringify(x) !== JSON.stringify(y)) throw new Error(`${path}${key ? ' (keyed)' : ''}:\nindex:    ${JSON.stringify(x)}\nfallback: ${JSON.stringify(y)}`);
  return 1;
}

const json = (method: string, key: string, body?: unknown): RequestInit => ({ method, headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body) });

t.test('B reads from PostgreSQL: its readiness says so', async (t) => {
  const r = await b.req('/readyz');
  t.equal(r.status, 200, 'ready: reads are served');
  t.match(await r.json(), { status: 'degraded', redis: false, reads: 'postgres', degraded: ['redis'] });
  t.match(await (await a.req('/readyz')).json(), { status: 'ready', reads: 'index', degraded: [] }, 'A answers from its index');
});

t.test('generated registries and queries: the same answers from the index and from PostgreSQL', async (t) => {
  const sb = await createSandbox(a, 'Equality');
  let run = 0;
  let pages = 0;
  await fc.assert(
    fc.asyncProperty(
      fc.array(fc.record({ body: serviceBody, ttl: fc.boolean(), critical: fc.boolean(), sandbox: fc.boolean() }), { minLength: 1, maxLength: 10 }),
      fc.array(fc.record({ caps: fc.uniqueArray(fc.nat(9), { maxLength: 2 }), prop: fc.option(fc.nat(9), { nil: null }), dev: fc.option(fc.nat(9), { nil: null }), proto: fc.option(fc.nat(9), { nil: null }), iotReady: fc.boolean(), healthy: fc.boolean(), limit: fc.integer({ min: 1, max: 4 }), tagged: fc.boolean() }), { minLength: 1, maxLength: 4 }),
      token,
      async (services, queries, extraCap) => {
        const tag = `eq-${++run}`;
        const made: { id: string; body: (typeof services)[number]['body']; sandbox: boolean }[] = [];
        for (const s of services) {
          const body = { ...s.body, capabilities: [tag, ...s.body.capabilities.filter((c) => c !== tag)].slice(0, 32), ...(s.ttl ? { ttl: 86400 } : {}) };
          const r = s.sandbox ? await a.req(`/sandbox/${sb.uuid}/services`, json('POST', sb.apiKey, body)) : await a.admin('POST', '/admin/api/services', body);
          if (r.status !== 201) throw new Error(`register: ${r.status} ${await r.text()}`);
          const svc = (await r.json()) as { id: string; heartbeatToken?: string };
          made.push({ id: svc.id, body, sandbox: s.sandbox });
          if (s.ttl && s.critical) {
            const path = s.sandbox ? `/sandbox/${sb.uuid}/services/${svc.id}/heartbeat` : `/services/${svc.id}/heartbeat`;
            const h = await a.req(path, json('PUT', svc.heartbeatToken!, { status: 'critical' }));
            if (h.status !== 204) throw new Error(`heartbeat: ${h.status}`);
          }
        }
        // a deprecated service of each namespace lists the others as its candidates
        for (const sandbox of [false, true]) {
          const own = made.filter((m) => m.sandbox === sandbox);
          if (own.length < 2) continue;
          for (const c of own.slice(1)) {
            const path = sandbox ? `/sandbox/${sb.uuid}/services/${own[0]!.id}/replacements` : `/admin/api/services/${own[0]!.id}/replacements`;
            const r = await a.req(path, json('POST', sandbox ? sb.apiKey : ADMIN_KEY, { serviceId: c.id }));
            if (r.status !== 201) throw new Error(`replacement: ${r.status} ${await r.text()}`);
          }
        }
        // the values of this run's services, for queries that find something
        const caps = [...new Set(made.flatMap((m) => m.body.capabilities)), extraCap];
        const props = made.flatMap((m) => Object.entries(m.body.properties)).map(([k, v]) => `${k}:${v}`);
        const devs = made.flatMap((m) => m.body.iot?.deviceClasses ?? []);
        const protos = made.flatMap((m) => m.body.iot?.protocols ?? []);
        const pick = <T>(xs: T[], i: number | null): T | null => (i === null || !xs.length ? null : xs[i % xs.length]!);
        for (const q of queries) {
          const p = new URLSearchParams();
          if (q.tagged) p.append('capability', tag);
          for (const i of q.caps) p.append('capability', caps[i % caps.length]!);
          const prop = pick(props, q.prop);
          const dev = pick(devs, q.dev);
          const proto = pick(protos, q.proto);
          if (dev) p.append('deviceClass', dev);
          if (proto) p.append('protocol', proto);
          if (q.healthy) p.append('healthy', 'true');
          p.append('limit', String(q.limit));
          const devices = p.toString();
          if (prop) p.append('property', prop);
          if (q.iotReady) p.append('iotReady', 'true');
          pages += await samePages(`/services?${p}`);
          pages += await samePages(`/services?${p}`, sb.apiKey);
          pages += await samePages(`/sandbox/${sb.uuid}/services?${p}`, sb.apiKey);
          pages += await samePages(`/devices?${devices}`);
          // the whole lists of the discovery protocols (all()), with and without a cut
          const f = { ...noFilters(), capabilities: [...p.getAll('capability')], properties: prop ? [{ key: prop.slice(0, prop.indexOf(':')), value: prop.slice(prop.indexOf(':') + 1) }] : [], deviceClass: dev, protocol: proto, iotReady: q.iotReady, healthy: q.healthy };
          for (const [ns, max] of [[PRODUCTION, 1000], [PRODUCTION, q.limit], [sb.uuid, 1000]] as const) {
            const [x, y] = await Promise.all([all(a.app.index, ns, f, max), all(b.app.index, ns, f, max)]).then((r) => r.map((m) => ({ body: m.body.toString(), digests: Buffer.from(m.digests).toString('hex'), more: m.more })));
            if (JSON.stringify(x) !== JSON.stringify(y)) throw new Error(`all ${JSON.stringify(f)} in ${ns} up to ${max}:\n${JSON.stringify(x)}\n${JSON.stringify(y)}`);
            pages++;
          }
        }
        // the Consul catalog: every capability of the run, each route, with and without filters
        for (const key of [undefined, sb.apiKey]) {
          pages += await sameConsul('/v1/catalog/services', key);
          for (const c of caps) {
            const name = encodeURIComponent(c);
            const tagged = encodeURIComponent(made.find((m) => m.body.capabilities.includes(c)) ? tag : c);
            for (const q of ['', '?passing', `?tag=${tagged}`]) {
              pages += await sameConsul(`/v1/catalog/service/${name}${q}`, key);
              pages += await sameConsul(`/v1/health/service/${name}${q}`, key);
            }
          }
        }
        for (const m of made) {
          if (m.sandbox) {
            pages += await samePages(`/sandbox/${sb.uuid}/services/${m.id}`, sb.apiKey);
          } else {
            pages += await samePages(`/services/${m.id}`);
            const [x, y] = await Promise.all([get(a, `/services/${m.id}/replacements`), get(b, `/services/${m.id}/replacements`)]);
            if (x.body !== y.body || x.etag !== y.etag || x.status !== y.status) throw new Error(`replacements of ${m.id}:\n${JSON.stringify(x)}\n${JSON.stringify(y)}`);
          }
        }
        pages += await samePages('/services?capability=no-such-capability');
        pages += await samePages('/services/NoSuchService0000');
      },
    ),
    { numRuns: 12 },
  );
  t.ok(pages > 100, `${pages} pages compared`);
});
