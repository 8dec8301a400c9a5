// No amplifier: per client address at most ratePerAddress UDP answers a second; beyond, every
// second query gets an empty TC answer and the others none. The clock is a test hook, so the
// seconds are the test's, not the machine's; absence of an answer is shown by the answer to the
// next query arriving first (one socket, loopback, in order).
import { createSocket, type Socket } from 'node:dgram';
import { once } from 'node:events';
import dnsPacket from 'dns-packet';
import t from 'tap';
import { ResponseRateLimiter } from '../../../src/hot/discovery/dns/rate-limit.js';
import { CountingMetrics, dig, FixtureSource, startDns } from './fixture.js';

const source = new FixtureSource();
source.services = [{ id: 'one', endpoint: 'http://10.0.0.1:80/', capabilities: ['web'] }];
let clock = 1_000_000;
const metrics = new CountingMetrics();
const RATE = 5;
const s = await startDns(t, { source, metrics, ratePerAddress: RATE, now: () => clock });

/** A client socket on `address` whose answers are read in arrival order. */
async function client(address: string): Promise<{ sock: Socket; ask: (id: number) => void; next: () => Promise<dnsPacket.DecodedPacket> }> {
  const sock = createSocket('udp4');
  sock.bind(0, address);
  await once(sock, 'listening');
  const queue: Buffer[] = [];
  const waiters: ((b: Buffer) => void)[] = [];
  sock.on('message', (m) => {
    const w = waiters.shift();
    if (w) w(m);
    else queue.push(m);
  });
  return {
    sock,
    ask: (id) => sock.send(dnsPacket.encode({ type: 'query', id, questions: [{ type: 'SRV', name: 'web.service.registry' }] }), s.port, '127.0.0.1'),
    next: async () => dnsPacket.decode(queue.shift() ?? (await new Promise<Buffer>((r) => waiters.push(r)))),
  };
}

t.test('a burst from one address: answers up to the rate, then TC and nothing in turn', async (t) => {
  const c = await client('127.0.0.1');
  t.teardown(() => c.sock.close());
  for (let id = 1; id <= RATE; id++) {
    c.ask(id);
    const a = await c.next();
    t.equal(a.id, id);
    t.equal(a.answers?.length, 1, `query ${id} answered`);
  }
  // over the rate: 6 slips, 7 is dropped, 8 slips, 9 dropped, 10 slips
  for (const id of [6, 7, 8, 9, 10]) c.ask(id);
  for (const id of [6, 8, 10]) {
    const a = await c.next();
    t.equal(a.id, id, `query ${id} is the next answered (${id - 1} got none)`);
    t.ok(a.flag_tc, 'TC');
    t.same([a.answers?.length, a.authorities?.length, a.additionals?.length], [0, 0, 0], 'empty');
    t.equal(a.questions?.[0]?.name, 'web.service.registry', 'with the question, so a resolver retries it over TCP');
  }
  t.same(metrics.limited, { slip: 3, drop: 2 });
  const tcp = await dig(s.port, 'web.service.registry', 'SRV', '+tcp');
  t.equal(tcp.answer.length, 1, 'TCP is not rate-limited');

  clock += 1000;
  c.ask(11);
  const a = await c.next();
  t.equal(a.id, 11);
  t.equal(a.answers?.length, 1, 'the next second answers again');
});

t.test('another address keeps its own rate', async (t) => {
  clock += 1000;
  const c1 = await client('127.0.0.1');
  const c2 = await client('127.0.0.2');
  t.teardown(() => {
    c1.sock.close();
    c2.sock.close();
  });
  for (let id = 1; id <= RATE + 1; id++) {
    c1.ask(id);
    await c1.next();
  }
  c2.ask(100);
  const a = await c2.next();
  t.equal(a.id, 100);
  t.notOk(a.flag_tc);
  t.equal(a.answers?.length, 1, 'answered in full while 127.0.0.1 is over its rate');
});

t.test('the limiter: one budget a second per address; forged addresses beyond the table share one', async (t) => {
  let now = 0;
  const l = new ResponseRateLimiter({ perSecond: 3, maxAddresses: 100, now: () => now });
  t.same(['a', 'a', 'a', 'a', 'a', 'a', 'a'].map((x) => l.take(x)), ['answer', 'answer', 'answer', 'slip', 'drop', 'slip', 'drop']);
  t.equal(l.take('b'), 'answer');
  now = 999;
  t.equal(l.take('a'), 'slip', 'the same second');
  now = 1000;
  t.equal(l.take('a'), 'answer', 'a new second');

  now = 5000;
  const seen: Record<string, number> = {};
  for (let i = 0; i < 100_000; i++) {
    const d = l.take(`10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`);
    seen[d] = (seen[d] ?? 0) + 1;
  }
  t.equal(l.size, 100, 'the table holds at most maxAddresses');
  t.same(seen, { answer: 100 + 3, slip: (100_000 - 103) / 2 + 0.5, drop: (100_000 - 103) / 2 - 0.5 }, 'the 99,900 beyond the table got one address\'s budget');
  now = 6000;
  t.equal(l.take('10.0.0.1'), 'answer');
  t.equal(l.size, 1, 'cleared at the next second');
});
