// Authentication of sandbox routes (issue 3, contract "Sandbox API key"): a missing,
// malformed or wrong key is a 401 with the error body on every route, and nothing is written
// or counted against the sandbox it was aimed at.
import t from 'tap';
import { ids, isError, keyed } from '../helpers/checks.js';
import { sandboxFixtures, serveSandboxes } from '../helpers/sandboxes.js';

const sandboxes = await serveSandboxes(t);
const { s, count, total } = sandboxes;
const { A, B, a1, a2 } = await sandboxFixtures(sandboxes);

// ---- authentication of sandbox routes ----
t.test('sandbox routes: missing, malformed or wrong key -> 401 JSON and nothing written', async (t) => {
  const base = `/sandbox/${A.uuid}/services`;
  const before = await count(A.uuid);
  const auths: [string, Record<string, string>][] = [
    ['no key', {}],
    ['Bearer without a key', { authorization: 'Bearer' }],
    ['malformed', { authorization: 'Bearer not-a-key' }],
    ['x_sb_ shape', { authorization: 'Bearer x_sb_0123456789abcdefghijABCDEFGHIJ' }],
    ['right prefix, wrong random', { authorization: `Bearer ${A.apiKey.slice(0, -3)}XYZ` }],
    ['key without Bearer', { authorization: A.apiKey }],
    ['Basic', { authorization: 'Basic ' + Buffer.from('u:' + A.apiKey).toString('base64') }],
    ['X-API-Key header', { 'x-api-key': A.apiKey }],
    ['cookie', { cookie: `apiKey=${A.apiKey}` }],
    ["another sandbox's key", { authorization: `Bearer ${B.apiKey}` }],
  ];
  const body = JSON.stringify({ endpoint: 'https://intruder.example.com', capability: 'intrude' });
  for (const [what, h] of auths) {
    const hdrs = { 'content-type': 'application/json', ...h };
    await isError(t, await s.req(base, { method: 'POST', headers: hdrs, body }), 401, 'UNAUTHORIZED', `${what}: POST`);
    await isError(t, await s.req(base, { headers: h }), 401, 'UNAUTHORIZED', `${what}: GET list`);
    await isError(t, await s.req(`${base}/${a1.id}`, { headers: h }), 401, 'UNAUTHORIZED', `${what}: GET one`);
    await isError(t, await s.req(`${base}/${a1.id}`, { method: 'PATCH', headers: hdrs, body: '{"deprecated":true}' }), 401, 'UNAUTHORIZED', `${what}: PATCH`);
    await isError(t, await s.req(`${base}/${a1.id}`, { method: 'DELETE', headers: h }), 401, 'UNAUTHORIZED', `${what}: DELETE`);
    await isError(t, await s.req(`${base}/${a1.id}/replacements`, { headers: h }), 401, 'UNAUTHORIZED', `${what}: GET replacements`);
    await isError(t, await s.req(`${base}/${a1.id}/replacements`, { method: 'POST', headers: hdrs, body: JSON.stringify({ serviceId: a2.id }) }), 401, 'UNAUTHORIZED', `${what}: POST replacements`);
  }
  const q = await s.req(`${base}?apiKey=${A.apiKey}`);
  await isError(t, q, 401, 'UNAUTHORIZED', 'key in the query string');
  t.equal(await count(A.uuid), before, 'no service written');
  const a1now = (await (await s.req(`${base}/${a1.id}`, keyed(A.apiKey))).json()) as Record<string, unknown>;
  t.equal(a1now.deprecated, false, 'nothing patched');
  t.same(await ids(await s.req(`${base}/${a1.id}/replacements`, keyed(A.apiKey))), [], 'no candidate added');
  await isError(t, await s.req('/sandbox/00000000-0000-4000-8000-000000000000/services', keyed(A.apiKey)), 401, 'UNAUTHORIZED', 'unknown uuid');
  await isError(t, await s.req('/sandbox/not-a-uuid/services', keyed(A.apiKey)), 401, 'UNAUTHORIZED', 'malformed uuid');
  // an invalid body from the wrong key: still 401, not 400 (the key is checked first)
  await isError(t, await s.req(base, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${B.apiKey}` }, body: '{' }), 401, 'UNAUTHORIZED', 'bad body, wrong key');
});

t.test('a 401 is not counted against the sandbox it was aimed at', async (t) => {
  const before = await total(A);
  await (await s.req(`/sandbox/${A.uuid}/services`, keyed(B.apiKey))).body?.cancel();
  await (await s.req(`/sandbox/${A.uuid}/services`)).body?.cancel();
  t.equal(await total(A), before);
});
