// Hostile Prefer and If-None-Match values on every held route, sent as raw bytes (property
// tests, fast-check): never a 5xx; a request the server holds is one whose If-None-Match
// matches (as the same request without Prefer shows) and whose Prefer has a wait RFC 7240
// reads (then 304 with Preference-Applied when its one-second wait ends); anything else is
// answered at once as without the header (RFC 7240: a preference that is not understood is
// ignored), without Preference-Applied.
import t from 'tap';
import fc from 'fast-check';
import { check, headerValue } from '../helpers/hostile-requests.js';
import { rawClient } from '../helpers/raw-client.js';
import { jsonBody } from '../helpers/checks.js';
import { createSandbox, registerProduction, serve } from '../helpers/server.js';
import { etagOf } from '../helpers/held.js';
import { preferredWait } from '../../src/hot/held/prefer.js';

t.setTimeout(600_000);
const s = await serve(t, { env: { WAIT_MAX_SECONDS: '1', LEASE_SWEEP_MS: '60000', TIERS: 'free=100000' } });
const sb = await createSandbox(s);
const a = await registerProduction(s, { endpoint: 'https://x1.example.com', capabilities: ['hostile-held'], iot: { deviceClasses: ['hh'], protocols: ['mqtt'] } });
const own = (await (await s.req(`/sandbox/${sb.uuid}/services`, jsonBody('POST', { endpoint: 'https://x2.example.com', capabilities: ['hostile-held'] }, sb.apiKey))).json()) as { id: string };
const key = { authorization: `Bearer ${sb.apiKey}` };
const routes: { path: string; headers: Record<string, string> }[] = [
  { path: '/services?capability=hostile-held', headers: {} },
  { path: '/devices?deviceClass=hh', headers: {} },
  { path: `/services/${a.id}`, headers: {} },
  { path: `/sandbox/${sb.uuid}/services?capability=hostile-held`, headers: key },
  { path: `/sandbox/${sb.uuid}/services/${own.id}`, headers: key },
];
const etags = await Promise.all(routes.map((r) => etagOf(s, r.path, r.headers)));

const prefer = headerValue(['wait=1', 'wait=5', 'WAIT="1"', 'wait=0', 'wait=-1', 'wait=1e3', 'respond-async, wait=1', 'wait=1;x', 'wait', 'wait=99999999999999999999']);

t.test('any Prefer, any If-None-Match: never a 5xx; held exactly when both say so', async (t) => {
  const client = rawClient(t, s.server.port);
  let held = 0;
  await fc.assert(
    fc.asyncProperty(fc.nat(routes.length - 1), prefer, fc.oneof(fc.constant('match'), fc.constant('*'), headerValue(['"x"', 'W/"y"'])), async (i, pref, inm) => {
      const route = routes[i]!;
      const ifNoneMatch = inm === 'match' ? etags[i]! : inm;
      const ask = async (p: string | null) => {
        const lines = [`GET ${route.path} HTTP/1.1`, 'Host: x', ...(p === null ? [] : [`Prefer: ${p}`]), `If-None-Match: ${ifNoneMatch}`, ...Object.entries(route.headers).map(([k, v]) => `${k}: ${v}`)];
        const r = await client.request(Buffer.from(lines.join('\r\n') + '\r\n\r\n', 'latin1'));
        check(r, `Prefer: ${JSON.stringify(p)}, If-None-Match: ${JSON.stringify(ifNoneMatch)} on ${route.path}`);
        return r;
      };
      // whether the If-None-Match matches, as the server reads its bytes: its answer without Prefer
      const plain = await ask(null);
      const matches = plain.status === 304;
      const r = await ask(pref);
      const applied = r.headers['preference-applied'];
      // what a Prefer of printable ASCII asks for is known here (RFC 7240, the held room's
      // parser); other bytes may read either way, so long as the answer is one of the two
      const ascii = /^[\x20-\x7e]*$/.test(pref);
      const wants = preferredWait(pref.trim(), 1) > 0;
      const heldOne = r.status === 304 && applied === 'wait=1';
      const atOnce = applied === undefined && r.status === plain.status;
      const ok = !matches ? atOnce : ascii ? (wants ? heldOne : atOnce) : heldOne || atOnce;
      if (!ok) throw new Error(`${route.path} If-None-Match ${JSON.stringify(ifNoneMatch)} Prefer ${JSON.stringify(pref)} (matches ${matches}, wants ${wants}): ${r.status} ${JSON.stringify(r.headers)}`);
      if (heldOne) held++;
    }),
    { numRuns: 150 },
  );
  t.ok(held > 0, `some were held (${held})`);
  t.equal(s.app.held.size, 0, 'none left held');
});
