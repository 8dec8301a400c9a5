// Anonymous discovery: /services/{id} and /services/{id}/replacements set no cookie, send no
// per-caller header, echo nothing of the request, and give byte-identical bodies to callers
// with disjoint headers (contract, "Deprecation and anonymous replacement discovery").
import { request } from 'node:http';
import t from 'tap';
import { createSandbox, registerProduction, type TestServer, serve } from '../helpers/server.js';

const s = await serve(t);

interface Raw {
  status: number;
  headers: [string, string][];
  body: string;
}

/** A request with exactly these headers (fetch adds its own), read byte for byte. */
function raw(srv: TestServer, path: string, headers: Record<string, string>): Promise<Raw> {
  const u = new URL(srv.url);
  return new Promise((resolve, reject) => {
    const r = request({ host: u.hostname, port: u.port, path, headers, agent: false }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (body += c));
      res.on('end', () => {
        const h: [string, string][] = [];
        for (let i = 0; i < res.rawHeaders.length; i += 2) h.push([res.rawHeaders[i]!.toLowerCase(), res.rawHeaders[i + 1]!]);
        resolve({ status: res.statusCode ?? 0, headers: h, body });
      });
    });
    r.on('error', reject);
    r.end();
  });
}

const old = await registerProduction(s, { endpoint: 'https://old.example.com', capability: 'anon', deprecated: true, sunset_date: '2033-05-05', properties: { k: 'v' } });
const cand = await registerProduction(s, { endpoint: 'https://cand.example.com', capability: 'anon', iot: { deviceClasses: ['d'], protocols: ['p'] } });
if ((await s.admin('POST', `/admin/api/services/${old.id}/replacements`, { serviceId: cand.id })).status !== 201) throw new Error('add candidate failed');
const sb = await createSandbox(s, 'Anon Tester');

const MARK = 'zq7echo';
const callerA: Record<string, string> = {
  authorization: `Bearer ${sb.apiKey}`,
  cookie: `session=${MARK}a; registry_admin=${MARK}`,
  'user-agent': `agent-${MARK}-A`,
  'x-forwarded-for': '203.0.113.7',
  'x-real-ip': '203.0.113.7',
  forwarded: 'for=203.0.113.7;proto=https',
  accept: 'application/json',
  'accept-language': 'de-CH',
  'x-request-id': `req-${MARK}-1`,
  'x-correlation-id': `corr-${MARK}`,
  traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01',
  referer: `https://${MARK}.example.org/page`,
  origin: `https://${MARK}.example.org`,
};
const callerB: Record<string, string> = {
  authorization: 'Bearer x_sb_NotARealKeyButShapedLikeOne0123456789',
  cookie: 'other=1',
  'user-agent': 'curl/8.0',
  'x-forwarded-for': '198.51.100.22, 10.0.0.1',
  accept: 'text/html,application/xhtml+xml',
  'if-modified-since': 'Sat, 01 Jan 2000 00:00:00 GMT',
};
const PER_CALLER = /^(set-cookie|x-request-id|request-id|x-correlation-id|x-trace-id|traceparent|tracestate|x-amzn-trace-id|cf-ray|x-runtime|server-timing|x-response-time|x-powered-by)$/;
// headers whose values legitimately differ from one call to the next
const VOLATILE = new Set(['date', 'age', 'x-cache']);

const cases: [string, string][] = [
  ['/services/{deprecated id}', `/services/${old.id}`],
  ['/services/{deprecated id}/replacements', `/services/${old.id}/replacements`],
  ['/services/{iot id}', `/services/${cand.id}`],
  ['/services/{iot id}/replacements (empty)', `/services/${cand.id}/replacements`],
];
const paths = cases.map(([, p]) => p);

for (const [name, path] of cases) {
  t.test(name, async (t) => {
    const a = await raw(s, path + `?echo=${MARK}q`, callerA);
    const b = await raw(s, path, callerB);
    const c = await raw(s, path, {});
    t.equal(a.status, 200);
    t.equal(b.status, 200);
    t.equal(c.status, 200);
    t.equal(a.body, b.body, 'byte-identical bodies for disjoint headers');
    t.equal(a.body, c.body, 'and for a caller with no headers at all');
    for (const r of [a, b, c]) {
      t.notOk(r.headers.some(([k]) => k === 'set-cookie'), 'no Set-Cookie');
      const bad = r.headers.filter(([k]) => PER_CALLER.test(k));
      t.same(bad, [], 'no request-id or other per-caller header');
      const vary = r.headers.filter(([k]) => k === 'vary').map(([, v]) => v).join(',');
      t.notMatch(vary, /authorization|cookie|user-agent|accept-language|\*/i, 'does not vary on credentials or caller headers');
      t.notMatch(r.body, MARK, 'nothing of the request in the body');
      t.notMatch(r.body, /203\.0\.113|198\.51\.100|curl|de-CH/, 'no caller address or agent in the body');
      t.notOk(r.headers.some(([, v]) => v.includes(MARK) || v.includes('203.0.113') || v.includes('curl')), 'nothing of the request in the headers');
    }
    const shape = (r: Raw) => r.headers.filter(([k]) => !VOLATILE.has(k)).sort((x, y) => (x[0] < y[0] ? -1 : x[0] > y[0] ? 1 : 0));
    t.same(shape(a), shape(b), 'the same headers, apart from Date/Age/X-Cache');
    t.same(shape(a), shape(c));
  });
}

t.test('404s are anonymous too', async (t) => {
  for (const path of ['/services/nosuch', '/services/nosuch/replacements']) {
    const a = await raw(s, path + `?x=${MARK}`, callerA);
    const b = await raw(s, path, callerB);
    t.equal(a.status, 404);
    t.equal(a.body, b.body, 'identical bodies');
    t.notMatch(a.body, MARK);
    t.notOk(a.headers.some(([k]) => k === 'set-cookie' || PER_CALLER.test(k)));
  }
});

t.test('a valid sandbox key does not count against its limit on these endpoints', async (t) => {
  const poll = async () => ((await (await s.req(`/sandbox/${sb.uuid}/poll`)).json()) as { total: number }).total;
  const before = await poll();
  for (const path of paths) await raw(s, path, callerA);
  t.equal(await poll(), before, 'credentials are ignored, not counted');
});
