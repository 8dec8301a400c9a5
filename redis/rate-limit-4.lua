-- rate-limit: count one request of a sandbox against its sliding window of twelve
-- 5-second buckets, and record it in the poll history. The limit is read here, from the
-- sandbox hash, so that a tier change applies to the very next request.
-- KEYS[1]  sb:{uuid}        hash: name, tier, limit
-- KEYS[2]  rl:{uuid}:w      hash: bucket -> admitted requests (the window)
-- KEYS[3]  rl:{uuid}:h      hash: bucket -> all requests (72-bucket history for /poll)
-- KEYS[4]  rl:{uuid}:t      hash: total, rejected
-- ARGV[1]  now (ms)
-- Returns { admitted (1/0), limit, used in window (after this request), retryAfter s,
--           reset s (until the oldest counted bucket leaves the window) }, or { -1 } when
-- the sandbox is unknown to Redis.
local limit = tonumber(redis.call('HGET', KEYS[1], 'limit'))
if not limit then return { -1 } end
local now = tonumber(ARGV[1])
local b = math.floor(now / 5000)
local fields = {}
for i = b - 11, b do fields[#fields + 1] = i end
local counts = redis.call('HMGET', KEYS[2], unpack(fields))
local used, oldest = 0, nil
for i, c in ipairs(counts) do
  local n = tonumber(c or '0')
  if n > 0 then
    used = used + n
    if not oldest then oldest = fields[i] end
  end
end
redis.call('HINCRBY', KEYS[4], 'total', 1)
redis.call('HINCRBY', KEYS[3], b, 1)
redis.call('EXPIRE', KEYS[3], 420)
if redis.call('HLEN', KEYS[3]) > 96 then
  for _, f in ipairs(redis.call('HKEYS', KEYS[3])) do
    if tonumber(f) < b - 71 then redis.call('HDEL', KEYS[3], f) end
  end
end
local function untilLeaves(bucket)
  return math.max(1, math.ceil(((bucket + 12) * 5000 - now) / 1000))
end
if used >= limit then
  redis.call('HINCRBY', KEYS[4], 'rejected', 1)
  -- the window frees room when its oldest admitted bucket slides out
  local retry = oldest and untilLeaves(oldest) or 5
  return { 0, limit, used, retry, retry }
end
redis.call('HINCRBY', KEYS[2], b, 1)
redis.call('EXPIRE', KEYS[2], 65)
if redis.call('HLEN', KEYS[2]) > 16 then
  for _, f in ipairs(redis.call('HKEYS', KEYS[2])) do
    if tonumber(f) < b - 11 then redis.call('HDEL', KEYS[2], f) end
  end
end
return { 1, limit, used + 1, 0, untilLeaves(oldest or b) }
