// GET /services: filters, paging, canonical-query redirects and the caching headers a
// shared cache relies on (contract, "Search" and "Canonical query strings").
import { connect } from 'node:net';
import t from 'tap';
import { allPages, ids, isError, nextLink, rawGet } from '../helpers/checks.js';
import { createSandbox, registerProduction, serve } from '../helpers/server.js';

const s = await serve(t);

const A = await registerProduction(s, {
  endpoint: 'https://a.example.com',
  capabilities: ['print', 'scan'],
  properties: { color: 'Red', url: 'http://x:1/p' },
  iot: { deviceClasses: ['sensor', 'camera'], protocols: ['mqtt', 'coap'] },
});
const B = await registerProduction(s, { endpoint: 'https://b.example.com', capabilities: ['print'], properties: { color: 'red' } });
const C = await registerProduction(s, {
  endpoint: 'https://c.example.com',
  capability: 'Scan',
  properties: { Color: 'Red', size: 'A4' },
  iot: { deviceClasses: ['sensor'], protocols: ['http'] },
});
const D = await registerProduction(s, { endpoint: 'https://d.example.com', capabilities: ['print', 'fax'] });
const bulk: string[] = [];
for (let i = 0; i < 25; i++) bulk.push((await registerProduction(s, { endpoint: `https://bulk${i}.example.com`, capability: 'bulk' })).id);

const search = async (q: string, init?: RequestInit) => {
  const r = await s.req('/services' + q, init);
  if (r.status !== 200) throw new Error(`${q}: ${r.status} ${await r.text()}`);
  return ids(r);
};

t.test('search by capability; repeated capabilities must all match', async (t) => {
  t.same(await search('?capability=print'), [A.id, B.id, D.id], 'in registration order');
  t.same(await search('?capability=scan'), [A.id, C.id], 'shorthand capability is lower-cased on input');
  t.same(await search('?capability=print&capability=scan'), [A.id]);
  t.same(await search('?capability=fax&capability=print'), [D.id]);
  t.same(await search('?capability=fax&capability=scan'), []);
  t.same(await search('?capability=nothing'), []);
});

t.test('search by property: case-sensitive value, key lower-cased, split at the first colon', async (t) => {
  t.same(await search('?property=color:Red'), [A.id, C.id]);
  t.same(await search('?property=color:red'), [B.id], 'value case matters');
  t.same(await search('?property=url:http:%2F%2Fx:1%2Fp'), [A.id], 'value may contain ":"');
  t.same(await search('?property=color:Red&property=size:A4'), [C.id], 'repeated: all must match');
  t.same(await search('?capability=scan&property=color:Red'), [A.id, C.id]);
  t.same(await search('?capability=print&property=color:Red'), [A.id], 'excludes B (color:red)');
  t.same(await search('?property=size:a4'), []);
});

t.test('search by IoT profile', async (t) => {
  t.same(await search('?deviceClass=sensor'), [A.id, C.id]);
  t.same(await search('?deviceClass=camera'), [A.id]);
  t.same(await search('?protocol=mqtt'), [A.id]);
  t.same(await search('?protocol=http'), [C.id]);
  t.same(await search('?deviceClass=camera&protocol=coap'), [A.id]);
  t.same(await search('?deviceClass=camera&protocol=http'), [], 'both must match the same profile');
  t.same(await search('?iotReady=true'), [A.id, C.id]);
  t.same(await search('?capability=print&iotReady=true'), [A.id]);
  t.same(await search('?capability=scan&deviceClass=sensor&iotReady=true&property=size:A4&protocol=http'), [C.id], 'every filter at once');
  const all = await search('?limit=1000');
  t.equal(all.length, 29, 'without iotReady there is no IoT restriction');
});

t.test('service objects in the body have every contract field', async (t) => {
  const r = await s.req('/services?capability=scan');
  const body = (await r.json()) as Record<string, unknown>[];
  t.same(body[0], {
    id: A.id,
    endpoint: 'https://a.example.com/',
    capabilities: ['print', 'scan'],
    properties: { color: 'Red', url: 'http://x:1/p' },
    deprecated: false,
    locked: false,
    sunset_date: null,
    iotReady: true,
    iot: { deviceClasses: ['sensor', 'camera'], protocols: ['mqtt', 'coap'] },
    health: { status: 'unknown', ttl: null },
  });
  t.equal(body[1]!.iotReady, true);
  const b = (await (await s.req('/services?capability=fax')).json()) as Record<string, unknown>[];
  t.equal(b[0]!.iotReady, false);
  t.equal(b[0]!.iot, null);
  t.match(r.headers.get('content-type'), /^application\/json/);
});

