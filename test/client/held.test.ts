// The typed client's held polling (client/src/paging.ts) against a real server: poll({ wait })
// holds every page of the result with the ETag it has and reads the result again when one
// changes (the other pages' requests are cancelled: the server holds nothing after); it is
// unchanged when the wait ends; watch() yields the result and then each change, ends quietly
// on its signal, and backs off on 429 (its waits recorded by the transport's sleep).
import t from 'tap';
import { RegistryClient, type Service } from '../../client/src/index.js';
import { registerProduction, serve } from '../helpers/server.js';
import { heldCount } from '../helpers/held.js';
import { recordingFetch } from './harness.js';

const s = await serve(t, { env: { TIERS: 'free=3,pro=600,enterprise=6000', LEASE_SWEEP_MS: '60000' } });

t.test('poll({ wait }): held on every page, changed when one changes, the others let go', async (t) => {
  for (let i = 0; i < 3; i++) await registerProduction(s, { endpoint: `https://cw${i}.example.com`, capabilities: ['client-wait'] });
  const { fetch, sent } = recordingFetch();
  const client = new RegistryClient({ baseUrl: s.url, fetch });
  const poller = client.servicesPoller({ capability: 'client-wait', limit: 2 });
  const first = await poller.poll({ wait: 30 });
  t.equal(first.changed, true, 'the first poll does not wait');
  t.equal(first.items.length, 3);
  const held = poller.poll({ wait: 30 });
  await heldCount(s, 2); // both pages held
  await registerProduction(s, { endpoint: 'https://cw3.example.com', capabilities: ['client-wait'] });
  const r = await held;
  t.equal(r.changed, true, 'a change');
  t.equal(r.items.length, 4, 'the whole result read again');
  t.ok(poller.heldByServer, 'the server held the requests');
  await heldCount(s, 0); // the page that did not change was let go by the client
  t.ok(sent.some((x) => x.status === 200 && x.ifNoneMatch !== null), 'a held request answered 200');
  const quiet = await client.servicesPoller({ capability: 'client-wait' }).poll();
  t.equal(quiet.items.length, 4);
});

t.test('poll({ wait }): unchanged when the wait ends', async (t) => {
  await registerProduction(s, { endpoint: 'https://cq.example.com', capabilities: ['client-quiet'] });
  const poller = new RegistryClient({ baseUrl: s.url }).servicesPoller({ capability: 'client-quiet' });
  await poller.poll();
  const r = await poller.poll({ wait: 1 });
  t.equal(r.changed, false);
  t.equal(r.items.length, 1, 'the result held');
  t.ok(poller.heldByServer);
});

t.test('watch(): the result, then each change; its signal ends it', async (t) => {
  await registerProduction(s, { endpoint: 'https://cx0.example.com', capabilities: ['client-watch'] });
  const ac = new AbortController();
  const seen: Service[][] = [];
  const loop = (async () => {
    for await (const items of new RegistryClient({ baseUrl: s.url }).servicesPoller({ capability: 'client-watch' }).watch({ wait: 30, signal: ac.signal })) {
      seen.push(items);
      if (seen.length === 1) {
        await heldCount(s, 0);
        void registerProduction(s, { endpoint: 'https://cx1.example.com', capabilities: ['client-watch'] });
      }
      if (seen.length === 2) {
        const next = heldCount(s, 1).then(() => ac.abort());
        void next;
      }
    }
  })();
  await loop;
  t.same(seen.map((x) => x.length), [1, 2], 'the first result and the changed one');
  await heldCount(s, 0);
});

t.test('watch(): a 429 waits its Retry-After and backs off, never spins', async (t) => {
  const c = await new RegistryClient({ baseUrl: s.url }).createSandbox({ name: 'watcher' });
  const { fetch, sent } = recordingFetch();
  const ac = new AbortController();
  const waits: number[] = [];
  // the transport's sleep: recorded; the second wait ends the loop
  const sleep = async (ms: number) => {
    waits.push(ms);
    if (waits.length >= 2) ac.abort();
  };
  const client = new RegistryClient({ baseUrl: s.url, fetch, maxRetries: 0, sleep });
  const lab = client.sandbox(c.uuid, c.apiKey!);
  await lab.register({ endpoint: 'https://lab.example.com', capabilities: ['lab'] }); // 1 of 3
  const results: number[] = [];
  for await (const items of lab.poller({ capability: 'lab' }).watch({ wait: 1, signal: ac.signal })) results.push(items.length);
  t.same(results, [1], 'the first result');
  const refused = sent.filter((x) => x.status === 429);
  t.equal(refused.length, 2, 'one request per wait: no spinning');
  t.equal(waits.length, 2);
  for (let i = 0; i < 2; i++) t.ok(waits[i]! >= Number(refused[i]!.retryAfter) * 1000, `wait ${i + 1} honours Retry-After (${waits[i]} ms)`);
});
