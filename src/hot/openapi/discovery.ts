// The OpenAPI part of "Discovery for other tools" (document.ts puts it in): GET
// /discovery/prometheus (Prometheus's HTTP service discovery) and the Consul-compatible
// catalog under /v1/, with their schemas. The DNS server is not HTTP: docs/operations.md.
import { openApiParameters } from '../domain/dimensions.js';
import { empty, errors, headers as H, heldNote, ok, params as P, ref, type Obj } from './parts.js';

const header = (description: string, schema: Obj, required: boolean) => ({ description, required, schema });
const stringMap = { type: 'object', additionalProperties: { type: 'string' } };
const strings = { type: 'array', items: { type: 'string' } };
const port = { type: 'integer', minimum: 1, maximum: 65535 };
const rev = { type: 'integer', minimum: 1, description: "the revision of the instance's state" };

const LABELS = ['service_id', 'namespace', 'endpoint', 'scheme', 'path', 'health', 'deprecated', 'capabilities', 'device_classes', 'protocols'].map((l) => '__meta_registry_' + l);

/** The schemas of the discovery routes' bodies. */
export const discoverySchemas: Record<string, Obj> = {
  TargetGroup: {
    type: 'object',
    additionalProperties: false,
    required: ['targets', 'labels'],
    description: 'one service as a Prometheus HTTP SD target group',
    properties: {
      targets: { type: 'array', minItems: 1, maxItems: 1, items: { type: 'string', description: '`<host>:<port>` of the endpoint (the scheme\'s default port when none; IPv6 in brackets)' } },
      labels: {
        type: 'object',
        required: LABELS,
        properties: Object.fromEntries(LABELS.map((l) => [l, { type: 'string' }])),
        description: '`__meta_registry_*`: service_id, namespace, endpoint, scheme, path, health, deprecated (`true`/`false`), capabilities, device_classes and protocols (each `,a,b,`, as Prometheus writes tags), and `property_<key>` per property (`<key>` with every character outside `[a-zA-Z0-9_]` replaced by `_`)',
        propertyNames: { pattern: '^__meta_registry_[a-zA-Z0-9_]+$' },
        additionalProperties: { type: 'string' },
      },
    },
  },
  ConsulCatalogEntry: {
    type: 'object',
    required: ['ID', 'Node', 'Address', 'Datacenter', 'ServiceID', 'ServiceName', 'ServiceTags', 'ServiceAddress', 'ServicePort', 'ServiceMeta', 'CreateIndex', 'ModifyIndex'],
    properties: {
      ID: { type: 'string', description: 'the service id' },
      Node: { const: 'registry' },
      Address: { type: 'string' },
      Datacenter: { type: 'string' },
      ServiceID: { type: 'string' },
      ServiceName: { type: 'string', description: 'the capability' },
      ServiceTags: { ...strings, description: 'its capabilities, then `key=value` for each property in key order' },
      ServiceAddress: { type: 'string', description: "the endpoint's host (IPv6 without brackets)" },
      ServicePort: port,
      ServiceMeta: stringMap,
      CreateIndex: rev,
      ModifyIndex: rev,
    },
  },
  ConsulHealthEntry: {
    type: 'object',
    required: ['Node', 'Service', 'Checks'],
    properties: {
      Node: { type: 'object', required: ['Node', 'Address', 'Datacenter'], properties: { Node: { const: 'registry' }, Address: { type: 'string' }, Datacenter: { type: 'string' } } },
      Service: {
        type: 'object',
        required: ['ID', 'Service', 'Tags', 'Address', 'Port', 'Meta'],
        properties: { ID: { type: 'string' }, Service: { type: 'string' }, Tags: strings, Address: { type: 'string' }, Port: port, Meta: stringMap },
      },
      Checks: {
        type: 'array',
        minItems: 1,
        maxItems: 1,
        items: {
          type: 'object',
          required: ['CheckID', 'Name', 'Status'],
          properties: { CheckID: { type: 'string', pattern: '^service:' }, Name: { const: 'lease' }, Status: { enum: ['passing', 'critical'], description: '`unknown` (no lease) reads `passing`' } },
        },
      },
    },
  },
  ConsulAgentSelf: {
    type: 'object',
    required: ['Config', 'Member'],
    properties: {
      Config: { type: 'object', required: ['Datacenter', 'NodeName'], properties: { Datacenter: { type: 'string' }, NodeName: { const: 'registry' } } },
      Member: { type: 'object' },
    },
  },
};

const consul = {
  'X-Consul-KnownLeader': header('always `true`: a single node', { const: 'true' }, true),
  'X-Consul-LastContact': header('always `0`', { const: '0' }, true),
};
const consulIndex = (required: boolean) => ({
  'X-Consul-Index': header(
    'a positive integer that never decreases for a query while PostgreSQL\'s data stands and grows whenever the answer changes (writes to other capabilities or namespaces leave it alone); `1` for answers the request alone decides',
    { type: 'string', pattern: '^[1-9]\\d*$' },
    required,
  ),
});

