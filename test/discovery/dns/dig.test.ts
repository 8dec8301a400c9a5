// The DNS server as a user meets it: Debian's real dig against a server fed by a fixture
// source. SRV / A / AAAA on service names in both forms, AND over capability labels, addr
// names and their glue, NXDOMAIN and NOERROR-empty with the SOA, REFUSED outside the zone,
// NOTIMP for other opcodes, names in any case, TC over UDP (512 bytes, or the EDNS0 size)
// and the whole answer over TCP, capped by maxRecords.
import t from 'tap';
import { CountingMetrics, dig, FixtureSource, startDns, type FixtureService } from './fixture.js';

const source = new FixtureSource();
const base: FixtureService[] = [
  { id: 'Abc123', endpoint: 'http://10.0.0.1:8080/', capabilities: ['web', 'api'] },
  { id: 'v6svc', endpoint: 'https://[2001:db8::1]/', capabilities: ['web'] },
  { id: 'named1', endpoint: 'https://app.example.com/x', capabilities: ['web', 'api'] },
  { id: 'dbsvc', endpoint: 'http://db.example.net:5432/', capabilities: ['db'] },
];
const big: FixtureService[] = Array.from({ length: 200 }, (_, i) => ({
  id: `big${i}`,
  endpoint: `http://10.1.${i >> 8}.${i & 255}:${8000 + i}/`,
  capabilities: ['big'],
}));
source.services = [...base, ...big];
const metrics = new CountingMetrics();
const s = await startDns(t, { source, metrics });
const P = s.port;

const srvs = (r: { answer: { type: string; data: string }[] }): string[] => r.answer.filter((a) => a.type === 'SRV').map((a) => a.data).sort();
const size = (text: string): number => Number(/MSG SIZE\s+rcvd: (\d+)/.exec(text)?.[1]);
const WEB_SRV = ['1 1 443 app.example.com.', '1 1 443 v6svc.addr.registry.', '1 1 8080 Abc123.addr.registry.'];

t.test('SRV on a service name: priority 1, weight 1, the port, host or addr target, glue', async (t) => {
  const r = await dig(P, 'web.service.registry', 'SRV');
  t.equal(r.status, 'NOERROR');
  t.ok(r.flags.includes('aa'), 'authoritative');
  t.same(srvs(r), WEB_SRV);
  t.ok(r.answer.every((a) => a.ttl === 5 && a.name === 'web.service.registry.'), 'TTL 5 and the name asked');
  t.same(r.additional.map((a) => `${a.name} ${a.type} ${a.data}`).sort(), ['Abc123.addr.registry. A 10.0.0.1', 'v6svc.addr.registry. AAAA 2001:db8::1']);
  t.same(r.authority, [], 'no SOA with an answer');
});

t.test('the RFC 2782 form names the same services', async (t) => {
  t.same(srvs(await dig(P, '_web._tcp.service.registry', 'SRV')), WEB_SRV);
  t.equal((await dig(P, 'web._tcp.service.registry', 'SRV')).status, 'NXDOMAIN', 'a label without _ under _tcp is no name');
});

t.test('more capability labels to the left: services with all of them', async (t) => {
  const both = ['1 1 443 app.example.com.', '1 1 8080 Abc123.addr.registry.'];
  t.same(srvs(await dig(P, 'api.web.service.registry', 'SRV')), both);
  t.same(srvs(await dig(P, 'web.api.service.registry', 'SRV')), both, 'in any order');
  t.same(srvs(await dig(P, '_api._web._tcp.service.registry', 'SRV')), both);
  const none = await dig(P, 'db.web.service.registry', 'SRV');
  t.equal(none.status, 'NXDOMAIN', 'no service has both');
  t.equal(none.authority[0]?.type, 'SOA');
});

t.test('A and AAAA on a service name: its IP-literal endpoints', async (t) => {
  const a = await dig(P, 'web.service.registry', 'A');
  t.same(a.answer.map((x) => `${x.type} ${x.data}`), ['A 10.0.0.1']);
  const aaaa = await dig(P, 'web.service.registry', 'AAAA');
  t.same(aaaa.answer.map((x) => `${x.type} ${x.data}`), ['AAAA 2001:db8::1']);
});

t.test('addr names answer A / AAAA themselves, whatever the case of the id', async (t) => {
  const a = await dig(P, 'Abc123.addr.registry', 'A');
  t.same(a.answer.map((x) => `${x.name} ${x.data}`), ['Abc123.addr.registry. 10.0.0.1']);
  t.same((await dig(P, 'ABC123.addr.registry', 'A')).answer.map((x) => x.data), ['10.0.0.1']);
  t.same((await dig(P, 'v6svc.addr.registry', 'AAAA')).answer.map((x) => x.data), ['2001:db8::1']);
  const other = await dig(P, 'v6svc.addr.registry', 'A');
  t.equal(other.status, 'NOERROR', 'an IPv6 addr name has no A');
  t.same(other.answer, []);
  t.equal(other.authority[0]?.type, 'SOA');
  t.equal((await dig(P, 'named1.addr.registry', 'A')).status, 'NXDOMAIN', 'a host name endpoint has no addr name');
  t.equal((await dig(P, 'nobody.addr.registry', 'A')).status, 'NXDOMAIN');
});

