-- rate-count: record requests a thread answered without asking Redis in the poll history
-- and the total: those it admitted under its rate-limit lease (their admission was counted
-- in the window when the lease was taken) and those it refused locally while it knew the
-- sandbox over its limit (counted as rejected too). Sent once per event-loop turn per
-- sandbox, not once per request; on a standalone Redis a turn that also sends heartbeats
-- carries its records in that call instead (heartbeats.lua).
-- KEYS[1]  rl:{uuid}:h      hash: bucket -> all requests
-- KEYS[2]  rl:{uuid}:t      hash: total, rejected
-- ARGV[1]  requests to record (all of them, refused ones included)
-- ARGV[2]  bucket length (ms), ARGV[3] history TTL (s): src/hot/ratelimit/window.ts
-- ARGV[4]  how many of them were refused (default 0)
--@include rate-count.lua
local n = tonumber(ARGV[1])
rateRecord(KEYS[1], KEYS[2], rateBucket(tonumber(ARGV[2])), n, tonumber(ARGV[4] or '0'), tonumber(ARGV[3]))
return n