const consulParams = [
  { name: 'dc', in: 'query', required: false, description: 'the datacenter: CONSUL_DATACENTER (default `dc1`); another → 404', schema: { type: 'string' } },
  { name: 'index', in: 'query', required: false, description: "Consul's blocking query: the X-Consul-Index the client holds; the request is held until the answer's index exceeds it or `wait` passes, then answered 200 with the answer as it stands (counted against HELD_PER_ADDRESS and HELD_MAX: 429 beyond)", schema: { type: 'string', pattern: '^\\d{1,20}$' } },
  { name: 'wait', in: 'query', required: false, description: "with `index`: the longest hold, as Consul writes it (`10s`, `5m`; default 5 min, at most 10 min)", schema: { type: 'string' } },
];
const filterParams = [
  { name: 'tag', in: 'query', required: false, description: 'repeatable: instances that have every tag', schema: { type: 'array', items: { type: 'string' } }, style: 'form', explode: true },
  { name: 'passing', in: 'query', required: false, description: 'present with any value but `false` / `0`: passing instances only', schema: { type: 'string' } },
];
const nameParam = { name: 'name', in: 'path', required: true, description: 'the Consul service name: a capability (any case)', schema: { type: 'string' } };
const consulSecurity = [{}, { sandboxKey: [] }, { consulToken: [] }];

function consulOp(operationId: string, summary: string, body: Obj, withName: boolean, filters: boolean): Obj {
  return {
    operationId,
    security: consulSecurity,
    tags: ['discovery'],
    summary,
    description:
      'Consul-compatible and read-only. A Consul service is a capability; its instances are the services with that capability. A valid sandbox key (Bearer or X-Consul-Token) reads that sandbox, counted against its limit; anything else reads production.',
    parameters: [...(withName ? [nameParam] : []), ...(filters ? filterParams : []), ...consulParams],
    responses: {
      200: ok('the answer', body, { ...H.cacheControl('no-store'), ...consul, ...consulIndex(true), ...H.rate(false) }),
      ...errors([400, 404], { rate: true, extra: { ...consul, ...consulIndex(true) }, text: { 404: 'another datacenter than CONSUL_DATACENTER: NOT_FOUND' } }),
      ...errors([414]),
      ...errors([422], { rate: true, extra: consul, text: { 422: 'more instances than DISCOVERY_MAX_TARGETS: TOO_MANY_TARGETS' } }),
      ...errors([429, 503], { rate: true, extra: consul }),
    },
  };
}

const constantOp = (operationId: string, summary: string, body: Obj): Obj => ({
  operationId,
  security: [{}],
  tags: ['discovery'],
  summary,
  responses: { 200: ok('the answer', body, { ...H.cacheControl('no-store'), ...consul, ...consulIndex(true) }), ...errors([414]) },
});

/** The discovery routes' paths. */
export function discoveryPaths(): Record<string, Obj> {
  const sdCommon = { ...H.cacheControl(), ...H.varyAuthorization, ...H.rate(false) };
  return {
    '/discovery/prometheus': {
      get: {
        operationId: 'prometheusTargets',
        security: [{}, { sandboxKey: [] }],
        tags: ['discovery'],
        summary: 'Prometheus HTTP service discovery: every matching service as a target group',
        description:
          'The search filters of /services in any order (no redirect), no paging: the whole list, one target group per service ordered by id. More than DISCOVERY_MAX_TARGETS (default 10000) matches → 422 TOO_MANY_TARGETS naming both numbers. ' +
          'Without a key (or with one that is not a valid sandbox key) production; with a valid sandbox key that sandbox, counted against its limit. Every answer varies on Authorization; one to a request with Authorization is private. ' +
          'Every 200 carries a strong ETag; a matching If-None-Match gets 304.' + heldNote,
        parameters: [...openApiParameters('services').filter((p) => p.name !== 'limit' && p.name !== 'after'), P.ifNoneMatch, P.prefer],
        responses: {
          200: ok('the target groups (`[]` when none); to a held request, the changed list', { type: 'array', items: ref('TargetGroup') }, { ...sdCommon, ...H.etag, ...H.preferenceApplied }),
          304: empty('not modified (If-None-Match; to a held request: when its wait ended); no body', { ...sdCommon, ...H.etag, ...H.preferenceApplied }),
          ...errors([400, 422, 429, 503], { rate: true, extra: H.varyAuthorization, text: { 422: 'more matches than DISCOVERY_MAX_TARGETS: TOO_MANY_TARGETS' } }),
          ...errors([414]),
        },
      },
    },
    '/v1/agent/self': { get: constantOp('consulAgentSelf', "Consul's agent/self: the datacenter and the node name", ref('ConsulAgentSelf')) },
    '/v1/catalog/datacenters': { get: constantOp('consulDatacenters', 'Consul datacenters: the one, CONSUL_DATACENTER', strings) },
    '/v1/catalog/services': {
      get: consulOp('consulServices', 'Consul services: every capability with the tags of its instances (de-duplicated, sorted)', { type: 'object', additionalProperties: strings }, false, false),
    },
    '/v1/catalog/service/{name}': { get: consulOp('consulCatalogService', 'Consul catalog entries of one capability, ordered by id', { type: 'array', items: ref('ConsulCatalogEntry') }, true, true) },
    '/v1/health/service/{name}': { get: consulOp('consulHealthService', 'Consul health entries of one capability (node, service, its lease check), ordered by id', { type: 'array', items: ref('ConsulHealthEntry') }, true, true) },
  };
}

/** The security scheme of X-Consul-Token. */
export const consulTokenScheme = {
  type: 'apiKey',
  in: 'header',
  name: 'X-Consul-Token',
  description: 'on the /v1/ routes, a sandbox key as Consul clients send their token (Authorization: Bearer works too)',
};
