-- rate-count: record requests a thread answered under its rate-limit lease (their
-- admission was counted in the window when the lease was taken) in the poll history and
-- the total. Sent once per event-loop turn per sandbox, not once per request. The bucket
-- comes from Redis's TIME, as in rate-limit-4.lua (one clock).
-- KEYS[1]  rl:{uuid}:h      hash: bucket -> all requests
-- KEYS[2]  rl:{uuid}:t      hash: total, rejected
-- ARGV[1]  requests to record
local t = redis.call('TIME')
local b = math.floor((tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)) / 5000)
local n = tonumber(ARGV[1])
redis.call('HINCRBY', KEYS[2], 'total', n)
redis.call('HINCRBY', KEYS[1], b, n)
redis.call('EXPIRE', KEYS[1], 420)
return n
