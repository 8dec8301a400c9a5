-- heartbeat: check heartbeat tokens and renew leases, a batch of one shard at a time (the
-- serving thread collects the heartbeats of one event-loop turn: liveness/heartbeat-batch.ts).
-- A heartbeat that does not change the status ends here: nothing durable, no document touched.
-- KEYS[1]  lv:{shard}:l   hash id -> lease record (lib/lease.lua)
-- KEYS[2]  lv:{shard}:d   sorted set id -> deadline (ms)
-- ARGV[1]  now (ms)
-- ARGV[2]  the heartbeats, one line each (one argument for the batch: the client encodes
--          each argument on its own, which cost more than the script), fields by one space:
--   id                       1-64 of [A-Za-z0-9_-]
--   sha256 hex of the token presented
--   wanted status            p | c
--   check only               1: answer as below but renew nothing (a sandbox's heartbeat
--                            whose token this thread has not seen accepted is counted against
--                            its rate limit between the check and the renewal); 0: renew
--   the namespace of the route (a token of another namespace's service is not this one's)
-- Returns an array, one integer per line in order: 0 renewed, status unchanged; 1 the
-- status must change (a durable write, by the caller; a passing heartbeat has renewed the
-- deadline already); -1 no lease here; -2 not this service's token. A line of another shape
-- is answered -2 and renews nothing (the client sends none: its count would not match).
--@include heartbeat.lua
local out = {}
heartbeatLines(KEYS[1], KEYS[2], tonumber(ARGV[1]), ARGV[2], out, 0)
return out
