// The pure parts of the DNS server: reading any bytes never throws; a reply never passes the
// size it is fitted to, sets TC exactly when an answer was left out and keeps each SRV with
// its glue; the names of the zone; FORMERR, BADVERS and the drops that dig cannot send.
import dnsPacket from 'dns-packet';
import fc from 'fast-check';
import t from 'tap';
import { fit, Resolver } from '../../../src/hot/discovery/dns/answer.js';
import { classify, zoneOf } from '../../../src/hot/discovery/dns/names.js';
import { Records } from '../../../src/hot/discovery/dns/records.js';
import { encodeReply, parseQuery, type Query } from '../../../src/hot/discovery/dns/wire.js';
import { decoded, FixtureSource, startDns, udpExchange } from './fixture.js';

const zone = zoneOf('registry.');

t.test('parseQuery reads any bytes without throwing', async (t) => {
  fc.assert(
    fc.property(fc.uint8Array({ maxLength: 700 }), (a) => {
      parseQuery(Buffer.from(a));
    }),
    { numRuns: 5000 },
  );
  t.pass();
});

t.test('names: forms, AND, case, what has no name', async (t) => {
  const c = (n: string): unknown => classify(n === '.' ? [] : n.split('.'), zone);
  t.same(c('Web.SERVICE.registry'), { kind: 'service', capabilities: ['web'] });
  t.same(c('_b._A._tcp.service.registry'), { kind: 'service', capabilities: ['b', 'a'] });
  t.same(c('a.a.a.service.registry'), { kind: 'service', capabilities: ['a'] }, 'repeated labels are one capability');
  t.same(c('x.y._tcp.service.registry'), { kind: 'unknown' });
  t.same(c('_tcp.service.registry'), { kind: 'structure' });
  t.same(c('Abc.ADDR.registry'), { kind: 'addr', id: 'Abc' }, 'an id keeps its case');
  t.same(c('a!b.service.registry'), { kind: 'unknown' });
  t.same(c(`${'x'.repeat(63)}.service.registry`), { kind: 'service', capabilities: ['x'.repeat(63)] });
  t.same(c(Array.from({ length: 33 }, (_, i) => `c${i}`).join('.') + '.service.registry'), { kind: 'unknown' }, 'more capabilities than a service has');
  t.same(c('registry.com'), { kind: 'outside' });
  t.same(c('.'), { kind: 'outside' });
  t.same(classify(['a\u00c9', 'service', 'registry'], zone), { kind: 'unknown' }, 'a Latin-1 letter does not fold to ASCII');
  t.throws(() => zoneOf('bad_domain.'), /DNS domain/);
  t.throws(() => zoneOf('a..b'), /DNS domain/);
  t.same(zoneOf('Reg.Example.'), { labels: ['reg', 'example'], name: 'reg.example' });
});

const services = fc.array(
  fc.record({
    id: fc.stringMatching(/^[A-Za-z0-9_-]{1,70}$/),
    endpoint: fc.oneof(
      fc.tuple(fc.ipV4(), fc.integer({ min: 1, max: 65535 })).map(([ip, p]) => `http://${ip}:${p}/`),
      fc.ipV6().map((ip) => new URL(`https://[${ip}]/`).href),
      fc.domain().map((d) => new URL(`https://${d}/`).href),
      fc.constant('https://' + 'a'.repeat(70) + '.example/'),
      fc.constant('not a url'),
    ),
  }),
  { maxLength: 150 },
);

