// A JSON body that is not UTF-8 is a 400 BAD_JSON on every route that takes one, and nothing
// is written (contract "Input limits"): decoding it would turn each invalid sequence into
// U+FFFD and store other bytes than the client sent. The same body with the sequence left
// out is accepted and stored exactly as sent. Invalid sequences (stray continuation bytes,
// overlong forms, surrogates, code points past U+10FFFF, truncated sequences) are spliced
// into a property value at any character boundary (fast-check).
import t from 'tap';
import fc from 'fast-check';
import { isError, jsonBody } from '../helpers/checks.js';
import { createSandbox, registerProduction, serve } from '../helpers/server.js';
import { value } from '../helpers/arbitraries.js';
import type { Leased } from '../helpers/svc.js';
import { ADMIN_KEY } from '../helpers/env.js';

const s = await serve(t, { env: { TIERS: 'free=1000000', SANDBOX_CREATE_PER_MINUTE: '1000000' } });
const sb = await createSandbox(s, 'Utf8');
const prod = await registerProduction(s, { endpoint: 'https://utf8.example.com', capability: 'utf8' });

const INVALID = ['80', 'bf', 'c0af', 'c1bf', 'e080af', 'eda080', 'edbfbf', 'f4908080', 'f5808080', 'f8888080', 'fe', 'ff', 'e282', 'f09f98', 'c3'].map((h) => Buffer.from(h, 'hex'));

/** the routes with a JSON body that stores a property value, and the body around `v` (a JSON string literal's bytes) */
const ROUTES: { what: string; method: string; path: string; key: string; body: (v: Buffer) => Buffer; ok: number }[] = [
  { what: 'sandbox register', method: 'POST', path: `/sandbox/${sb.uuid}/services`, key: sb.apiKey, body: (v) => wrap('{"endpoint":"https://u.example.com","capability":"utf8","properties":{"k":', v, '}}'), ok: 201 },
  { what: 'sandbox batch', method: 'POST', path: `/sandbox/${sb.uuid}/services/batch`, key: sb.apiKey, body: (v) => wrap('{"services":[{"endpoint":"https://u.example.com","capability":"utf8","properties":{"k":', v, '}}]}'), ok: 201 },
  { what: 'admin register', method: 'POST', path: '/admin/api/services', key: ADMIN_KEY, body: (v) => wrap('{"endpoint":"https://u.example.com","capability":"utf8","properties":{"k":', v, '}}'), ok: 201 },
  { what: 'admin patch', method: 'PATCH', path: `/admin/api/services/${prod.id}`, key: ADMIN_KEY, body: (v) => wrap('{"properties":{"k":', v, '}}'), ok: 200 },
];

function wrap(pre: string, v: Buffer, post: string): Buffer {
  return Buffer.concat([Buffer.from(pre), v, Buffer.from(post)]);
}

const rows = async () => Number((await s.app.pg.query<{ n: string }>('SELECT count(*) AS n FROM services')).rows[0]!.n);
const send = (r: (typeof ROUTES)[number], body: Buffer) => s.req(r.path, { method: r.method, headers: { 'content-type': 'application/json', authorization: `Bearer ${r.key}` }, body });

t.test('invalid UTF-8 in a body: 400 BAD_JSON, nothing written; without it the value is stored as sent', async (t) => {
  for (const r of ROUTES) {
    const before = await rows();
    await isError(t, await send(r, Buffer.concat([Buffer.from('"a'), Buffer.from('ff', 'hex'), Buffer.from('b"')])), 400, 'BAD_JSON', `${r.what}: 0xFF in a value`);
    t.equal(await rows(), before, `${r.what}: nothing written`);
  }
  const r = await s.req(`/services/${prod.id}`);
  t.same(((await r.json()) as { properties: Record<string, string> }).properties, {}, 'the PATCH changed nothing');
});

t.test('generated: any invalid sequence at any place of any value is refused; the value without it is stored byte for byte', async (t) => {
  await fc.assert(
    fc.asyncProperty(fc.constantFrom(...ROUTES), value, fc.nat(), fc.constantFrom(...INVALID), async (r, v, at, bad) => {
      const chars = [...v];
      const cut = at % (chars.length + 1);
      const lit = JSON.stringify(v); // the value as a JSON string literal, valid UTF-8
      const head = JSON.stringify(chars.slice(0, cut).join('')).slice(0, -1); // '"' + the chars before the cut
      const tail = JSON.stringify(chars.slice(cut).join('')).slice(1); // the chars after it + '"'
      const before = await rows();
      const refused = await send(r, r.body(Buffer.concat([Buffer.from(head), bad, Buffer.from(tail)])));
      const e = (await refused.json()) as { error?: { code: string } };
      if (refused.status !== 400 || e.error?.code !== 'BAD_JSON') throw new Error(`${r.what}: ${refused.status} ${JSON.stringify(e)} for ${bad.toString('hex')} in ${lit}`);
      if ((await rows()) !== before) throw new Error(`${r.what}: a row was written for a body that is not UTF-8`);
      const ok = await send(r, r.body(Buffer.from(lit)));
      const text = await ok.text();
      if (ok.status !== r.ok) throw new Error(`${r.what}: ${ok.status} ${text} for ${lit}`);
      const doc = JSON.parse(text) as { properties?: Record<string, string>; services?: { properties: Record<string, string> }[] };
      const stored = (doc.services ? doc.services[0]! : doc).properties!.k!;
      if (Buffer.compare(Buffer.from(stored), Buffer.from(v)) !== 0) throw new Error(`${r.what}: stored ${JSON.stringify(stored)}, sent ${lit}`);
    }),
    { numRuns: 60 },
  );
  t.pass('every generated body');
});

t.test('a heartbeat body that is not UTF-8: 400 BAD_JSON for the service\'s own token', async (t) => {
  const leased = (await registerProduction(s, { endpoint: 'https://utf8-hb.example.com', capability: 'utf8', ttl: 60 })) as Leased;
  const body = Buffer.concat([Buffer.from('{"status":"pass'), Buffer.from('c0af', 'hex'), Buffer.from('ing"}')]);
  await isError(t, await s.req(`/services/${leased.id}/heartbeat`, { method: 'PUT', headers: { 'content-type': 'application/json', authorization: `Bearer ${leased.heartbeatToken}` }, body }), 400, 'BAD_JSON');
  t.equal((await s.req(`/services/${leased.id}/heartbeat`, jsonBody('PUT', { status: 'passing' }, leased.heartbeatToken))).status, 204, 'the same body in UTF-8: 204');
});
