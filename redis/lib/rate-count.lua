-- Recording requests a thread answered without asking Redis (rate-count-2.lua, and
-- heartbeats.lua, which carries a turn's records on a standalone Redis): the poll history's
-- bucket and the sandbox's total. The bucket comes from Redis's TIME, as in rate-limit-4.lua
-- (one clock).
-- The current bucket number, for buckets of `bucketMs`.
local function rateBucket(bucketMs)
  local t = redis.call('TIME')
  return math.floor((tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)) / bucketMs)
end

-- Record `n` requests, `rejected` of them refused, in bucket `b` of the history `hkey`
-- (expiring `ttl` s after the last record) and in the totals `tkey`.
local function rateRecord(hkey, tkey, b, n, rejected, ttl)
  redis.call('HINCRBY', tkey, 'total', n)
  if rejected > 0 then redis.call('HINCRBY', tkey, 'rejected', rejected) end
  redis.call('HINCRBY', hkey, b, n)
  redis.call('EXPIRE', hkey, ttl)
end
