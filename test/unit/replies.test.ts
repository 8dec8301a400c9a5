// redis/replies.ts: the one place script replies become typed values. Each parser passes the
// shapes its script answers and refuses any other with an error naming the script.
import t from 'tap';
import { decodeBuckets, encodeSets } from '../../src/workers/buckets.js';
import { HEAVY, indexPageReply, integer, leaseSweepReply, nearLoadReply, NOT_INDEXED, pollReply, rateLimitReply, replacementsReply, searchPage, searchReply, serviceReply, UnexpectedReply } from '../../src/hot/redis/replies.js';

t.test('integers', async (t) => {
  t.equal(integer(3, 'count'), 3);
  t.equal(integer(NOT_INDEXED, 'apply-service'), -1);
  t.throws(() => integer('3', 'count'), UnexpectedReply);
  t.throws(() => integer(null, 'apply-sandbox'), /apply-sandbox\.lua/);
});

t.test('search: not indexed, heavy, a page', async (t) => {
  t.equal(searchReply(-1), NOT_INDEXED);
  t.same(searchReply<string>([HEAVY, 7]), [-2, 7]);
  t.same(searchReply<string>([0, 1, '5', '{}']), [0, 1, '5', '{}']);
  t.throws(() => searchReply(0), /search\.lua/);
  t.throws(() => searchReply('OK'), UnexpectedReply);
});

t.test('search, named: not indexed, heavy, a page, more', async (t) => {
  t.equal(searchPage(-1), NOT_INDEXED);
  t.same(searchPage<string>([HEAVY, 7]), { heavy: true, version: '7' });
  t.same(searchPage<string>([0, '9', 5, '{"a":1}', 9, '{"b":2}']), { heavy: false, more: false, last: '9', seqs: ['5', '9'], docs: ['{"a":1}', '{"b":2}'] });
  t.same(searchPage<string>([1, '5', 5, '{}']), { heavy: false, more: true, last: '5', seqs: ['5'], docs: ['{}'] });
  t.same(searchPage<string>([0, '']), { heavy: false, more: false, last: '', seqs: [], docs: [] }, 'an empty page');
  const doc = Buffer.from('{}');
  t.same(searchPage<Buffer>([0, '3', Buffer.from('3'), doc]), { heavy: false, more: false, last: '3', seqs: ['3'], docs: [doc] });
  t.throws(() => searchPage([0, '3', 3]), /search\.lua/, 'a seq without its document');
  t.throws(() => searchPage([0]), UnexpectedReply);
});

t.test('rows: get-service and replacements', async (t) => {
  t.equal(serviceReply(-1), NOT_INDEXED);
  t.equal(serviceReply(0), null, 'no such service');
  t.same(serviceReply(['1', '{}', '']), { seq: '1', doc: '{}', hdr: '' });
  t.throws(() => serviceReply(['1', '{}']), /get-service\.lua/, 'a field missing');
  t.throws(() => serviceReply(2), /get-service\.lua/);
  t.equal(replacementsReply(-1), NOT_INDEXED);
  t.equal(replacementsReply(0), null);
  t.same(replacementsReply(['HIT', '[]', '"e"', '1700000000000', 'dep']), { status: 'HIT', body: '[]', etag: '"e"', storedAt: 1700000000000, hdr: 'dep' });
  t.same(replacementsReply(['MISS', '[{}]', '"f"', '5', '']), { status: 'MISS', body: '[{}]', etag: '"f"', storedAt: 5, hdr: '' });
  t.throws(() => replacementsReply(['HOT', '[]', '"e"', '5', '']), /replacements\.lua/, 'an unknown status');
  t.throws(() => replacementsReply(['HIT', '[]', '"e"', 'x', '']), /replacements\.lua/, 'a stored-at time that is not a number');
  t.throws(() => replacementsReply(['HIT', '[]', '"e"', '5']), /replacements\.lua/, 'the header field missing');
  t.throws(() => replacementsReply(2), /replacements\.lua/);
});

t.test('near-load and index-page', async (t) => {
  t.equal(nearLoadReply(-1), null);
  const b = (x: string | number[]) => Buffer.from(x as string);
  t.same(nearLoadReply([b('12'), b('-1'), b('3'), b([0, 9])]), { ver: 12, next: -1, buckets: [['3', b([0, 9])]] });
  t.same(nearLoadReply([b('12'), b('64'), b('3'), b([0, 9])]), { ver: 12, next: 64, buckets: [['3', b([0, 9])]] }, 'a slice, the next one from bucket 64');
  t.same(nearLoadReply([b('12'), b('-1')]), { ver: 12, next: -1, buckets: [] }, 'an empty set');
  t.throws(() => nearLoadReply([]), /near-load/);
  t.throws(() => nearLoadReply([b('12')]), /near-load/, 'no next slice');
  t.throws(() => nearLoadReply([b('12'), b('x')]), /near-load/, 'a next slice that is not a bucket');
  t.throws(() => nearLoadReply([b('12'), b('-1'), b('3')]), /near-load/, 'a bucket without its offsets');
  t.throws(() => nearLoadReply([12, '-1', '3', '9']), /near-load/, 'strings: called without Buffer');
});

