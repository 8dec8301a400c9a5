// A script call written into one buffer (redis/prebuilt.ts) against the suite's real Redis:
// its reply is ioredis's, and a Redis that lost its scripts (SCRIPT FLUSH, as a restart) gets
// the call the ordinary way, which loads the script for the calls after it.
import t from 'tap';
import { randomBytes } from 'node:crypto';
import { scriptSource } from '../../src/hot/redis/client.js';
import { evalshaPrebuilt } from '../../src/hot/redis/prebuilt.js';
import { suiteRedis } from '../helpers/test-data.js';

t.test('replies as ioredis does; NOSCRIPT goes the ordinary way once', async (t) => {
  const redis = suiteRedis(t);
  const key = 'tpb' + randomBytes(4).toString('hex') + ':k';
  t.teardown(() => redis.del(key).then(() => undefined));
  const src = scriptSource('del-if-equal-1.lua');
  let ordinary = 0;
  const call = (value: string) =>
    evalshaPrebuilt(redis, src, 1, [key, value], () => {
      ordinary++;
      return redis.delIfEqual(key, value);
    });
  await redis.set(key, 'v1');
  await redis.delIfEqual(key, 'other'); // the script is loaded
  t.equal(await call('other'), 0, 'not equal: kept');
  t.equal(await redis.get(key), 'v1');
  t.equal(await call('v1'), 1, 'equal: deleted');
  t.equal(ordinary, 0, 'written as one buffer');
  await redis.set(key, 'v2');
  await redis.script('FLUSH');
  t.equal(await call('v2'), 1, 'after SCRIPT FLUSH: answered');
  t.equal(ordinary, 1, 'by the ordinary call');
  await redis.set(key, 'v3');
  t.equal(await call('v3'), 1);
  t.equal(ordinary, 1, 'which loaded the script again');
  await redis.hset(key, 'f', 'v'); // GET in the script: WRONGTYPE
  await t.rejects(call('v'), /WRONGTYPE/, 'an error of the script is thrown');
  t.equal(ordinary, 1, 'not sent again the ordinary way');
});
