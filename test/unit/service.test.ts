// The service document and its deprecation headers (domain/service.ts): field order and
// bytes as stored and served, Deprecation (RFC 9745), Sunset (RFC 8594) and the
// successor-version Link. Expected bytes are written out by hand.
import fc from 'fast-check';
import t from 'tap';
import { deprecationHeaders, headerData, serializeService, serviceObject, type ServiceRecord } from '../../src/hot/domain/service.js';
import { serviceRecord } from '../helpers/records.js';

t.test('the document: fixed field order, no internal fields, health unknown without a lease', async (t) => {
  t.equal(
    serializeService(serviceRecord()),
    '{"id":"svc1","endpoint":"https://a.example/","capabilities":["print","scan"],"properties":{},"deprecated":false,"locked":false,"sunset_date":null,"iotReady":false,"iot":null,"health":{"status":"unknown","ttl":null}}',
  );
  t.equal(
    serializeService(
      serviceRecord({
        properties: { zone: 'b', Area: 'x', alpha: 'A:1' },
        iot: { deviceClasses: ['sensor'], protocols: ['mqtt', 'coap'] },
        deprecated: true,
        deprecatedAt: 1700000000,
        locked: true,
        sunsetDate: '2030-02-28',
        replacementSeqs: [3, 4],
        version: 12,
        health: { status: 'critical', ttl: 30 },
        lease: { tokenHash: 'ab', deregisterAfter: 60, criticalSince: 5 },
      }),
    ),
    '{"id":"svc1","endpoint":"https://a.example/","capabilities":["print","scan"],"properties":{"Area":"x","alpha":"A:1","zone":"b"},"deprecated":true,"locked":true,"sunset_date":"2030-02-28","iotReady":true,"iot":{"deviceClasses":["sensor"],"protocols":["mqtt","coap"]},"health":{"status":"critical","ttl":30}}',
    'properties sorted by key; ns, seq, deprecatedAt, replacements, version and lease terms stay out',
  );
  t.equal(
    serializeService(serviceRecord({ health: { status: 'passing', ttl: 10 } })),
    '{"id":"svc1","endpoint":"https://a.example/","capabilities":["print","scan"],"properties":{},"deprecated":false,"locked":false,"sunset_date":null,"iotReady":false,"iot":null,"health":{"status":"passing","ttl":10}}',
  );
});

t.test('the document copies the parts it shows, nothing more', async (t) => {
  const iot = { deviceClasses: ['sensor'], protocols: ['mqtt'], extra: 1 } as unknown as ServiceRecord['iot'];
  const health = { status: 'passing', ttl: 5, since: 9 } as unknown as ServiceRecord['health'];
  const o = serviceObject(serviceRecord({ iot, health }));
  t.same(o.iot, { deviceClasses: ['sensor'], protocols: ['mqtt'] });
  t.notOk(Object.hasOwn(o.iot as object, 'extra'), 'only the profile fields');
  t.same(o.health, { status: 'passing', ttl: 5 });
  t.notOk(Object.hasOwn(o.health as object, 'since'), 'only status and ttl');
  t.equal(o.iotReady, true);
});

t.test('a property key "__proto__" is a key of the document, not its prototype', async (t) => {
  const properties = JSON.parse('{"__proto__":"x","a":"1"}') as Record<string, string>;
  t.equal(
    serializeService(serviceRecord({ properties })),
    '{"id":"svc1","endpoint":"https://a.example/","capabilities":["print","scan"],"properties":{"__proto__":"x","a":"1"},"deprecated":false,"locked":false,"sunset_date":null,"iotReady":false,"iot":null,"health":{"status":"unknown","ttl":null}}',
  );
});

t.test('headerData: "<deprecatedAt>|<Sunset HTTP-date>"', async (t) => {
  t.equal(headerData(serviceRecord()), '', 'neither');
  t.equal(headerData(serviceRecord({ deprecated: true, deprecatedAt: 1700000000 })), '1700000000|');
  t.equal(headerData(serviceRecord({ deprecated: true, deprecatedAt: null })), '0|', 'deprecated before the time was recorded: the epoch');
  t.equal(headerData(serviceRecord({ deprecated: false, deprecatedAt: 1700000000 })), '', 'a time without the flag: not deprecated');
  t.equal(headerData(serviceRecord({ sunsetDate: '2030-02-28' })), '|Thu, 28 Feb 2030 00:00:00 GMT');
  t.equal(headerData(serviceRecord({ deprecated: true, deprecatedAt: 5, sunsetDate: '2031-01-01' })), '5|Wed, 01 Jan 2031 00:00:00 GMT');
});

t.test('deprecationHeaders: Deprecation with the successor Link, Sunset', async (t) => {
  t.same(deprecationHeaders('', '/services/x/replacements'), []);
  t.same(deprecationHeaders('1700000000|', '/services/x/replacements'), [
    ['Deprecation', '@1700000000'],
    ['Link', '</services/x/replacements>; rel="successor-version"'],
  ]);
  t.same(deprecationHeaders('|Thu, 28 Feb 2030 00:00:00 GMT', '/r'), [['Sunset', 'Thu, 28 Feb 2030 00:00:00 GMT']], 'a sunset without deprecation: no Link');
  t.same(deprecationHeaders('0|Wed, 01 Jan 2031 00:00:00 GMT', '/sb/abc/services/y/replacements'), [
    ['Deprecation', '@0'],
    ['Link', '</sb/abc/services/y/replacements>; rel="successor-version"'],
    ['Sunset', 'Wed, 01 Jan 2031 00:00:00 GMT'],
  ]);
});

t.test('properties come out in the order of a sorted copy of their keys, for any keys (property)', async (t) => {
  // the document's key order is Object.keys(properties).sort() put into an object: integer-like
  // keys first (an object's own order), then the rest in code-unit order; the sort is by hand
  // for a few keys (service.ts sortedKeys), Array.prototype.sort beyond 16
  const key = fc.oneof(fc.stringMatching(/^[a-z0-9._-]{1,6}$/), fc.nat(5000).map(String), fc.constantFrom('__proto__', 'constructor', '10', '9', '01', '4294967295'));
  await fc.assert(
    fc.asyncProperty(fc.uniqueArray(fc.tuple(key, fc.string({ maxLength: 4 })), { maxLength: 24, selector: (x) => x[0] }), async (pairs) => {
      const properties = Object.create(null) as Record<string, string>;
      for (const [k, v] of pairs) properties[k] = v;
      const byReference = Object.create(null) as Record<string, string>;
      for (const k of Object.keys(properties).sort()) byReference[k] = properties[k]!;
      const doc = serializeService(serviceRecord({ properties }));
      t.equal(doc.slice(doc.indexOf(',"properties":') + 14, doc.indexOf(',"deprecated":')), JSON.stringify(byReference));
    }),
    { numRuns: 300 },
  );
});
