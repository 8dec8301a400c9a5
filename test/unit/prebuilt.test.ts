// The rebuild's page call written straight into one buffer (redis/prebuilt.ts) is byte for byte
// the call ioredis would write for the same arguments: any strings (empty, multi-byte, long,
// with CR/LF or control bytes, as the documents' codes are).
import t from 'tap';
import fc from 'fast-check';
import { Command } from 'ioredis';
import { evalshaBytes } from '../../src/hot/redis/prebuilt.js';

const ioredisBytes = (sha: string, numKeys: number, args: string[]): Buffer => {
  const w = new Command('evalsha', [sha, String(numKeys), ...args]).toWritable({});
  return typeof w === 'string' ? Buffer.from(w) : w;
};

t.test('the bytes ioredis writes', async (t) => {
  const sha = 'a'.repeat(40);
  t.same(evalshaBytes(sha, 1, ['k', '', 'é', 'x'.repeat(12345)]), ioredisBytes(sha, 1, ['k', '', 'é', 'x'.repeat(12345)]), 'a case by hand');
  t.equal(evalshaBytes(sha, 0, []).toString(), `*3\r\n$7\r\nevalsha\r\n$40\r\n${sha}\r\n$1\r\n0\r\n`, 'no arguments');
  fc.assert(
    fc.property(fc.array(fc.oneof(fc.string({ unit: 'binary' }), fc.string({ unit: 'grapheme' }), fc.array(fc.integer({ min: 1, max: 31 }), { maxLength: 30 }).map((cs) => String.fromCharCode(...cs)), fc.nat().map((n) => 'd'.repeat(n % 2000))), { maxLength: 60 }), fc.nat({ max: 3 }), (args, k) => {
      const numKeys = Math.min(k, args.length);
      return evalshaBytes(sha, numKeys, args).equals(ioredisBytes(sha, numKeys, args));
    }),
    { numRuns: 500 },
  );
  t.pass('500 generated calls byte-identical');
});
