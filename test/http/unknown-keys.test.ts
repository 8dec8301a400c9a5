// A client repeating a well-formed but unknown sandbox key (401 on sandbox routes,
// production's answers on /services, as the contract says) costs one PostgreSQL look-up
// per remembering period, not one per request; a valid key is never affected.
import t from 'tap';
import { keyed, serve } from '../helpers/checks.js';
import { createSandbox } from '../helpers/server.js';
import { newSandboxKey } from '../../src/hot/sandbox/keys.js';

const s = await serve(t);

/** Count the key-hash look-ups the server sends to PostgreSQL (a spy: PostgreSQL answers). */
let lookups = 0;
const pool = s.app.pg as unknown as { query: (...a: unknown[]) => unknown };
const real = pool.query.bind(pool);
pool.query = (...a: unknown[]) => {
  if (typeof a[0] === 'string' && a[0].includes('WHERE key_hash = $1')) lookups++;
  return real(...a);
};

t.test('an unknown key is looked up once, then refused from memory', async (t) => {
  const real = await createSandbox(s, 'Known');
  // well-formed, checksum and all, but never issued (a key with a bad checksum is refused
  // with no look-up at all: test/http/sandbox-keys.test.ts)
  const wrong = newSandboxKey('Known').key;
  const before = lookups;
  for (let i = 0; i < 20; i++) {
    const r = await s.req('/services', keyed(wrong));
    t.equal(r.status, 200, '/services with an unknown key: production');
    await r.body?.cancel();
    const r2 = await s.req(`/sandbox/${real.uuid}/services`, keyed(wrong));
    t.equal(r2.status, 401);
    await r2.body?.cancel();
  }
  t.equal(lookups - before, 1, 'one PostgreSQL look-up for 40 requests');
  const ok = await s.req(`/sandbox/${real.uuid}/services`, keyed(real.apiKey));
  t.equal(ok.status, 200, 'the real key still works');
  await ok.body?.cancel();
});