t.test('paging: Link rel=next covers every result exactly once, in a stable order', async (t) => {
  const first = await s.req('/services?capability=bulk&limit=10');
  t.equal(first.status, 200);
  const link = nextLink(first);
  t.ok(link, 'a next link');
  t.match(link, /^\/services\?after=[^&]+&capability=bulk&limit=10$/, 'canonical URL with after=');
  const { pages, links } = await allPages(s, '/services?capability=bulk&limit=10');
  t.same(pages.map((p) => p.length), [10, 10, 5]);
  t.same(pages.flat(), bulk, 'all results once, registration order');
  t.equal(links.length, 2, 'no next link on the last page');
  for (const l of links) {
    const r = await s.req(l);
    t.equal(r.status, 200, `${l} is canonical (no redirect)`);
  }
  const again = await allPages(s, '/services?capability=bulk&limit=10');
  t.same(again.pages, pages, 'the same pages again');
  const exact = await allPages(s, '/services?capability=bulk&limit=25');
  t.same(exact.pages.map((p) => p.length), [25], 'no next link when the page holds the rest exactly');
  const single = await allPages(s, '/services?limit=1');
  t.equal(single.pages.length, 29, 'limit=1 walks all services');
  t.same(new Set(single.pages.flat()).size, 29, 'no duplicates');
});

t.test('a write between pages does not repeat or skip earlier results', async (t) => {
  const r1 = await s.req('/services?capability=bulk&limit=10');
  const page1 = await ids(r1);
  const late = await registerProduction(s, { endpoint: 'https://late.example.com', capability: 'bulk' });
  t.teardown(async () => {
    await s.admin('DELETE', `/admin/api/services/${late.id}`);
  });
  const rest = await allPages(s, nextLink(r1)!);
  t.same([...page1, ...rest.pages.flat()], [...bulk, late.id]);
});

t.test('302 to the canonical query: exact Location, empty body, Vary', async (t) => {
  const cases: [string, string][] = [
    ['/services?capability=Print', '/services?capability=print'],
    ['/services?protocol=mqtt&capability=b&capability=a', '/services?capability=a&capability=b&protocol=mqtt'],
    ['/services?limit=100', '/services'],
    ['/services?foo=1', '/services'],
    ['/services?iotReady=TRUE', '/services?iotReady=true'],
    ['/services?iotReady=no&capability=a', '/services?capability=a'],
    ['/services?limit=010', '/services?limit=10'],
    ['/services?property=Color:Red', '/services?property=color:Red'],
    ['/services?property=k:a+b', '/services?property=k:a%20b'],
    ['/services?property=k%3Av%7e', '/services?property=k:v~'],
    ['/services?property=k:%c3%a9', '/services?property=k:%C3%A9'],
    ['/services?capability=&capability=a', '/services?capability=a'],
  ];
  for (const [from, to] of cases) {
    const r = await s.req(from);
    t.equal(r.status, 302, from);
    t.equal(r.headers.get('location'), to, `${from} -> ${to}`);
    t.equal(await r.text(), '', 'empty body');
    t.match(r.headers.get('vary') ?? '', /Authorization/i, 'Vary: Authorization on the 302');
    t.match(r.headers.get('cache-control') ?? '', /^public/, 'anonymous 302 is public');
  }
  // fetch drops a bare '?', so this one goes out byte for byte
  const bare = await rawGet(s, '/services?');
  t.equal(bare.status, 302, 'bare ? is not canonical');
  t.equal(bare.headers.location, '/services');
  t.equal(bare.body, '');
  t.match(String(bare.headers.vary), /Authorization/i);
  const bareDev = await rawGet(s, '/devices?');
  t.equal(bareDev.status, 302);
  t.equal(bareDev.headers.location, '/devices');
  const k = await s.req('/services?capability=Print', { headers: { authorization: 'Bearer nope' } });
  t.equal(k.status, 302);
  t.match(k.headers.get('cache-control') ?? '', /private/, '302 to a request with Authorization is private');
  t.match(k.headers.get('vary') ?? '', /Authorization/i);
});