t.test('an unknown name in the zone: NXDOMAIN with the SOA', async (t) => {
  for (const name of ['nothing.service.registry', 'x.registry', 'a.b.addr.registry', 'x.ns.registry', 'we.b.service.registry']) {
    const r = await dig(P, name, 'SRV');
    t.equal(r.status, 'NXDOMAIN', name);
    t.ok(r.flags.includes('aa'), `${name}: authoritative`);
    t.same(r.authority.map((a) => `${a.name} ${a.type} ${a.data}`), ['registry. SOA ns.registry. hostmaster.registry. 1 3600 600 86400 5'], `${name}: the SOA`);
  }
});

t.test('a known name without records of the type: NOERROR, empty, with the SOA', async (t) => {
  for (const [name, type] of [['db.service.registry', 'A'], ['web.service.registry', 'TXT'], ['service.registry', 'SRV'], ['_tcp.service.registry', 'SRV'], ['addr.registry', 'A'], ['registry', 'A']] as const) {
    const r = await dig(P, name, type);
    t.equal(r.status, 'NOERROR', `${name} ${type}`);
    t.same(r.answer, [], `${name} ${type}: no answer`);
    t.equal(r.authority[0]?.type, 'SOA', `${name} ${type}: the SOA`);
  }
});

t.test('the apex: SOA and NS', async (t) => {
  t.same((await dig(P, 'registry', 'SOA')).answer.map((a) => a.data), ['ns.registry. hostmaster.registry. 1 3600 600 86400 5']);
  const ns = await dig(P, 'registry', 'NS');
  t.same(ns.answer.map((a) => a.data), ['ns.registry.']);
  t.same(ns.additional.map((a) => `${a.name} ${a.data}`), ['ns.registry. 127.0.0.1'], 'the listening address as glue');
  t.same((await dig(P, 'ns.registry', 'A')).answer.map((a) => a.data), ['127.0.0.1']);
});

t.test('ANY gets one type (RFC 8482): SRV on a service name, the address on an addr name', async (t) => {
  t.same(srvs(await dig(P, 'web.service.registry', 'ANY')), WEB_SRV);
  t.same((await dig(P, 'web.service.registry', 'ANY')).answer.map((a) => a.type).filter((x) => x !== 'SRV'), []);
  t.same((await dig(P, 'v6svc.addr.registry', 'ANY')).answer.map((a) => `${a.type} ${a.data}`), ['AAAA 2001:db8::1']);
});

t.test('outside the zone: REFUSED, not authoritative', async (t) => {
  for (const name of ['example.com', 'registry.example', 'service.registry.example', '.']) {
    const r = await dig(P, name, 'A');
    t.equal(r.status, 'REFUSED', name);
    t.notOk(r.flags.includes('aa'), `${name}: not authoritative`);
  }
});

t.test('opcodes other than QUERY: NOTIMP', async (t) => {
  for (const op of ['status', 'notify', 'update', '3']) {
    const r = await dig(P, 'web.service.registry', 'SRV', `+opcode=${op}`, '+noedns');
    t.equal(r.status, 'NOTIMP', op);
  }
});

t.test('names are case-insensitive; the question comes back as asked', async (t) => {
  const r = await dig(P, 'WeB.SeRvIcE.ReGiStRy', 'SRV');
  t.same(srvs(r), WEB_SRV);
  t.match(r.text, /;WeB\.SeRvIcE\.ReGiStRy\.\s+IN\s+SRV/);
  t.same(srvs(await dig(P, '_WEB._TCP.Service.REGISTRY', 'SRV')), WEB_SRV);
  t.equal((await dig(P, 'NOTHING.SERVICE.REGISTRY', 'SRV')).status, 'NXDOMAIN');
});

t.test('UDP: 512 bytes without EDNS0, TC when answers were left out', async (t) => {
  const r = await dig(P, 'big.service.registry', 'SRV', '+noedns', '+ignore');
  t.ok(r.flags.includes('tc'), 'TC');
  t.ok(size(r.text) <= 512, `${size(r.text)} bytes`);
  t.ok(r.answer.length > 0 && r.answer.length < 200, `${r.answer.length} of 200 answers`);
  t.equal(r.additional.length, r.answer.length, 'each SRV kept with its glue');
  const small = await dig(P, 'web.service.registry', 'SRV', '+noedns', '+ignore');
  t.notOk(small.flags.includes('tc'), 'no TC when everything fits');
});

