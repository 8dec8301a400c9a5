-- rate-limit: count one request of a sandbox against its sliding window (twelve 5-second
-- buckets: ARGV[4..8]), record it in the poll history, and (for high limits) lease the
-- calling thread a few more admissions of the current bucket. The limit is read here,
-- from the sandbox hash, so that a tier change applies to the next request that asks.
-- One clock: buckets come from Redis's own TIME (the node holding this sandbox's slot),
-- never from the caller's, so servers whose clocks disagree count into the same buckets.
-- Every duration in the reply is relative to that clock's now.
-- KEYS[1]  sb:{uuid}        hash: name, tier, limit
-- KEYS[2]  rl:{uuid}:w      hash: bucket -> admitted (and leased) requests: the window
-- KEYS[3]  rl:{uuid}:h      hash: bucket -> all requests (72-bucket history for /poll)
-- KEYS[4]  rl:{uuid}:t      hash: total, rejected
-- ARGV[1]  want: admissions to take at once, this request's included (default 1). The
--          window counts them now; the thread answers want-1 more requests of this bucket
--          without asking (see src/hot/ratelimit/admission.ts, docs/decisions/admission-batches.md)
-- ARGV[2]  requests the thread answered under its lease and has not recorded yet (history)
-- ARGV[3]  unused admissions of the thread's previous leases, given back to the window:
--          "bucket:count,bucket:count" ("" none; buckets as this script reported them)
-- ARGV[4..8] the clock, from src/hot/ratelimit/window.ts: bucket length (ms), window
--          buckets (12), window TTL (s), history buckets (72), history TTL (s)
-- ARGV[9]  need: requests this call counts at once, all admitted or all refused (a batch
--          of registrations counts one per service; default 1). With need > 1 no lease is
--          granted beyond them, and a refusal's retry time is when the window has room for
--          all of them (never within a window when need exceeds the limit: a full window).
--          need 0: a thread asking for its next batch ahead (leases.ts, prefetch): no
--          request is counted or recorded, only the batch (admitted while the window has
--          room for one more; `used` is then the count before the batch)
-- Returns { admitted (1/0), limit, used in window (after this request), retryAfter s,
--           reset s (until the oldest counted bucket leaves the window), granted,
--           bucket (the bucket counted in: an id for refunds, not a time),
--           ms left in that bucket, ms until the window can admit again (0 if admitted) },
-- or { -1 } when the sandbox is unknown to Redis.
local limit = tonumber(redis.call('HGET', KEYS[1], 'limit'))
if not limit then return { -1 } end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local need = math.max(0, tonumber(ARGV[9] or '1'))
local want = math.max(need, tonumber(ARGV[1] or '1'))
local pending = tonumber(ARGV[2] or '0')
local bucketMs = tonumber(ARGV[4])
local windowN = tonumber(ARGV[5])
local windowTtl = tonumber(ARGV[6])
local historyN = tonumber(ARGV[7])
local historyTtl = tonumber(ARGV[8])
local b = math.floor(now / bucketMs)
local left = (b + 1) * bucketMs - now
for rb, n in string.gmatch(ARGV[3] or '', '(%d+):(%d+)') do
  rb = tonumber(rb)
  if rb > b - windowN then
    -- (a bucket that left the window is gone from it already)
    local have = tonumber(redis.call('HGET', KEYS[2], rb) or '0')
    local give = math.min(have, tonumber(n))
    if give > 0 then redis.call('HINCRBY', KEYS[2], rb, -give) end
  end
end
local fields = {}
for i = b - windowN + 1, b do fields[#fields + 1] = i end
local counts = redis.call('HMGET', KEYS[2], unpack(fields))
local used, oldest = 0, nil
for i, c in ipairs(counts) do
  local n = tonumber(c or '0')
  if n > 0 then
    used = used + n
    if not oldest then oldest = fields[i] end
  end
end
-- add n to bucket b of a bucket hash that keeps its newest `keep` buckets (the older ones
-- go once it holds more than `max`) and lives `ttl` seconds past its last request
local function addToBucket(key, n, keep, max, ttl)
  redis.call('HINCRBY', key, b, n)
  redis.call('EXPIRE', key, ttl)
  if redis.call('HLEN', key) > max then
    for _, f in ipairs(redis.call('HKEYS', key)) do
      if tonumber(f) <= b - keep then redis.call('HDEL', key, f) end
    end
  end
end
if need + pending > 0 then
  redis.call('HINCRBY', KEYS[4], 'total', need + pending)
  addToBucket(KEYS[3], need + pending, historyN, historyN + historyN / 3, historyTtl)
end
local function msUntilLeaves(bucket)
  return math.max(1, (bucket + windowN) * bucketMs - now)
end
local function untilLeaves(bucket)
  return math.max(1, math.ceil(msUntilLeaves(bucket) / 1000))
end
if used + math.max(need, 1) > limit then
  if need > 0 then redis.call('HINCRBY', KEYS[4], 'rejected', need) end
  -- the window frees room when its oldest admitted bucket slides out
  local retryMs = oldest and msUntilLeaves(oldest) or left
  if need > 1 then
    -- room for all `need`: when enough of the oldest buckets have slid out
    retryMs = windowN * bucketMs
    local free = limit - used
    for i, c in ipairs(counts) do
      free = free + tonumber(c or '0')
      if need <= limit and free >= need then
        retryMs = msUntilLeaves(fields[i])
        break
      end
    end
  end
  local retry = math.max(1, math.ceil(retryMs / 1000))
  return { 0, limit, used, retry, retry, 0, b, left, retryMs }
end
local granted = math.min(want, limit - used)
addToBucket(KEYS[2], granted, windowN, windowN + windowN / 3, windowTtl)
return { 1, limit, used + need, 0, untilLeaves(oldest or b), granted, b, left, 0 }
