// The client address behind trusted proxies (TRUSTED_PROXIES): X-Forwarded-For is believed
// only from a trusted connection, walked from the right past trusted hops.
import t from 'tap';
import { clientAddress, normalizeAddress } from '../../src/hot/domain/client-address.js';

const T = new Set(['127.0.0.1', '::1', '10.0.0.2']);

t.test('normalised spellings', async (t) => {
  t.equal(normalizeAddress('0000:0000:0000:0000:0000:0000:0000:0001'), '::1');
  t.equal(normalizeAddress('::ffff:127.0.0.1'), '127.0.0.1');
  t.equal(normalizeAddress('0000:0000:0000:0000:0000:ffff:7f00:0001'), '127.0.0.1');
  t.equal(normalizeAddress(' [2001:DB8::1] '), '2001:db8::1');
  t.equal(normalizeAddress('203.0.113.9'), '203.0.113.9');
});

t.test('an untrusted connection is its own address, whatever it claims', async (t) => {
  t.equal(clientAddress('203.0.113.9', '198.51.100.1', '198.51.100.2', T), '203.0.113.9');
  t.equal(clientAddress('203.0.113.9', '', '', new Set()), '203.0.113.9');
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
});