t.test('a fitted reply stays within its size; TC when an answer was left out; glue with its SRV', async (t) => {
  const records = new Records(zone, 5, '127.0.0.1');
  await fc.assert(
    fc.asyncProperty(services, fc.integer({ min: 512, max: 4096 }), fc.constantFrom('SRV', 'A', 'AAAA'), fc.boolean(), async (list, limit, type, edns) => {
      const src = new FixtureSource();
      src.services = list.map((s) => ({ ...s, capabilities: ['c'] }));
      const msg = dnsPacket.encode({ type: 'query', id: 1, questions: [{ type, name: 'c.service.registry' }], additionals: edns ? [{ name: '.', type: 'OPT', udpPayloadSize: limit, extendedRcode: 0, ednsVersion: 0, flags: 0, flag_do: false, options: [] }] : [] });
      const parsed = parseQuery(msg);
      if (parsed.kind !== 'query') throw new Error('not a query');
      const q: Query = parsed.query;
      const res = await new Resolver(zone, src, records).resolve(q);
      const r = fit(q, res, limit, 1000);
      const out = encodeReply(q, r);
      if (out.length > limit) throw new Error(`${out.length} > ${limit}`);
      if (r.truncated !== r.answers.length < res.units.length) throw new Error('TC does not say whether answers were left out');
      const d = dnsPacket.decode(out);
      if (d.answers?.length !== r.answers.length) throw new Error('answers lost in encoding');
      const glue = new Set(d.additionals?.filter((a) => a.type !== 'OPT').map((a) => a.name.toLowerCase()));
      for (const a of d.answers ?? []) {
        if (a.type === 'SRV' && a.data.target.endsWith('.addr.registry') && !glue.has(a.data.target.toLowerCase())) throw new Error('an addr target without glue');
      }
    }),
    { numRuns: 300 },
  );
  t.pass();
});

t.test('FORMERR, BADVERS and drops, on the wire', async (t) => {
  const s = await startDns(t, { source: new FixtureSource() });
  const two = dnsPacket.encode({ type: 'query', id: 42, questions: [{ type: 'A', name: 'registry' }, { type: 'A', name: 'registry' }] });
  const formerr = await udpExchange(s.port, two);
  t.same(formerr && { id: formerr.readUInt16BE(0), rcode: decoded(formerr).rcode }, { id: 42, rcode: 'FORMERR' }, 'two questions');
  const none = dnsPacket.encode({ type: 'query', id: 43, questions: [] });
  t.equal(decoded((await udpExchange(s.port, none))!).rcode, 'FORMERR', 'no question');
  const cut = dnsPacket.encode({ type: 'query', id: 44, questions: [{ type: 'SRV', name: 'web.service.registry' }] }).subarray(0, 20);
  t.equal(decoded((await udpExchange(s.port, cut))!).rcode, 'FORMERR', 'a question cut short');
  const ednsVersion1 = dnsPacket.encode({ type: 'query', id: 45, questions: [{ type: 'SOA', name: 'registry' }], additionals: [{ name: '.', type: 'OPT', udpPayloadSize: 1232, extendedRcode: 0, ednsVersion: 1, flags: 0, flag_do: false, options: [] }] });
  const badvers = decoded((await udpExchange(s.port, ednsVersion1))!);
  const opt = badvers.additionals?.find((a) => a.type === 'OPT');
  t.same([badvers.rcode, opt?.type === 'OPT' && opt.extendedRcode, opt?.type === 'OPT' && opt.ednsVersion], ['NOERROR', 1, 0], 'BADVERS (16: extended rcode 1) with version 0');
  const chaos = dnsPacket.encode({ type: 'query', id: 46, questions: [{ type: 'A', name: 'web.service.registry', class: 'CH' }] });
  t.equal(decoded((await udpExchange(s.port, chaos))!).rcode, 'REFUSED', 'a class other than IN');
  const axfr = dnsPacket.encode({ type: 'query', id: 47, questions: [{ type: 'AXFR', name: 'registry' }] });
  t.equal(decoded((await udpExchange(s.port, axfr))!).rcode, 'REFUSED', 'no zone transfer');
  // a response is never answered (two servers would bounce it for ever): the next query is the next answer
  const response = dnsPacket.encode({ type: 'response', id: 48, questions: [{ type: 'A', name: 'registry' }] });
  const garbage = Buffer.from([1, 2, 3]);
  const next = dnsPacket.encode({ type: 'query', id: 49, questions: [{ type: 'SOA', name: 'registry' }] });
  const first = await udpExchange(s.port, [response, garbage, next]);
  t.equal(first?.readUInt16BE(0), 49, 'a response and a packet shorter than a header get nothing');
});
