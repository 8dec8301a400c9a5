// Endpoint normalisation over HTTP (contract, "Service"): a registration or PATCH stores and
// returns the WHATWG URL serialisation of `endpoint`, every read returns the same, and user
// info or control characters are refused with 400 VALIDATION_FAILED and nothing written.
// Expectations are written out by hand.
import t from 'tap';
import fc from 'fast-check';
import { createSandbox, serve } from '../helpers/server.js';
import { isError, jsonBody } from '../helpers/checks.js';
import type { Svc } from '../helpers/svc.js';
import { ADMIN_KEY } from '../helpers/env.js';

const s = await serve(t);

t.test('endpoints round trip in their WHATWG serialisation', async (t) => {
  const cases: [string, string][] = [
    ['HTTpS://ꇓD', 'https://xn--d-7o1e/'],
    ['HTTPS://API.Example.COM:443/V1?X=Y', 'https://api.example.com/V1?X=Y'],
    ['http://bücher.example:80', 'http://xn--bcher-kva.example/'],
    ['http://a.example:8080/x/../y', 'http://a.example:8080/y'],
  ];
  for (const [from, want] of cases) {
    const r = await s.admin('POST', '/admin/api/services', { endpoint: from, capability: 'norm' });
    t.equal(r.status, 201, `${from}: created`);
    const svc = (await r.json()) as Svc;
    t.equal(svc.endpoint, want, `${from}: the 201 carries ${want}`);
    const got = (await (await s.req(`/services/${svc.id}`)).json()) as Svc;
    t.equal(got.endpoint, want, `${from}: GET /services/{id}`);
    const list = (await (await s.req('/services?capability=norm')).json()) as Svc[];
    t.equal(list.find((x) => x.id === svc.id)?.endpoint, want, `${from}: search`);
  }
  const svc = (await (await s.admin('POST', '/admin/api/services', { endpoint: 'https://p.example/', capability: 'norm2' })).json()) as Svc;
  const p = await s.admin('PATCH', `/admin/api/services/${svc.id}`, { endpoint: 'HTTP://P.Example:80/New' });
  t.equal(p.status, 200);
  t.equal(((await p.json()) as Svc).endpoint, 'http://p.example/New', 'PATCH stores the serialisation');

  const sb = await createSandbox(s);
  const r = await s.req(`/sandbox/${sb.uuid}/services`, jsonBody('POST', { endpoint: 'HTTPS://SB.Example:443', capability: 'x' }, sb.apiKey));
  t.equal(((await r.json()) as Svc).endpoint, 'https://sb.example/', 'sandbox registrations too');
});

t.test('user info and control characters: 400 VALIDATION_FAILED, nothing written', async (t) => {
  const bad = ['http://user:pass@h.example/', 'https://token@h.example/', 'http://@h.example/', 'http://h.example/\u0001', 'http://h.example/a\u0000', 'http://h.example/\u007f', 'http://h.\texample/'];
  for (const e of bad) {
    const msg = await isError(t, await s.admin('POST', '/admin/api/services', { endpoint: e, capability: 'refused' }), 400, 'VALIDATION_FAILED', JSON.stringify(e));
    t.match(msg.message, /endpoint/, 'the message names the field');
  }
  const svc = (await (await s.admin('POST', '/admin/api/services', { endpoint: 'https://keep.example/', capability: 'kept' })).json()) as Svc;
  await isError(t, await s.admin('PATCH', `/admin/api/services/${svc.id}`, { endpoint: 'https://u:p@keep.example/' }), 400, 'VALIDATION_FAILED', 'PATCH');
  t.same(await (await s.req('/services?capability=refused')).json(), [], 'nothing registered');
  t.equal(((await (await s.req(`/services/${svc.id}`)).json()) as Svc).endpoint, 'https://keep.example/', 'the PATCH changed nothing');
});

t.test('hostile endpoints: 201 with a fixed point or 400, never 5xx', async (t) => {
  const endpoint = fc.oneof(
    fc.webUrl({ withFragments: true, withQueryParameters: true, authoritySettings: { withUserInfo: true, withPort: true, withIPv4: true, withIPv6: true } }),
    fc.string({ unit: 'binary', maxLength: 60 }).map((x) => 'http://' + x),
    fc.string({ unit: 'grapheme', maxLength: 30 }).map((x) => 'HTTPS://' + x),
    fc.constantFrom('http://%41.example/', 'http://xn--.example/', 'http://a..b/', 'http://1.2.3.4.5/', 'http://[::ffff:1.2.3.4]/', 'http://h.example/' + 'ä'.repeat(700)),
  );
  let created = 0;
  await fc.assert(
    fc.asyncProperty(endpoint, async (e) => {
      const r = await s.req('/admin/api/services', { method: 'POST', headers: { authorization: `Bearer ${ADMIN_KEY}`, 'content-type': 'application/json' }, body: JSON.stringify({ endpoint: e, capability: 'hostile' }) });
      const text = await r.text();
      if (r.status === 400) return JSON.parse(text).error.code === 'VALIDATION_FAILED';
      if (r.status !== 201) throw new Error(`${JSON.stringify(e)}: ${r.status} ${text}`);
      created++;
      const svc = JSON.parse(text) as Svc;
      const href = svc.endpoint as string;
      // a fixed point: registering the answer again gives the same answer
      const again = await s.req('/admin/api/services', { method: 'POST', headers: { authorization: `Bearer ${ADMIN_KEY}`, 'content-type': 'application/json' }, body: JSON.stringify({ endpoint: href, capability: 'hostile' }) });
      const a = (await again.json()) as Svc;
      if (again.status !== 201 || a.endpoint !== href) throw new Error(`${JSON.stringify(e)} -> ${href} -> ${again.status} ${a.endpoint}`);
      const u = new URL(href);
      return u.username === '' && u.password === '' && /^https?:$/.test(u.protocol);
    }),
    { numRuns: 150 },
  );
  t.ok(created > 10, `some hostile endpoints were accepted (${created})`);
});
