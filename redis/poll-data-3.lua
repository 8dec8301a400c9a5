-- poll-data: what GET /sandbox/{uuid}/poll shows, read in one round trip. Reading does
-- not count as a request. Buckets come from Redis's TIME, as in rate-limit-4.lua.
-- KEYS[1]  sb:{uuid}     hash: name, tier, limit
-- KEYS[2]  rl:{uuid}:h   hash: bucket -> all requests
-- KEYS[3]  rl:{uuid}:t   hash: total, rejected
-- ARGV[1]  buckets       how many buckets of history, newest last (72 = six minutes)
-- ARGV[2]  bucket length (ms): src/hot/ratelimit/window.ts
-- Returns { limit, total, rejected, tier, c1 .. cN } or { -1 } for an unknown sandbox
local limit = redis.call('HGET', KEYS[1], 'limit')
if not limit then return { -1 } end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local n = tonumber(ARGV[1])
local b = math.floor(now / tonumber(ARGV[2]))
local fields = {}
for i = b - n + 1, b do fields[#fields + 1] = i end
local counts = redis.call('HMGET', KEYS[2], unpack(fields))
local t = redis.call('HMGET', KEYS[3], 'total', 'rejected')
local out = { tonumber(limit), tonumber(t[1] or '0'), tonumber(t[2] or '0'), redis.call('HGET', KEYS[1], 'tier') or '' }
for i = 1, n do out[#out + 1] = tonumber(counts[i] or '0') end
return out
