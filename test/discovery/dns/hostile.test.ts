// Hostile packets (fast-check): random bytes, valid queries and mutated ones over UDP, and
// streams of them over TCP with cut and oversized length prefixes. None may crash the server
// (it runs in this process: an uncaught error fails the file) or stall it: a valid query is
// answered after each case, over UDP and TCP. Every UDP answer is a response to the packet
// sent (its id, QR set), one at most, within the size the packet allowed.
import { createSocket } from 'node:dgram';
import { once } from 'node:events';
import { connect } from 'node:net';
import dnsPacket from 'dns-packet';
import fc from 'fast-check';
import t from 'tap';
import { FixtureSource, framed, startDns, tcpExchange, udpExchange } from './fixture.js';

const source = new FixtureSource();
source.services = [
  { id: 'Abc123', endpoint: 'http://10.0.0.1:8080/', capabilities: ['web', 'api'] },
  { id: 'v6svc', endpoint: 'https://[2001:db8::1]/', capabilities: ['web'] },
  ...Array.from({ length: 120 }, (_, i) => ({ id: `big${i}`, endpoint: `http://10.1.0.${i}:${9000 + i}/`, capabilities: ['big'] })),
];
// the rate limit has its own test: here every hostile packet is answered as if it were alone
const s = await startDns(t, { source, ratePerAddress: 1e9, tcpPerAddress: 1000, tcpTotal: 1000, tcpIdleMs: 2000 });

const NAMES = ['web.service.registry', '_web._tcp.service.registry', 'api.web.service.registry', 'big.service.registry', 'abc123.addr.registry', 'registry', 'ns.registry', 'x.registry', 'example.com', '.'];
// ANY is a query type dns-packet writes, though its types list only record types
const TYPES = ['A', 'AAAA', 'SRV', 'SOA', 'NS', 'TXT', 'ANY', 'AXFR', 'OPT', 'MX'] as unknown as dnsPacket.RecordType[];
const label = fc.oneof(fc.stringMatching(/^[a-z0-9_-]{1,10}$/), fc.string({ minLength: 1, maxLength: 63 }));

const validQuery = fc
  .record({
    id: fc.integer({ min: 0, max: 0xffff }),
    name: fc.oneof(fc.constantFrom(...NAMES), fc.array(label, { minLength: 1, maxLength: 6 }).map((l) => [...l, 'service', 'registry'].join('.'))),
    type: fc.constantFrom(...TYPES),
    udpSize: fc.option(fc.integer({ min: 0, max: 0xffff })),
  })
  .map(({ id, name, type, udpSize }) => {
    const additionals = udpSize === null ? [] : [{ name: '.', type: 'OPT' as const, udpPayloadSize: udpSize, extendedRcode: 0, ednsVersion: 0, flags: 0, flag_do: false, options: [] }];
    try {
      return dnsPacket.encode({ type: 'query', id, flags: dnsPacket.RECURSION_DESIRED, questions: [{ type, name }], additionals });
    } catch {
      return dnsPacket.encode({ type: 'query', id, questions: [{ type: 'A', name: 'web.service.registry' }] });
    }
  });

const mutation = fc.oneof(
  fc.record({ at: fc.nat(), byte: fc.integer({ min: 0, max: 255 }) }).map((m) => (b: Buffer) => {
    const c = Buffer.from(b);
    if (c.length > 0) c[m.at % c.length] = m.byte;
    return c;
  }),
  fc.nat().map((n) => (b: Buffer) => b.subarray(0, n % (b.length + 1))),
  fc.uint8Array({ maxLength: 40 }).map((x) => (b: Buffer) => Buffer.concat([b, x])),
  // a count (questions, answers, authorities, additionals) or the flags set to anything
  fc.record({ field: fc.constantFrom(2, 4, 6, 8, 10), v: fc.integer({ min: 0, max: 0xffff }) }).map((m) => (b: Buffer) => {
    const c = Buffer.from(b);
    if (c.length >= 12) c.writeUInt16BE(m.v, m.field);
    return c;
  }),
);
const mutated = fc.tuple(validQuery, fc.array(mutation, { minLength: 1, maxLength: 4 })).map(([q, ms]) => ms.reduce((b, m) => m(b), q));
const packet = fc.oneof(fc.uint8Array({ maxLength: 600 }).map((a) => Buffer.from(a)), validQuery, mutated);

const probe = (id: number): Buffer => dnsPacket.encode({ type: 'query', id, questions: [{ type: 'SRV', name: 'web.service.registry' }] });

