-- heartbeat: check a service's heartbeat token and renew its lease. A heartbeat that does
-- not change the status ends here: nothing durable, no document touched.
-- KEYS[1]  lv:{shard}:l   hash id -> lease record (lib/lease.lua)
-- KEYS[2]  lv:{shard}:d   sorted set id -> deadline (ms)
-- ARGV[1]  id
-- ARGV[2]  sha256 hex of the token presented
-- ARGV[3]  now (ms)
-- ARGV[4]  wanted status p | c
-- ARGV[5]  check only ("1": answer as below but renew nothing; a sandbox's heartbeat is
--          counted against its rate limit between the check and the renewal)
-- ARGV[6]  the namespace of the route (a token of another namespace's service is not this one's)
-- Returns 0 renewed, status unchanged; 1 the status must change (a durable write, by the
-- caller; a passing heartbeat has renewed the deadline already); -1 no lease here;
-- -2 not this service's token.
--@include lease.lua
local id = ARGV[1]
local l = leaseParse(redis.call('HGET', KEYS[1], id))
if not l then return -1 end
if l.tok == '' or l.tok ~= ARGV[2] or l.ns ~= ARGV[6] then return -2 end
local change = (l.st ~= ARGV[4]) and 1 or 0
if ARGV[5] == '1' then return change end
if ARGV[4] == 'p' then redis.call('ZADD', KEYS[2], tonumber(ARGV[3]) + l.ttl * 1000, id) end
return change