t.test('Cache-Control: public for anonymous, private whenever Authorization is sent; always Vary', async (t) => {
  const anon = await s.req('/services?capability=print');
  t.equal(anon.status, 200);
  t.match(anon.headers.get('cache-control') ?? '', /^public, max-age=[1-9]\d*/);
  t.match(anon.headers.get('vary') ?? '', /Authorization/i);
  const sb = await createSandbox(s, 'Vary Box');
  const auths = ['Bearer not-a-key', 'Bearer x_sb_0123456789abcdefghijABCDEFGHIJ', `Bearer ${sb.apiKey.replace(/.$/, (c) => (c === 'a' ? 'b' : 'a'))}`, 'Basic dXNlcjpwYXNz', 'Bearer', sb.apiKey];
  for (const a of auths) {
    const r = await s.req('/services?capability=print', { headers: { authorization: a } });
    t.equal(r.status, 200, `Authorization: ${a.slice(0, 12)}… is never an error`);
    t.match(r.headers.get('cache-control') ?? '', /private/, 'private');
    t.notMatch(r.headers.get('cache-control') ?? '', /public/, 'not public');
    t.match(r.headers.get('vary') ?? '', /Authorization/i, 'Vary: Authorization');
    if (a !== `Bearer ${sb.apiKey}` && a !== sb.apiKey) t.same(await ids(r), [A.id, B.id, D.id], 'production results');
    else await r.body?.cancel();
  }
});

t.test('400 with the error body for undecodable and invalid queries', async (t) => {
  const bad = [
    '/services?capability=%zz',
    '/services?capability=a%',
    '/services?property=k:%FF',
    '/services?property=k:%C3%28',
    '/services?foo=%E0%A4',
    '/services?limit=0',
    '/services?limit=1001',
    '/services?limit=abc',
    '/services?capability=a%21',
    '/services?property=novalue',
    '/services?deviceClass=a&deviceClass=b',
    '/services?after=nope',
  ];
  for (const q of bad) {
    const r = await s.req(q);
    t.equal(r.headers.get('location'), null, `${q}: no redirect`);
    t.match(r.headers.get('vary') ?? '', /Authorization/i, `${q}: Vary on the 400`);
    t.match(r.headers.get('cache-control') ?? '', /^public, max-age=\d+$/, `${q}: an anonymous answer is public`);
    await isError(t, r, 400, 'BAD_QUERY', q);
  }
  const keyedBad = await s.req('/services?limit=0', { headers: { authorization: 'Bearer junk' } });
  t.match(keyedBad.headers.get('cache-control') ?? '', /private/, 'with Authorization: private');
  t.notMatch(keyedBad.headers.get('cache-control') ?? '', /public/);
  t.match(keyedBad.headers.get('vary') ?? '', /Authorization/i);
  await isError(t, keyedBad, 400, 'BAD_QUERY', 'with Authorization');
  const keyedUndecodable = await s.req('/services?capability=%zz', { headers: { authorization: 'Bearer junk' } });
  t.match(keyedUndecodable.headers.get('cache-control') ?? '', /private/, 'undecodable with Authorization: private');
  await isError(t, keyedUndecodable, 400, 'BAD_QUERY');
});

/** Send a request head byte for byte (raw, unescaped bytes in the query); returns the status line. */
function rawBytes(head: Buffer): Promise<string> {
  const u = new URL(s.url);
  return new Promise((resolve, reject) => {
    const c = connect(Number(u.port), u.hostname, () => c.write(head));
    let d = '';
    c.on('data', (b) => (d += b.toString('latin1')));
    c.on('error', reject);
    c.on('close', () => resolve(d));
  });
}

t.test('raw bytes in the query: UTF-8 is re-encoded (302), invalid UTF-8 is 400', async (t) => {
  const ok = await rawBytes(Buffer.from('GET /services?property=k:\xc3\xa9 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n', 'latin1'));
  t.match(ok, /^HTTP\/1\.1 302/);
  t.match(ok, /\r\nLocation: \/services\?property=k:%C3%A9\r\n/i);
  const bad = await rawBytes(Buffer.from('GET /services?property=k:\xff HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n', 'latin1'));
  t.match(bad, /^HTTP\/1\.1 400/);
  t.match(bad, /"code":"BAD_QUERY"/);
});

t.test('no query string and the full canonical query are served directly', async (t) => {
  const r = await s.req('/services');
  t.equal(r.status, 200);
  t.equal((await ids(r)).length, 29);
  const full = await s.req('/services?capability=scan&deviceClass=sensor&iotReady=true&limit=5&property=color:Red&protocol=http');
  t.equal(full.status, 200);
  t.same(await ids(full), [C.id]);
});
