// /openapi.json: an OpenAPI 3.1 document covering every path and method of the contract,
// with resolvable references and declared path parameters.
import t from 'tap';
import { serve } from '../helpers/server.js';

const s = await serve(t);

type Obj = Record<string, unknown>;

const CONTRACT: Record<string, string[]> = {
  '/services': ['get'],
  '/services/{id}': ['get'],
  '/services/{id}/replacements': ['get'],
  '/devices': ['get'],
  '/sandboxes': ['post'],
  '/sandbox/{uuid}/dashboard': ['get'],
  '/sandbox/{uuid}/poll': ['get'],
  '/openapi.json': ['get'],
  '/livez': ['get'],
  '/readyz': ['get'],
  '/sandbox/{uuid}/services': ['get', 'post'],
  '/sandbox/{uuid}/services/{id}': ['get', 'patch', 'delete'],
  '/sandbox/{uuid}/services/{id}/replacements': ['get', 'post'],
  '/admin/session': ['post', 'delete'],
  '/admin/api/stats': ['get'],
  '/admin/api/sandboxes': ['get'],
  '/admin/api/sandboxes/{uuid}': ['get'],
  '/admin/api/sandboxes/{uuid}/tier': ['post'],
  '/admin/api/services': ['post'],
  '/admin/api/services/{id}': ['patch', 'delete'],
  '/admin/api/services/{id}/replacements': ['post'],
  '/services/{id}/heartbeat': ['put'],
  '/sandbox/{uuid}/services/{id}/heartbeat': ['put'],
  '/sandbox/{uuid}/services/{id}/heartbeat-token': ['post'],
  '/admin/api/services/{id}/heartbeat-token': ['post'],
};

const r = await s.req('/openapi.json');
const text = await r.text();
const doc = JSON.parse(text) as Obj;
const paths = (doc.paths ?? {}) as Record<string, Obj>;

t.test('served as JSON, OpenAPI 3.1', async (t) => {
  t.equal(r.status, 200);
  t.match(r.headers.get('content-type') ?? '', /^application\/json/);
  t.match(doc.openapi, /^3\.1\.\d+$/);
  const info = doc.info as Obj;
  t.type(info?.title, 'string');
  t.type(info?.version, 'string');
  t.match(text, /draft-ietf-httpapi-ratelimit-headers-\d+/, 'names the rate-limit headers draft');
});

t.test('every path and method of the contract', async (t) => {
  for (const [p, methods] of Object.entries(CONTRACT)) {
    t.ok(paths[p], `path ${p}`);
    for (const m of methods) t.ok(paths[p]?.[m], `${m.toUpperCase()} ${p}`);
  }
});

t.test('every operation has responses; every templated segment is a declared path parameter', async (t) => {
  for (const [p, item] of Object.entries(paths)) {
    const common = (item.parameters ?? []) as Obj[];
    for (const m of ['get', 'post', 'patch', 'delete', 'put']) {
      const op = item[m] as Obj | undefined;
      if (!op) continue;
      t.ok(op.responses && Object.keys(op.responses as Obj).length > 0, `${m} ${p} has responses`);
      const params = [...common, ...((op.parameters ?? []) as Obj[])];
      for (const name of [...p.matchAll(/\{([^}]+)\}/g)].map((x) => x[1])) {
        t.ok(params.some((x) => x.in === 'path' && x.name === name && x.required === true), `${m} ${p}: path parameter ${name}`);
      }
    }
  }
});

t.test("every operation declares the shipped proxy's 431 with its error body (issue 41)", async (t) => {
  const proxyError = ((doc.components as Obj).schemas as Obj).ProxyError as Obj;
  t.match(JSON.stringify(proxyError), /"enum":\["HEADERS_TOO_LARGE"\]/, 'ProxyError: the error body, its code HEADERS_TOO_LARGE');
  let n = 0;
  for (const [p, item] of Object.entries(paths)) {
    for (const m of ['get', 'post', 'patch', 'delete', 'put']) {
      const op = item[m] as Obj | undefined;
      if (!op) continue;
      const r431 = (op.responses as Record<string, Obj>)['431'];
      t.same(((r431?.content as Obj | undefined)?.['application/json'] as Obj | undefined)?.schema, { $ref: '#/components/schemas/ProxyError' }, `${m} ${p}: 431`);
      n++;
    }
  }
  t.ok(n > 30, `${n} operations`);
  t.match(String((((paths['/services']!.get as Obj).responses as Obj)['431'] as Obj).description), /never the server[\s\S]*48/, 'says who answers it and the limit');
});

