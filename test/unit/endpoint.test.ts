// Endpoint normalisation (domain/endpoint.ts, contract "Service"): the WHATWG URL
// serialisation is what a write stores and returns; user info and control characters are
// refused. Expectations are written out by hand, not computed with `new URL`.
import t from 'tap';
import fc from 'fast-check';
import { ENDPOINT_MAX, normaliseEndpoint } from '../../src/hot/domain/endpoint.js';
import { ApiError } from '../../src/hot/domain/errors.js';
import { parseServiceCreate, parseServicePatch } from '../../src/hot/domain/validation.js';
import { docWithEndpoint, storedEndpointFix } from '../../src/hot/reindex/endpoints.js';

const href = (s: string): string | null => {
  const r = normaliseEndpoint(s);
  return r.ok ? r.href : null;
};

t.test('serialisation: scheme and host lower-cased, punycode, default port dropped', async (t) => {
  const cases: [string, string][] = [
    ['HTTpS://ꇓD', 'https://xn--d-7o1e/'],
    ['HTTPS://Example.COM:443/Path?Q=1#F', 'https://example.com/Path?Q=1#F'],
    ['http://example.com:80', 'http://example.com/'],
    ['http://example.com:8080', 'http://example.com:8080/'],
    ['https://example.com:80/', 'https://example.com:80/'],
    ['http://bücher.example/x', 'http://xn--bcher-kva.example/x'],
    ['http://a.example/x/../y/./z', 'http://a.example/y/z'],
    ['http://a.example/ä', 'http://a.example/%C3%A4'],
    ['http://[::1]:9000/', 'http://[::1]:9000/'],
    ['http://0x7f.1/', 'http://127.0.0.1/'],
    ['https://api.example.com/v1', 'https://api.example.com/v1'],
    ['http://a.example/b@c', 'http://a.example/b@c'],
    ['http://a.example?x=@y', 'http://a.example/?x=@y'],
    ['http://a.example/x:y@z', 'http://a.example/x:y@z'],
    ['https://a.example/p?u=a:b@c#d:e@f', 'https://a.example/p?u=a:b@c#d:e@f'],
  ];
  for (const [input, want] of cases) t.equal(href(input), want, input);
});

t.test('refused: user info, control characters, whitespace, non-http, too long', async (t) => {
  for (const s of ['http://user:pass@h.example/', 'http://user@h.example/', 'http://:pass@h.example/', 'http://@h.example/', 'http://:@h.example/', 'https:\\\\u:p@h.example/']) {
    const r = normaliseEndpoint(s);
    t.ok(!r.ok && /user info/.test(r.reason), `${s}: user info refused`);
  }
  for (const s of ['http://h.example/\u0000', 'http://h.example/a\tb', 'http://h.ex\nample/', 'http://h.example/\u007f', 'http://h.example/\u0085', 'http://h.example/ x']) {
    const r = normaliseEndpoint(s);
    t.ok(!r.ok && /control/.test(r.reason), `${JSON.stringify(s)}: refused`);
  }
  for (const s of ['ftp://h.example/', 'javascript:alert(1)', '/relative', 'http://', 'http://[::1/']) t.notOk(normaliseEndpoint(s).ok, `${s} refused`);
  t.strictSame(normaliseEndpoint('ftp://h.example/'), { ok: false, reason: '/endpoint must be http or https' });
  t.strictSame(normaliseEndpoint('/relative'), { ok: false, reason: '/endpoint is not an absolute URL' });
  t.strictSame(normaliseEndpoint('http://u@h.example/'), { ok: false, reason: '/endpoint must not contain user info (user:password@)' });
  t.strictSame(normaliseEndpoint('http://h.example/\u0001'), { ok: false, reason: '/endpoint must not contain whitespace or control characters' });
  t.strictSame(normaliseEndpoint('http://h.example/' + 'ä'.repeat(700)), { ok: false, reason: '/endpoint must not be longer than 2048 characters once normalised' });
  t.strictSame(normaliseEndpoint('HTTP://H.example'), { ok: true, href: 'http://h.example/' });
  // 2040 characters of input that grow past the limit once percent-encoded
  t.notOk(normaliseEndpoint('http://h.example/' + 'ä'.repeat(700)).ok, 'too long once normalised');
  t.ok(normaliseEndpoint('http://h.example/' + 'a'.repeat(ENDPOINT_MAX - 17)).ok, 'exactly the limit');
});

t.test('writes store the serialisation; refusals are 400 VALIDATION_FAILED', async (t) => {
  t.equal(parseServiceCreate({ endpoint: 'HTTP://H.Example:80', capability: 'a' }).endpoint, 'http://h.example/');
  t.equal(parseServicePatch({ endpoint: 'HTTPS://H.Example:443/x' }).endpoint, 'https://h.example/x');
  for (const e of ['http://u:p@h.example/', 'http://h.example/\u0001']) {
    try {
      parseServiceCreate({ endpoint: e, capability: 'a' });
      t.fail(`${JSON.stringify(e)} accepted`);
    } catch (err) {
      t.ok(err instanceof ApiError && err.status === 400 && err.code === 'VALIDATION_FAILED', `${JSON.stringify(e)}: 400 VALIDATION_FAILED`);
    }
  }
});

t.test('property: accepted endpoints are fixed points, http(s), without user info or control characters', async (t) => {
  const url = fc.oneof(fc.webUrl({ withFragments: true, withQueryParameters: true }), fc.string({ unit: 'binary', maxLength: 80 }).map((s) => 'http://' + s), fc.string({ unit: 'grapheme', maxLength: 40 }).map((s) => 'HTTPS://' + s));
  fc.assert(
    fc.property(url, (s) => {
      const r = normaliseEndpoint(s);
      if (!r.ok) return true;
      const again = normaliseEndpoint(r.href);
      if (!again.ok || again.href !== r.href) throw new Error(`not a fixed point: ${JSON.stringify(s)} -> ${r.href}`);
      const u = new URL(r.href);
      // eslint-disable-next-line no-control-regex
      const control = /[\u0000-\u0020\u007f-\u009f]/;
      return (u.protocol === 'http:' || u.protocol === 'https:') && u.username === '' && u.password === '' && !control.test(r.href) && r.href.length <= ENDPOINT_MAX;
    }),
    { numRuns: 2000 },
  );
  t.pass('2000 hostile endpoints');
});

t.test('migration 0006 rules for stored rows', async (t) => {
  t.equal(storedEndpointFix('HTTPS://Example.COM:443/a'), 'https://example.com/a');
  t.equal(storedEndpointFix('http://user:secret@h.example:80/x'), 'http://h.example/x', 'user info removed');
  t.equal(storedEndpointFix('https://h.example/'), 'https://h.example/', 'already normal');
  t.equal(storedEndpointFix('ftp://h.example/'), null, 'not http(s): left as it is');
  t.equal(storedEndpointFix('not a url'), null);
  t.equal(docWithEndpoint('{"id":"abc","endpoint":"HTTP://X","capabilities":[]}', 'abc', 'HTTP://X', 'http://x/'), '{"id":"abc","endpoint":"http://x/","capabilities":[]}');
  t.equal(docWithEndpoint('{"id":"abc","endpoint":"HTTP://X/y","capabilities":[]}', 'abc', 'HTTP://X', 'http://x/'), null, 'a prefix of the endpoint is not the endpoint');
  t.equal(docWithEndpoint('{"endpoint":"HTTP://X","id":"abc"}', 'abc', 'HTTP://X', 'http://x/'), null, 'another shape');
});