t.test('UDP: random, valid and mutated packets; each gets one fitting answer or none; the server goes on', async (t) => {
  const sock = createSocket('udp4');
  sock.bind(0, '127.0.0.1');
  await once(sock, 'listening');
  t.teardown(() => sock.close());
  const inbox: Buffer[] = [];
  let wake: (() => void) | null = null;
  sock.on('message', (m) => {
    inbox.push(m);
    wake?.();
  });
  let n = 0;
  await fc.assert(
    fc.asyncProperty(packet, async (p) => {
      const probeId = 0x10000 - 1 - (n++ % 1000);
      inbox.length = 0;
      sock.send(p, s.port, '127.0.0.1');
      sock.send(probe(probeId), s.port, '127.0.0.1');
      // the fixture source answers at once, so the packet is handled before the probe
      const isProbe = (m: Buffer): boolean => {
        try {
          return m.readUInt16BE(0) === probeId && dnsPacket.decode(m).answers?.length === 2;
        } catch {
          return false;
        }
      };
      while (!inbox.some(isProbe)) await new Promise<void>((r) => (wake = r));
      const before = inbox.slice(0, inbox.findIndex(isProbe));
      if (before.length > 1) throw new Error(`${before.length} answers to one packet`);
      for (const a of before) {
        if (p.length < 12) throw new Error('answered a packet shorter than a header');
        if (a.readUInt16BE(0) !== p.readUInt16BE(0)) throw new Error('answer with another id');
        if (!(a[2]! & 0x80)) throw new Error('QR not set');
        const edns = p.length >= 12 && p.readUInt16BE(10) > 0;
        if (a.length > (edns ? 4096 : 512)) throw new Error(`${a.length} bytes over UDP`);
        dnsPacket.decode(a);
      }
    }),
    { numRuns: 400 },
  );
  t.pass('400 packets survived, each followed by an answered query');
});

/** Pieces of a TCP stream: framed messages of every kind, and bytes that break the framing. */
const piece = fc.oneof(
  packet.map(framed),
  validQuery.map(framed),
  fc.uint8Array({ minLength: 1, maxLength: 300 }).map((a) => Buffer.from(a)),
  fc.constant(Buffer.from([0x00])),
  fc.uint8Array({ maxLength: 20 }).map((a) => Buffer.concat([Buffer.from([0xff, 0xff]), a])),
);

t.test('TCP: streams of hostile and valid messages, cut and oversized prefixes; the server goes on', async (t) => {
  await fc.assert(
    fc.asyncProperty(fc.array(piece, { minLength: 1, maxLength: 30 }), fc.boolean(), async (pieces, oneWrite) => {
      const sock = connect(s.port, '127.0.0.1');
      sock.on('error', () => {});
      const closed = once(sock, 'close');
      const got: Buffer[] = [];
      sock.on('data', (d: Buffer) => got.push(d));
      if (oneWrite) sock.write(Buffer.concat(pieces));
      else for (const p of pieces) sock.write(p);
      sock.end();
      await closed;
      const bytes = Buffer.concat(got);
      // whatever came back is whole framed responses (a cut last one when the server closed first)
      for (let at = 0; at + 2 <= bytes.length; at += 2 + bytes.readUInt16BE(at)) {
        const len = bytes.readUInt16BE(at);
        if (at + 2 + len <= bytes.length && !(bytes[at + 4]! & 0x80)) throw new Error('a TCP answer without QR');
      }
      const ok = await tcpExchange(s.port, framed(probe(1)), 1);
      if (ok.answers.length !== 1) throw new Error('a valid TCP query went unanswered');
      const udp = await udpExchange(s.port, probe(2));
      if (!udp) throw new Error('a valid UDP query went unanswered');
    }),
    { numRuns: 150 },
  );
  t.pass('150 streams survived');
});

t.test('TCP: many queries pipelined in one write are all answered, in order', async (t) => {
  await fc.assert(
    fc.asyncProperty(fc.array(validQuery, { minLength: 1, maxLength: 300 }), async (qs) => {
      const r = await tcpExchange(s.port, Buffer.concat(qs.map(framed)), qs.length);
      const ids = r.answers.map((a) => a.readUInt16BE(0));
      if (ids.join() !== qs.map((q) => q.readUInt16BE(0)).join()) throw new Error(`answers ${ids.length} of ${qs.length}, or out of order`);
    }),
    { numRuns: 30 },
  );
  t.pass();
});
