// The client address behind trusted proxies (the proxy's Unix socket, TRUSTED_PROXIES):
// X-Forwarded-For is believed only from a trusted connection, walked from the right past
// trusted hops.
import t from 'tap';
import { clientAddress, normalizeAddress, PROXY_SOCKET_PEER } from '../../src/hot/http/client-address.js';

const T = new Set(['127.0.0.1', '::1', '10.0.0.2']);

t.test('normalised spellings', async (t) => {
  t.equal(normalizeAddress('0000:0000:0000:0000:0000:0000:0000:0001'), '::1');
  t.equal(normalizeAddress('::ffff:127.0.0.1'), '127.0.0.1');
  t.equal(normalizeAddress('0000:0000:0000:0000:0000:ffff:7f00:0001'), '127.0.0.1');
  t.equal(normalizeAddress(' [2001:DB8::1] '), '2001:db8::1');
  t.equal(normalizeAddress('203.0.113.9'), '203.0.113.9');
  t.equal(normalizeAddress('::FFFF:169.254.10.159'), '169.254.10.159', 'IPv4-mapped: ::ffff:a9fe:a9f');
  t.equal(normalizeAddress('::ffff:192.0.2.0'), '192.0.2.0', 'IPv4-mapped: ::ffff:c000:200');
  t.equal(normalizeAddress('::ffff:c633:6409'), '198.51.100.9', 'IPv4-mapped, written in hex');
  t.equal(normalizeAddress('1::ffff:7f00:1'), '1::ffff:7f00:1', 'not IPv4-mapped: a non-zero first group');
  t.equal(normalizeAddress('::ffff:7f00:1:2'), '::ffff:7f00:1:2', 'not IPv4-mapped: one group more');
  t.equal(normalizeAddress('FE80::1%ETH0'), 'fe80::1%eth0', 'a zone id: lower-cased, kept as given');
  t.equal(normalizeAddress('[::1'), '[::1', 'an unclosed bracket is not stripped');
  t.equal(normalizeAddress('::1]'), '::1]', 'nor a closing one alone');
  t.equal(normalizeAddress('::1]/x#['), '::1]/x#[', 'not an address: never read through a URL');
  t.equal(normalizeAddress('Garbage'), 'garbage');
});

t.test('an untrusted connection is its own address, whatever it claims', async (t) => {
  t.equal(clientAddress('203.0.113.9', '198.51.100.1', '198.51.100.2', T), '203.0.113.9');
  t.equal(clientAddress('203.0.113.9', '', '', new Set()), '203.0.113.9');
});

t.test("on the proxy's socket (remote null): trusted by where it arrived, whatever TRUSTED_PROXIES", async (t) => {
  const none = new Set<string>();
  t.equal(clientAddress(null, '198.51.100.7', '', none), '198.51.100.7');
  t.equal(clientAddress(null, '6.6.6.6, 198.51.100.7', '', none), '198.51.100.7', 'a client-written entry at the left is ignored');
  t.equal(clientAddress(null, '', '198.51.100.8', none), '198.51.100.8', 'X-Real-IP when there is no X-Forwarded-For');
  t.equal(clientAddress(null, '198.51.100.7, 10.0.0.2', '', T), '198.51.100.7', 'past a trusted proxy in front of it');
  t.equal(clientAddress(null, '', '', none), PROXY_SOCKET_PEER, 'no header: the proxy itself');
  t.equal(clientAddress(null, '198.51.100.7, garbage', '', none), PROXY_SOCKET_PEER, 'a malformed last hop: the proxy itself');
  t.equal(clientAddress('', '198.51.100.7', '', T), '', 'a TCP peer without an address (reset) is not the proxy');
});

t.test('through trusted proxies: the right-most untrusted hop', async (t) => {
  t.equal(clientAddress('127.0.0.1', '198.51.100.7', '', T), '198.51.100.7');
  t.equal(clientAddress('127.0.0.1', '6.6.6.6, 198.51.100.7', '', T), '198.51.100.7', 'a client-written entry at the left is ignored');
  t.equal(clientAddress('127.0.0.1', '198.51.100.7, 10.0.0.2', '', T), '198.51.100.7', 'past a second trusted proxy');
  t.equal(clientAddress('::ffff:127.0.0.1', '198.51.100.7', '', T), '198.51.100.7', 'an IPv4-mapped proxy address');
  t.equal(clientAddress('127.0.0.1', '', '198.51.100.8', T), '198.51.100.8', 'X-Real-IP when there is no X-Forwarded-For');
  t.equal(clientAddress('127.0.0.1', 'garbage, 198.51.100.7', '', T), '198.51.100.7');
  t.equal(clientAddress('127.0.0.1', '198.51.100.7, garbage', '', T), '127.0.0.1', 'a malformed last hop: the proxy itself');
  t.equal(clientAddress('127.0.0.1', '', '', T), '127.0.0.1', 'no header: the proxy itself');
  t.equal(clientAddress('127.0.0.1', '::1, 127.0.0.1', '', T), '::1', 'all trusted: the left-most');
  t.equal(clientAddress('127.0.0.1', '198.51.100.7, ::1]/x#[', '', T), '127.0.0.1', 'a last hop that only looks like an address ends the walk');
  t.equal(clientAddress('10.0.0.2', '198.51.100.7', '198.51.100.8', T), '198.51.100.7', 'X-Forwarded-For before X-Real-IP');
  t.equal(clientAddress('127.0.0.1', '', 'garbage', T), '127.0.0.1', 'a malformed X-Real-IP: the proxy itself');
  t.equal(clientAddress('127.0.0.1', ' 198.51.100.7 ,  10.0.0.2 ', '', T), '198.51.100.7', 'spaces around hops');
  t.equal(clientAddress('127.0.0.1', '0:0:0:0:0:ffff:c633:6407', '', T), '198.51.100.7', 'a hop in a second spelling is normalised');
});
