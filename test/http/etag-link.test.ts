// A page's ETag covers its Link header too (issue 24's survivor: an ETag of the body alone
// kept answering 304 after the last page shrank, so a poller never learned that the
// `rel="next"` page it held was gone). Page 1 keeps its bytes; only its Link disappears.
import t, { type Test } from 'tap';
import { registerProduction, serve } from '../helpers/server.js';

const s = await serve(t);

async function shrinkCheck(t: Test, path: string, key: (item: Record<string, unknown>) => string, idOf: (item: Record<string, unknown>) => string) {
  const first = await s.req(path);
  t.equal(first.status, 200);
  const etag = first.headers.get('etag')!;
  const link = first.headers.get('link');
  t.match(link, /rel="next"/, 'page 1 links to page 2');
  const page1 = (await first.json()) as Record<string, unknown>[];
  const next = await s.req(link!.slice(1, link!.indexOf('>')));
  const page2 = (await next.json()) as Record<string, unknown>[];
  t.equal(page2.length, 1, 'page 2 holds one item');
  // delete what page 2 holds: page 1's bytes stay, its Link goes
  t.equal((await s.admin('DELETE', `/admin/api/services/${idOf(page2[0]!)}`)).status, 204);
  const again = await s.req(path, { headers: { 'if-none-match': etag } });
  t.equal(again.status, 200, 'not a 304: the page changed (its Link)');
  t.equal(again.headers.get('link'), null, 'no next page any more');
  t.same(((await again.json()) as Record<string, unknown>[]).map(key), page1.map(key), 'with the same items');
  t.not(again.headers.get('etag'), etag, 'and a new ETag');
}

t.test('/services: the last page shrank away', async (t) => {
  for (let i = 0; i < 3; i++) await registerProduction(s, { endpoint: `https://shrink${i}.example.com`, capability: 'shrink' });
  await shrinkCheck(t, '/services?capability=shrink&limit=2', (x) => String(x.id), (x) => String(x.id));
});

t.test('/devices: the last page shrank away', async (t) => {
  for (let i = 0; i < 3; i++) await registerProduction(s, { endpoint: `https://dshrink${i}.example.com`, capability: 'dshrink', iot: { deviceClasses: ['meter'], protocols: ['coap'] } });
  await shrinkCheck(t, '/devices?capability=dshrink&limit=2', (x) => `${String(x.serviceId)}/${String(x.deviceClass)}/${String(x.protocol)}`, (x) => String(x.serviceId));
});
