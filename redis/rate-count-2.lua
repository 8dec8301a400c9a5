-- rate-count: record requests a thread answered without asking Redis in the poll history
-- and the total: those it admitted under its rate-limit lease (their admission was counted
-- in the window when the lease was taken) and those it refused locally while it knew the
-- sandbox over its limit (counted as rejected too). Sent once per event-loop turn per
-- sandbox, not once per request. The bucket
-- comes from Redis's TIME, as in rate-limit-4.lua (one clock).
-- KEYS[1]  rl:{uuid}:h      hash: bucket -> all requests
-- KEYS[2]  rl:{uuid}:t      hash: total, rejected
-- ARGV[1]  requests to record (all of them, refused ones included)
-- ARGV[2]  bucket length (ms), ARGV[3] history TTL (s): src/hot/domain/rate-window.ts
-- ARGV[4]  how many of them were refused (default 0)
local t = redis.call('TIME')
local b = math.floor((tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)) / tonumber(ARGV[2]))
local n = tonumber(ARGV[1])
local rejected = tonumber(ARGV[4] or '0')
redis.call('HINCRBY', KEYS[2], 'total', n)
if rejected > 0 then redis.call('HINCRBY', KEYS[2], 'rejected', rejected) end
redis.call('HINCRBY', KEYS[1], b, n)
redis.call('EXPIRE', KEYS[1], tonumber(ARGV[3]))
return n
