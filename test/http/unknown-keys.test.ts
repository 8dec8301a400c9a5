// A well-formed but unknown sandbox key (401 on sandbox routes, production's answers on
// /services, as the contract says) costs PostgreSQL nothing while the Redis index is
// complete: the index holds every key hash, so a miss there is the answer. Only while the
// index is incomplete (here: its marker deleted, as a FLUSHALL would) is PostgreSQL asked,
// and then once per remembering period, not once per request; a valid key is never affected.
import t from 'tap';
import { keyed } from '../helpers/checks.js';
import { createSandbox, serve } from '../helpers/server.js';
import { waitFor } from '../helpers/wait.js';
import { newSandboxKey } from '../../src/hot/sandboxes/keys.js';
import { PRODUCTION } from '../../src/hot/domain/keys.js';

const s = await serve(t);

/** Count the key-hash look-ups the server sends to PostgreSQL (a spy: PostgreSQL answers). */
let lookups = 0;
const pool = s.app.pg as unknown as { query: (...a: unknown[]) => unknown };
const real = pool.query.bind(pool);
pool.query = (...a: unknown[]) => {
  const text = typeof a[0] === 'string' ? a[0] : (a[0] as { text?: string } | undefined)?.text ?? '';
  // look-ups by key hash only (a rebuild reads every sandbox's hash: that is no look-up)
  if (/\bsandboxes\b/.test(text) && /WHERE\s+key_hash\b/.test(text)) lookups++;
  return real(...a);
};

/** `n` requests, `width` at a time */
async function spread(n: number, width: number, f: (i: number) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(Array.from({ length: width }, async () => {
    while (next < n) await f(next++);
  }));
}

t.test('1,000 unknown checksum-valid keys: no PostgreSQL look-up while the index is complete', async (t) => {
  const known = await createSandbox(s, 'Known');
  const before = lookups;
  const statuses = new Map<number, number>();
  await spread(1000, 16, async (i) => {
    const forged = newSandboxKey(`forged${i % 7}`).key; // checksum and all, never issued
    const r = await s.req(i % 2 ? '/services' : `/sandbox/${known.uuid}/services`, keyed(forged));
    await r.body?.cancel();
    statuses.set(r.status, (statuses.get(r.status) ?? 0) + 1);
  });
  t.same(Object.fromEntries(statuses), { 200: 500, 401: 500 }, '/services answers production, the sandbox route 401');
  t.equal(lookups - before, 0, 'no key-hash query reached PostgreSQL');
  t.equal(s.app.auth.stats.pgLookups, 0, 'the resolver asked PostgreSQL for none of them');
  t.ok(s.app.auth.keyMapBytes() > 0 && s.app.auth.keyMapBytes() <= s.cfg.sandboxKeyCacheBytes, 'the key maps hold them within their byte budget');
  const ok = await s.req(`/sandbox/${known.uuid}/services`, keyed(known.apiKey));
  t.equal(ok.status, 200, 'the real key still works');
  await ok.body?.cancel();
  const fresh = await createSandbox(s, 'Fresh');
  const r = await s.req(`/sandbox/${fresh.uuid}/services`, keyed(fresh.apiKey));
  t.equal(r.status, 200, 'a key issued after the flood resolves at once');
  await r.body?.cancel();
});

t.test('while the index is incomplete, an unknown key is looked up once, then refused from memory', async (t) => {
  const known = await createSandbox(s, 'Other');
  const gen = s.app.index.gen!;
  t.ok(gen, 'a live generation');
  // the index emptied under the server (its production marker gone): a miss is no answer
  await s.app.redis.del(s.app.keys.ver(PRODUCTION, gen));
  const wrong = newSandboxKey('Other').key;
  const before = lookups;
  for (let i = 0; i < 20; i++) {
    const r = await s.req('/services', keyed(wrong));
    await r.body?.cancel();
    const r2 = await s.req(`/sandbox/${known.uuid}/services`, keyed(wrong));
    t.equal(r2.status, 401);
    await r2.body?.cancel();
  }
  t.equal(lookups - before, 1, 'one PostgreSQL look-up for 40 requests');
  // The readiness watcher may notice the missing marker at any moment and rebuild: until
  // the rebuild is done, searches rightly answer 503 whoever asks. The key is resolved before
  // that (a 401 would come first), so wait out a rebuild, then the search must answer 200.
  const ok = await waitFor('the index complete again', async () => {
    const r = await s.req(`/sandbox/${known.uuid}/services`, keyed(known.apiKey));
    if (r.status === 503) { await r.body?.cancel(); return null; }
    return r;
  });
  t.equal(ok.status, 200, 'the real key still works');
  await ok.body?.cancel();
});
