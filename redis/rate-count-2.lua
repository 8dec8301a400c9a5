-- rate-count: record requests a thread answered under its rate-limit lease (their
-- admission was counted in the window when the lease was taken) in the poll history and
-- the total. Sent once per event-loop turn per sandbox, not once per request. The bucket
-- comes from Redis's TIME, as in rate-limit-4.lua (one clock).
-- KEYS[1]  rl:{uuid}:h      hash: bucket -> all requests
-- KEYS[2]  rl:{uuid}:t      hash: total, rejected
-- ARGV[1]  requests to record
-- ARGV[2]  bucket length (ms), ARGV[3] history TTL (s): src/hot/domain/rate-window.ts
local t = redis.call('TIME')
local b = math.floor((tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)) / tonumber(ARGV[2]))
local n = tonumber(ARGV[1])
redis.call('HINCRBY', KEYS[2], 'total', n)
redis.call('HINCRBY', KEYS[1], b, n)
redis.call('EXPIRE', KEYS[1], tonumber(ARGV[3]))
return n
