-- lease-apply: make one service's lease in Redis equal to a state read from PostgreSQL,
-- unless a newer state was applied (the revision rule of apply-service-1.lua: services.
-- version, or the tombstone's). Called by the projector after every write it applies and
-- by the rebuild (fresh = 1: only where no lease is, so that after a loss of Redis every
-- lease starts a full ttl, and a reindex of an intact Redis leaves deadlines alone).
-- KEYS[1]  lv:{shard}:l   hash id -> lease record (lib/lease.lua)
-- KEYS[2]  lv:{shard}:d   sorted set id -> when the sweeper looks at it (ms)
-- ARGV[1]  id
-- ARGV[2]  rev
-- ARGV[3]  ns
-- ARGV[4]  token hash hex ("" and ttl 0: no lease; the record goes)
-- ARGV[5]  ttl seconds
-- ARGV[6]  status p | c
-- ARGV[7]  deregisterAfter seconds (0 none)
-- ARGV[8]  critical since (ms, "" none)
-- ARGV[9]  now (ms, the caller's clock)
-- ARGV[10] fresh: "1" only where there is no record
-- Returns 1 applied, 0 stale or kept.
--@include lease.lua
local id, rev, now = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[9])
local cur = leaseParse(redis.call('HGET', KEYS[1], id))
if cur and (cur.rev > rev or ARGV[10] == '1') then return 0 end
if ARGV[5] == '0' then
  redis.call('HDEL', KEYS[1], id)
  redis.call('ZREM', KEYS[2], id)
  return 1
end
local l = { rev = rev, ns = ARGV[3], tok = ARGV[4], ttl = tonumber(ARGV[5]), st = ARGV[6], dereg = tonumber(ARGV[7]), crit = ARGV[8] }
if l.st == 'c' and l.crit == '' then l.crit = tostring(now) end
redis.call('HSET', KEYS[1], id, leaseText(l))
if l.st == 'p' then
  -- a write that leaves a passing lease passing (and its ttl alone) keeps its deadline
  local keep = cur and cur.st == 'p' and cur.ttl == l.ttl and redis.call('ZSCORE', KEYS[2], id)
  if not keep then redis.call('ZADD', KEYS[2], now + l.ttl * 1000, id) end
elseif l.dereg > 0 then
  redis.call('ZADD', KEYS[2], tonumber(l.crit) + l.dereg * 1000, id)
else
  redis.call('ZREM', KEYS[2], id)
end
return 1