t.test('every $ref resolves inside the document', async (t) => {
  const refs = [...text.matchAll(/"\$ref":"([^"]+)"/g)].map((x) => x[1]!);
  t.ok(refs.length > 0, 'the document uses components');
  for (const ref of new Set(refs)) {
    t.match(ref, /^#\//, `${ref} is local`);
    let cur: unknown = doc;
    for (const part of ref.slice(2).split('/')) cur = (cur as Obj | undefined)?.[part.replace(/~1/g, '/').replace(/~0/g, '~')];
    t.ok(cur, `${ref} resolves`);
  }
});

t.test('the documented search parameters and error schema match the contract', async (t) => {
  const params = (paths['/services']?.get as Obj).parameters as Obj[];
  t.same(params.filter((x) => x.in === 'query').map((x) => x.name).sort(), ['after', 'capability', 'deviceClass', 'healthy', 'iotReady', 'limit', 'property', 'protocol']);
  const dev = (paths['/devices']?.get as Obj).parameters as Obj[];
  t.same(dev.filter((x) => x.in === 'query').map((x) => x.name).sort(), ['after', 'capability', 'deviceClass', 'healthy', 'limit', 'protocol']);
  for (const path of ['/services/{id}/heartbeat', '/sandbox/{uuid}/services/{id}/heartbeat']) {
    const res = (paths[path]?.put as Obj).responses as Obj;
    for (const code of ['204', '400', '401', '503']) t.ok(res[code], `${path} documents ${code}`);
  }
  t.ok(((paths['/sandbox/{uuid}/services/{id}/heartbeat']?.put as Obj).responses as Obj)['429'], 'a sandbox heartbeat can be 429');
  t.ok((((doc.components as Obj).schemas as Obj).Service as Obj).properties && JSON.stringify(((doc.components as Obj).schemas as Obj).Service).includes('"health"'), 'the service documents health');
  t.same(params.filter((x) => x.in === 'header').map((x) => x.name), ['If-None-Match', 'Prefer'], 'conditional reads, which may be held (Prefer: wait)');
  for (const path of ['/services', '/devices', '/sandbox/{uuid}/services']) {
    const res = (paths[path]?.get as Obj).responses as Obj;
    t.ok(res['304'], `${path} documents 304`);
    t.ok(((res['200'] as Obj).headers as Obj).ETag, `${path} documents the ETag of its 200`);
  }
  const err = ((doc.components as Obj).schemas as Obj).Error as Obj;
  t.ok(err, 'an Error schema');
  t.match(JSON.stringify(err), /"code"/);
  t.match(JSON.stringify(err), /"message"/);
});

t.test('metrics are not in the public API; the key format is documented for scanners', async (t) => {
  t.notOk(paths['/metrics'], '/metrics is not on this port');
  const schemes = ((doc.components as Obj).securitySchemes as Record<string, Obj>);
  const pattern = String(schemes.sandboxKey?.['x-key-pattern']);
  t.equal(pattern, '^[a-z0-9]{1,16}_sb_[0-9A-Za-z]{38}$');
  t.match(String(schemes.sandboxKey?.description), /CRC32/);
});

t.test('what a generator needs: unique operationIds, security on every operation, servers, code enum, tier enum, 304s without bodies', async (t) => {
  t.ok(Array.isArray(doc.servers) && (doc.servers as Obj[]).length > 0, 'servers');
  const seen = new Set<string>();
  for (const [p, item] of Object.entries(paths)) {
    for (const m of ['get', 'post', 'patch', 'delete', 'put']) {
      const op = item[m] as Obj | undefined;
      if (!op) continue;
      const id = String(op.operationId ?? '');
      t.ok(id && !seen.has(id), `${m} ${p}: a unique operationId (${id})`);
      seen.add(id);
      t.ok(Array.isArray(op.security), `${m} ${p}: security stated`);
      const res = op.responses as Record<string, Obj>;
      if (res['304']) t.notOk(res['304'].content, `${m} ${p}: 304 has no body schema`);
      if (res['429']) t.ok(((res['429'].headers ?? {}) as Record<string, Obj>)['Retry-After']?.required, `${m} ${p}: 429 requires Retry-After`);
    }
  }
  // public reads need no credentials; keyed and admin ones name their scheme
  t.same((paths['/services/{id}']!.get as Obj).security, []);
  t.same((paths['/sandbox/{uuid}/services/{id}']!.get as Obj).security, [{ sandboxKey: [] }]);
  t.same((paths['/admin/api/stats']!.get as Obj).security, [{ adminKey: [] }, { adminSession: [] }]);
  // hand-written: the registry's codes (src/hot/domain/errors.ts)
  const code = ((((doc.components as Obj).schemas as Obj).Error as Obj).properties as Obj).error as Obj;
  t.same(((code.properties as Obj).code as Obj).enum, ['BAD_REQUEST', 'BAD_QUERY', 'BAD_JSON', 'VALIDATION_FAILED', 'UNAUTHORIZED', 'CSRF_FAILED', 'NOT_FOUND', 'METHOD_NOT_ALLOWED', 'CONFLICT', 'QUOTA_EXCEEDED', 'TOO_MANY_TARGETS', 'PAYLOAD_TOO_LARGE', 'UNSUPPORTED_MEDIA_TYPE', 'URI_TOO_LONG', 'RATE_LIMITED', 'INTERNAL', 'UNAVAILABLE', 'OVERLOADED']);
  const tier = (((((doc.components as Obj).schemas as Obj).TierChange as Obj).properties as Obj).tier as Obj);
  t.same(tier.enum, ['free', 'pro', 'enterprise'], 'the configured tiers (defaults)');
  const after = ((paths['/services']!.get as Obj).parameters as Obj[]).find((x) => x.name === 'after')!;
  t.equal((after.schema as Obj).pattern, '^\\d{1,15}(\\.\\d{1,4})?$', 'the cursor pattern');
  const created = (paths['/sandbox/{uuid}/services']!.post as Obj).responses as Record<string, Obj>;
  t.ok((created['201']!.links as Obj).readService, 'a registration links to its read');
  t.ok(((created['201']!.headers as Obj).Location as Obj).required, 'Location on a 201 is required');
});