t.test('UDP: the EDNS0 size the query advertises, at most 4096, and an OPT record back', async (t) => {
  const at1232 = await dig(P, 'big.service.registry', 'SRV', '+bufsize=1232', '+ignore');
  t.ok(at1232.flags.includes('tc'));
  t.ok(size(at1232.text) <= 1232 && size(at1232.text) > 512, `${size(at1232.text)} bytes`);
  t.match(at1232.edns ?? '', /version: 0/, 'OPT echoed');
  const at16k = await dig(P, 'big.service.registry', 'SRV', '+bufsize=16000', '+ignore');
  t.ok(size(at16k.text) <= 4096 && size(at16k.text) > 3500, `${size(at16k.text)} bytes: 16000 asked, 4096 at most`);
  t.ok(at16k.flags.includes('tc'));
  const tiny = await dig(P, 'big.service.registry', 'SRV', '+bufsize=100', '+ignore');
  t.ok(size(tiny.text) <= 512 && size(tiny.text) > 400, 'an advertised size under 512 is 512');
});

t.test('TCP: the whole answer; dig retries over TCP on its own after TC', async (t) => {
  const r = await dig(P, 'big.service.registry', 'SRV', '+tcp');
  t.notOk(r.flags.includes('tc'));
  t.equal(r.answer.length, 200);
  t.equal(r.additional.filter((a) => a.type === 'A').length, 200);
  const retried = await dig(P, 'big.service.registry', 'SRV', '+noedns');
  t.equal(retried.answer.length, 200, 'a truncated UDP answer followed by TCP');
  t.match(retried.text, /Truncated, retrying in TCP mode/);
  t.equal((await dig(P, 'big.service.registry', 'A', '+tcp')).answer.length, 200);
});

t.test('TCP answers stop at maxRecords, without TC', async (t) => {
  const capped = await startDns(t, { source, maxRecords: 50 });
  const r = await dig(capped.port, 'big.service.registry', 'SRV', '+tcp');
  t.equal(r.answer.length, 50);
  t.notOk(r.flags.includes('tc'));
});

t.test('records in a new random order for each answer', async (t) => {
  const orders = new Set<string>();
  for (let i = 0; i < 20; i++) orders.add((await dig(P, 'web.service.registry', 'SRV')).answer.map((a) => a.data).join('|'));
  t.ok(orders.size > 1, `${orders.size} orders in 20 answers`);
});

t.test('the domain and TTL are options', async (t) => {
  const other = await startDns(t, { source, domain: 'Disco.Example.', ttl: 30 });
  const r = await dig(other.port, 'web.service.disco.example', 'SRV');
  t.ok(r.answer.length === 3 && r.answer.every((a) => a.ttl === 30), 'TTL 30');
  t.ok(srvs(r).includes('1 1 8080 Abc123.addr.disco.example.'));
  t.equal((await dig(other.port, 'web.service.registry', 'SRV')).status, 'REFUSED');
  t.match((await dig(other.port, 'nothing.disco.example', 'A')).authority[0]?.data ?? '', / 30$/, 'SOA minimum is the TTL');
});

t.test('a failing source: SERVFAIL, and the server goes on', async (t) => {
  // a rejected promise, then a list given at once and a failure thrown
  for (const sync of [false, true]) {
    source.sync = sync;
    source.failing = true;
    try {
      t.equal((await dig(P, 'web.service.registry', 'SRV')).status, 'SERVFAIL', `sync ${sync}`);
      t.equal((await dig(P, 'web.service.registry', 'SRV', '+tcp')).status, 'SERVFAIL', `sync ${sync}, tcp`);
    } finally {
      source.failing = false;
    }
    t.same(srvs(await dig(P, 'web.service.registry', 'SRV')), WEB_SRV, `sync ${sync}: answered again`);
    t.same(srvs(await dig(P, 'web.service.registry', 'SRV', '+tcp')), WEB_SRV, `sync ${sync}: answered again, tcp`);
  }
  source.sync = false;
});

t.test('the metrics hook counts answers by rcode and transport', async (t) => {
  t.ok((metrics.answers['NOERROR/udp'] ?? 0) > 10);
  t.ok((metrics.answers['NXDOMAIN/udp'] ?? 0) > 0);
  t.ok((metrics.answers['REFUSED/udp'] ?? 0) > 0);
  t.ok((metrics.answers['NOTIMP/udp'] ?? 0) > 0);
  t.ok((metrics.answers['NOERROR/tcp'] ?? 0) > 0);
  t.ok((metrics.answers['SERVFAIL/tcp'] ?? 0) > 0);
});
