// The client's canonical queries against the server's rules: whatever a caller passes, the
// query the client sends is the one the server keeps (200 or 400, never a 302), and the
// Link and Retry-After readers take what servers send.
import fc from 'fast-check';
import t from 'tap';
import { canonicalQuery, compareCodePoints, nextLink, retryAfterMs, withQuery } from '../../client/src/index.js';
import { serve } from '../helpers/server.js';
import { value as propertyValue } from '../helpers/arbitraries.js';

t.test('hand-written canonical forms', async (t) => {
  const cases: [Record<string, unknown>, string][] = [
    [{}, ''],
    [{ limit: 100 }, ''],
    [{ limit: '0100' }, ''],
    [{ limit: '007' }, 'limit=7'],
    [{ iotReady: false, capability: [] }, ''],
    [{ iotReady: true }, 'iotReady=true'],
    [{ iotReady: 'TRUE' }, 'iotReady=true'],
    [{ capability: ['b', 'A', 'a', ''] }, 'capability=a&capability=b'],
    [{ protocol: 'MQTT', deviceClass: 'Sensor' }, 'deviceClass=sensor&protocol=mqtt'],
    [{ property: 'Zone:EU West' }, 'property=zone:EU%20West'],
    [{ property: ['k:b', 'k:a+b', 'k:a'] }, 'property=k:a&property=k:a%2Bb&property=k:b'],
    [{ property: "k:!'()*~" }, 'property=k:%21%27%28%29%2A~'],
    [{ property: 'k:é' }, 'property=k:%C3%A9'],
    // U+FFFF sorts before U+10000 in code points, after it in UTF-16 code units
    [{ property: ['k:\u{10000}', 'k:\uffff'] }, 'property=k:%EF%BF%BF&property=k:%F0%90%80%80'],
    [{ after: '12.5', capability: 'x' }, 'after=12.5&capability=x'],
  ];
  for (const [q, want] of cases) t.equal(canonicalQuery(q as never), want, JSON.stringify(q));
  t.equal(withQuery('/services', {}), '/services', 'no "?" when nothing is left');
  t.equal(compareCodePoints('\uffff', '\u{10000}'), -1);
});

t.test('Link rel="next" and Retry-After', async (t) => {
  t.equal(nextLink('</services?after=1>; rel="next"'), '/services?after=1');
  t.equal(nextLink('</a>; rel="successor-version", </services?after=2&limit=3>; rel=next'), '/services?after=2&limit=3');
  t.equal(nextLink('</a>; rel="prev next"'), '/a');
  t.equal(nextLink('</a>; rel="successor-version"'), null);
  t.equal(nextLink(null), null);
  t.equal(retryAfterMs('7', 0), 7000);
  t.equal(retryAfterMs('Thu, 01 Jan 1970 00:00:10 GMT', 4000), 6000);
  t.equal(retryAfterMs('soon', 0), null);
  t.equal(retryAfterMs(null, 0), null);
});

t.test('every query the client makes is canonical for the server (no 302)', async (t) => {
  const s = await serve(t);
  const tokenAnyCase = fc.stringMatching(/^[A-Za-z0-9._-]{1,12}$/);
  const prop = fc.tuple(tokenAnyCase, propertyValue).map(([k, v]) => `${k}:${v}`);
  const query = fc.record(
    {
      capability: fc.oneof(tokenAnyCase, fc.array(fc.oneof(tokenAnyCase, fc.constant('')), { maxLength: 4 })),
      property: fc.array(prop, { maxLength: 3 }),
      deviceClass: tokenAnyCase,
      protocol: tokenAnyCase,
      iotReady: fc.oneof(fc.boolean(), fc.constantFrom('true', 'True')),
      limit: fc.oneof(fc.integer({ min: 1, max: 1000 }), fc.constantFrom('0042', '100')),
    },
    { requiredKeys: [] },
  );
  const devicesQuery = fc.record({ capability: tokenAnyCase, deviceClass: tokenAnyCase, protocol: tokenAnyCase, limit: fc.integer({ min: 1, max: 1000 }) }, { requiredKeys: [] });
  await fc.assert(
    fc.asyncProperty(query, devicesQuery, async (q, d) => {
      for (const path of [withQuery('/services', q), withQuery('/devices', d)]) {
        const r = await s.req(path);
        await r.arrayBuffer();
        if (r.status !== 200) throw new Error(`${path}: ${r.status} ${r.headers.get('location') ?? ''}`);
      }
    }),
    { numRuns: 60 },
  );
  t.pass('60 pairs of queries, each answered 200 as sent');
});