t.test('bucket decoding', async (t) => {
  // bucket 1 holds 4096 + 0 and 4096 + 258; bucket 0 holds 5; "n" and "hi" are not buckets
  const pairs: [string, Buffer][] = [['1', Buffer.from([0, 0, 1, 2])], ['n', Buffer.from('3')], ['0', Buffer.from([0, 5])], ['hi', Buffer.from('1')]];
  t.same(Array.from(decodeBuckets(pairs)), [5, 4096, 4354]);
  t.same(Array.from(decodeBuckets([])), []);
  t.equal(indexPageReply(-1), NOT_INDEXED);
  t.equal(indexPageReply([2]), null);
  t.same(indexPageReply([-2, 1, 'a', 'b', 'c']), { skip: ['a'], left: ['b', 'c'] });
  t.same(indexPageReply([-2, 0, 'b']), { skip: [], left: ['b'] });
  t.throws(() => indexPageReply([-2, 3, 'a']));
  // encodeSets is decodeBuckets' inverse over ascending seqs, bucket boundaries included
  const seqs = [0, 1, 4095, 4096, 4354, 8191, 40960 * 3 + 7];
  const { index, blob } = encodeSets([['c:x', seqs], ['p:k:v', [5]]], seqs.length + 1);
  t.equal(index, 'c:x\n0\n3\nc:x\n1\n3\nc:x\n30\n1\np:k:v\n0\n1\n');
  t.equal(blob.length, 2 * (seqs.length + 1));
  const lines = index.trim().split('\n');
  const enc: [string, Buffer][] = [];
  for (let i = 0, at = 0; i < 9; i += 3) {
    enc.push([lines[i + 1]!, blob.subarray(at, at + 2 * Number(lines[i + 2]))]);
    at += 2 * Number(lines[i + 2]);
  }
  t.same(Array.from(decodeBuckets(enc)), seqs);
  t.same([...blob.subarray(blob.length - 2)], [0, 5]);
});

t.test('rate-limit and poll-data', async (t) => {
  t.equal(rateLimitReply([-1]), NOT_INDEXED);
  t.same(rateLimitReply([1, 60, 1, 0, 5, 3, 7, 4000, 0]), { admitted: true, limit: 60, used: 1, retryAfter: 0, reset: 5, granted: 3, bucket: 7, leftMs: 4000, retryAfterMs: 0 });
  t.same(rateLimitReply([0, 60, 60, 4, 4, 0, 7, 4000, 3500]), { admitted: false, limit: 60, used: 60, retryAfter: 4, reset: 4, granted: 0, bucket: 7, leftMs: 4000, retryAfterMs: 3500 });
  t.throws(() => rateLimitReply([1, 60, 1]), /rate-limit/, 'a short reply (script and caller out of step)');
  t.throws(() => rateLimitReply([2, 60, 1, 0, 5, 3, 7, 4000, 0]), /rate-limit/, 'admitted is 1 or 0');
  t.throws(() => rateLimitReply([1, '60']), /rate-limit/);
  t.throws(() => rateLimitReply(-1), UnexpectedReply);
  t.equal(pollReply([-1]), null);
  t.same(pollReply([60, 12, 2, 'free', 3, 4]), { limit: 60, total: 12, rejected: 2, tier: 'free', buckets: [3, 4] });
  t.throws(() => pollReply([60, 12]), /poll-data/);
});

t.test('lease-sweep: another holder, due leases with the flip flag', async (t) => {
  t.equal(leaseSweepReply(-1), null);
  const got = leaseSweepReply(['s1', '1000', '7|production|ab|10|c|0|1200', '1', 's2', '900', '8|production|ab|10|c|0|800', '0']);
  t.same(got, [
    { id: 's1', due: 1000, lease: { rev: 7, ns: 'production', tokenHash: 'ab', ttl: 10, status: 'critical', deregisterAfter: 0, criticalSince: 1200 }, flipped: true },
    { id: 's2', due: 900, lease: { rev: 8, ns: 'production', tokenHash: 'ab', ttl: 10, status: 'critical', deregisterAfter: 0, criticalSince: 800 }, flipped: false },
  ]);
  t.throws(() => leaseSweepReply(['s1', '1000', '7|production|ab|10|c|0|1200']), UnexpectedReply, 'a triple (the old reply) is refused');
  t.throws(() => leaseSweepReply(['s1', '1000', '7|production|ab|10|c|0|1.2e+12', '1']), UnexpectedReply, 'a record with a non-integer time is refused');
});
