// The Consul-compatible catalog (read-only) under /v1/ (contract, "Consul-compatible
// catalog"): agent/self, catalog/datacenters, catalog/services, catalog/service/{name},
// health/service/{name}; any other path under /v1/ is a 404, another method a 405, each
// with the error body. Every answer carries X-Consul-KnownLeader and X-Consul-LastContact;
// every 200 (and every error the request alone decides: 400, 404, 405) its X-Consul-Index.
// `?index=&wait=` (a blocking query) is held until the index exceeds `index` (blocking.ts).
import type { TemplatedApp } from 'uWebSockets.js';
import { ApiError } from '../../domain/errors.js';
import { outageError } from '../../domain/outage.js';
import { JSON_TYPE, type Reply } from '../../http/reply.js';
import { allowedMethods, route, type Headers, type Req, type RouteOptions } from '../../http/route.js';
import { chooseNamespace, type DiscoveryContext } from '../context.js';
import { countConsulAnswer } from '../metrics.js';
import { capabilityName, catalogAnswer, type CatalogKind, type CatalogQuery, type ConsulAnswer } from './answers.js';
import { holdBlocking, holdUnchanging } from './blocking.js';
import { NODE } from './model.js';
import { consulQuery } from './query.js';

const TOKEN = 'x-consul-token';

/** On every answer of /v1/ (errors included): a single node is always its own leader. */
const CONSUL: Headers = [
  ['X-Consul-KnownLeader', 'true'],
  ['X-Consul-LastContact', '0'],
  ['Vary', 'Authorization, X-Consul-Token'],
  ['Cache-Control', 'no-store'],
];
/** the index of an answer fixed by the request alone (a constant answer, a refusal of its form) */
const FIXED: Headers = [...CONSUL, ['X-Consul-Index', '1']];
/** the answer to a name no service can have */
const NO_SERVICE: ConsulAnswer = { body: Buffer.from('[]'), index: '1' };

function json(reply: Reply, body: string | Buffer, index: string): void {
  reply.send(200, [['Content-Type', JSON_TYPE], ...CONSUL, ['X-Consul-Index', index]], body);
}

export function registerConsul(uws: TemplatedApp, app: DiscoveryContext, o: RouteOptions): void {
  const opts: RouteOptions = { ...o, remote: false, anonymous: true, headers: [TOKEN], blocking: true };
  const dc = app.cfg.consulDatacenter;
  // errors keep the Consul fields (the route's own 429, 422, 503 as any other)
  const withConsul = (fn: (req: Req, reply: Reply) => Promise<void> | void) => async (req: Req, reply: Reply) => {
    try {
      await fn(req, reply);
    } catch (err) {
      const e = err instanceof ApiError ? err : (outageError(err) ?? err);
      if (e instanceof ApiError) for (const [k, v] of e.status < 422 ? FIXED : CONSUL) e.headers[k] = v;
      throw e;
    }
  };

  route(uws, 'get', '/v1/agent/self', withConsul((_req, reply) => {
    countConsulAnswer('agent/self');
    const body = {
      Config: { Datacenter: dc, NodeName: NODE, NodeID: '', Server: false, Version: app.version },
      Member: { Name: NODE, Addr: app.cfg.host, Port: app.cfg.port, Tags: { dc, role: 'node' }, Status: 1 },
    };
    json(reply, JSON.stringify(body), '1');
  }), opts);

  route(uws, 'get', '/v1/catalog/datacenters', withConsul((_req, reply) => {
    countConsulAnswer('catalog/datacenters');
    json(reply, JSON.stringify([dc]), '1');
  }), opts);

  const catalog = (kind: CatalogKind, label: string) =>
    withConsul(async (req, reply) => {
      const chosen = await chooseNamespace(app, req.authorization, req.extra?.[TOKEN] ?? '');
      const parsed = consulQuery(req.query);
      if (!parsed.ok) throw new ApiError('QUERY_INVALID', [parsed.message], Object.fromEntries(chosen.rate));
      const q = parsed.q;
      if (q.dc !== null && q.dc !== dc) throw new ApiError('DATACENTER_UNKNOWN', [q.dc, dc], Object.fromEntries(chosen.rate));
      let name = '';
      if (kind !== 'services') {
        let raw: string;
        try {
          raw = decodeURIComponent(req.params[0]!);
        } catch {
          throw new ApiError('PATH_UNDECODABLE', [], Object.fromEntries(chosen.rate));
        }
        const c = capabilityName(raw);
        countConsulAnswer(label);
        // a name no service can have: always the same empty answer (a blocking query waits it out)
        if (c === null) {
          if (holdUnchanging(app, reply, req, [...CONSUL, ...chosen.rate], chosen.ns, q, NO_SERVICE)) return;
          return reply.send(200, [['Content-Type', JSON_TYPE], ...FIXED, ...chosen.rate], NO_SERVICE.body);
        }
        name = c;
      } else countConsulAnswer(label);
      const cq: CatalogQuery = { kind, capability: name, tags: q.tags, passing: q.passing };
      const a = await catalogAnswer(app, chosen.ns, cq, reply);
      if (holdBlocking(app, reply, req, [...CONSUL, ...chosen.rate], chosen.ns, cq, q, a)) return;
      reply.send(200, [['Content-Type', JSON_TYPE], ...CONSUL, ['X-Consul-Index', a.index], ...chosen.rate], a.body);
    });

  route(uws, 'get', '/v1/catalog/services', catalog('services', 'catalog/services'), opts);
  route(uws, 'get', '/v1/catalog/service/:name', catalog('service', 'catalog/service'), opts);
  route(uws, 'get', '/v1/health/service/:name', catalog('health', 'health/service'), opts);

  // the rest of /v1/: 405 for another method of a route above, 404 otherwise (Consul's headers on both)
  route(uws, 'any', '/v1/*', (req, reply) => {
    const allow = allowedMethods(uws, req.path);
    if (allow.length) return reply.error('METHOD_NOT_ALLOWED', [req.method, allow.join(', ')], [...FIXED, ['Allow', allow.join(', ')]]);
    reply.error('ROUTE_NOT_FOUND', [req.method, req.path], FIXED);
  }, opts);
}
