-- rate-count: record requests a thread answered under its rate-limit lease (their
-- admission was counted in the window when the lease was taken) in the poll history and
-- the total. Sent once per event-loop turn per sandbox, not once per request.
-- KEYS[1]  rl:{uuid}:h      hash: bucket -> all requests
-- KEYS[2]  rl:{uuid}:t      hash: total, rejected
-- ARGV[1]  now (ms)
-- ARGV[2]  requests to record
-- ARGV[3]  bucket length (ms), ARGV[4] history TTL (s): src/hot/domain/rate-window.ts
local b = math.floor(tonumber(ARGV[1]) / tonumber(ARGV[3]))
local n = tonumber(ARGV[2])
redis.call('HINCRBY', KEYS[2], 'total', n)
redis.call('HINCRBY', KEYS[1], b, n)
redis.call('EXPIRE', KEYS[1], tonumber(ARGV[4]))
return n
