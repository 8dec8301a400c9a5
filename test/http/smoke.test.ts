import t from 'tap';
import { registerProduction, serve } from '../helpers/server.js';

t.test('a registered production service is found by capability', async (t) => {
  const s = await serve(t);
  const svc = await registerProduction(s, { endpoint: 'https://a.example.com', capabilities: ['Smoke-Test'] });
  t.equal(svc.capabilities && (svc.capabilities as string[])[0], 'smoke-test');
  const r = await s.req('/services?capability=smoke-test');
  t.equal(r.status, 200);
  const body = (await r.json()) as { id: string }[];
  t.same(body.map((x) => x.id), [svc.id]);
});

t.test("the server under test runs uWebSockets.js's native binary, not its JavaScript fallback", async (t) => {
  const { checkUwsNative } = await import('../../src/hot/http/native.js');
  const n = checkUwsNative();
  t.ok(n.native, n.reason || `loaded ${n.binary}`);
});
