-- heartbeat: check heartbeat tokens and renew leases, a batch of one shard at a time (the
-- serving thread collects the heartbeats of one event-loop turn: liveness/heartbeat-batch.ts).
-- A heartbeat that does not change the status ends here: nothing durable, no document touched.
-- KEYS[1]  lv:{shard}:l   hash id -> lease record (lib/lease.lua)
-- KEYS[2]  lv:{shard}:d   sorted set id -> deadline (ms)
-- ARGV[1]  now (ms)
-- then 5 arguments per heartbeat, in order:
--   id
--   sha256 hex of the token presented
--   wanted status p | c
--   check only ("1": answer as below but renew nothing; a sandbox's heartbeat whose token
--   this thread has not seen accepted is counted against its rate limit between the check
--   and the renewal)
--   the namespace of the route (a token of another namespace's service is not this one's)
-- Returns an array, one integer per heartbeat in order: 0 renewed, status unchanged; 1 the
-- status must change (a durable write, by the caller; a passing heartbeat has renewed the
-- deadline already); -1 no lease here; -2 not this service's token.
--@include lease.lua
local now = tonumber(ARGV[1])
local out = {}
for i = 2, #ARGV, 5 do
  local id = ARGV[i]
  local l = leaseParse(redis.call('HGET', KEYS[1], id))
  local r
  if not l then
    r = -1
  elseif l.tok == '' or l.tok ~= ARGV[i + 1] or l.ns ~= ARGV[i + 4] then
    r = -2
  else
    r = (l.st ~= ARGV[i + 2]) and 1 or 0
    if ARGV[i + 3] ~= '1' and ARGV[i + 2] == 'p' then redis.call('ZADD', KEYS[2], now + l.ttl * 1000, id) end
  end
  out[#out + 1] = r
end
return out
