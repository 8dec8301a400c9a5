// DNS over TCP: several queries on one connection answered in order, a message trickled in
// byte by byte, caps on connections per address and in all, the idle timeout, and a message
// too short to answer closing its connection. Waits are for events (an answer, a close), never
// for a time.
import { once } from 'node:events';
import { connect, type Socket } from 'node:net';
import dnsPacket from 'dns-packet';
import t from 'tap';
import { waitFor } from '../../helpers/wait.js';
import { CountingMetrics, decoded, FixtureSource, framed, startDns, tcpExchange } from './fixture.js';

const source = new FixtureSource();
source.services = [{ id: 'one', endpoint: 'http://10.0.0.1:80/', capabilities: ['web'] }];
const metrics = new CountingMetrics();
const s = await startDns(t, { source, metrics, tcpPerAddress: 2, tcpTotal: 3, tcpIdleMs: 300 });

const query = (id: number, name = 'web.service.registry'): Buffer => dnsPacket.encode({ type: 'query', id, questions: [{ type: 'SRV', name }] });

/** An open connection that has had one answer (so the server has accepted it). */
async function held(): Promise<Socket> {
  const sock = connect(s.port, '127.0.0.1');
  sock.on('error', () => {});
  sock.write(framed(query(1)));
  await once(sock, 'data');
  return sock;
}

t.test('queries pipelined on one connection are answered in order', async (t) => {
  const ids = Array.from({ length: 100 }, (_, i) => i + 1);
  const r = await tcpExchange(s.port, Buffer.concat(ids.map((id) => framed(query(id, id % 2 ? 'web.service.registry' : 'nothing.service.registry')))), ids.length);
  t.same(r.answers.map((a) => dnsPacket.decode(a).id), ids);
  t.same(r.answers.slice(0, 2).map((a) => decoded(a).rcode), ['NOERROR', 'NXDOMAIN']);
});

t.test('a message trickled in one byte at a time', async (t) => {
  const sock = connect(s.port, '127.0.0.1');
  t.teardown(() => sock.destroy());
  await once(sock, 'connect');
  const bytes = framed(query(7));
  const got = once(sock, 'data');
  for (const b of bytes) {
    sock.write(Buffer.from([b]));
    await new Promise((r) => setImmediate(r));
  }
  const [d] = (await got) as [Buffer];
  t.equal(dnsPacket.decode(d.subarray(2)).id, 7);
});

t.test('connections per address and in all are capped; a closed one frees its place', async (t) => {
  const a = await held();
  const b = await held();
  const third = await tcpExchange(s.port, framed(query(3)), 1);
  t.same(third, { answers: [], closed: true }, 'a third connection from 127.0.0.1 is closed unanswered');
  t.ok((metrics.drops['tcp-limit'] ?? 0) >= 1, 'counted');
  const other = connect({ port: s.port, host: '127.0.0.1', localAddress: '127.0.0.2' });
  other.write(framed(query(4)));
  const [d] = (await once(other, 'data')) as [Buffer];
  t.equal(dnsPacket.decode(d.subarray(2)).id, 4, 'another address has its own share');
  const fourth = await tcpExchange(s.port, framed(query(5)), 1, '127.0.0.3');
  t.same(fourth, { answers: [], closed: true }, 'over the total (3) a new address does not get in either');
  other.destroy();
  a.destroy();
  b.destroy();
  // the server sees the closes when its loop turns: retry until one is answered
  const answered = await waitFor('an answer once the others closed', async () => (await tcpExchange(s.port, framed(query(6)), 1)).answers.length === 1, 20_000, 10).then(() => true, () => false);
  t.ok(answered, 'answered again once the others closed');
});

t.test('an idle connection, or one stopped half-way through a message, is closed', async (t) => {
  const idle = connect(s.port, '127.0.0.1');
  await once(idle, 'connect');
  await once(idle, 'close');
  t.pass('a connection that sent nothing was closed');
  const half = connect(s.port, '127.0.0.1');
  half.write(Buffer.from([0xff, 0xff, 1, 2, 3]));
  await once(half, 'close');
  t.pass('a connection that declared 65535 bytes and sent 3 was closed');
});

t.test('a message shorter than a header closes its connection; the server goes on', async (t) => {
  const r = await tcpExchange(s.port, Buffer.concat([framed(Buffer.from([1, 2, 3])), framed(query(9))]), 1);
  t.same(r, { answers: [], closed: true });
  t.ok((metrics.drops.malformed ?? 0) >= 1);
  const ok = await tcpExchange(s.port, framed(query(10)), 1);
  t.equal(dnsPacket.decode(ok.answers[0]!).id, 10);
});
