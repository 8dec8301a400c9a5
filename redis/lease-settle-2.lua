-- lease-settle: the committed expiries of one shard (liveness/store.ts expireMany) recorded in
-- their leases, one call per page instead of a lease-apply per service: the committed
-- revision and critical time, and the due time the critical state has (its deregistration,
-- or none). Only a record made from the state the expiry was made from is settled here (the
-- expiry changed nothing else of the lease); one holding a newer revision is left alone, as
-- lease-apply would; any other (older, missing) is returned for a full lease-apply.
-- KEYS[1]  lv:{shard}:l   hash id -> lease record (lib/lease.lua)
-- KEYS[2]  lv:{shard}:d   sorted set id -> when the sweeper looks at it (ms)
-- ARGV[1…] per lease: id, the revision it expired from, the committed revision, critical since (ms)
-- Returns the ids left to lease-apply.
--@include lease.lua
local out = {}
for i = 1, #ARGV, 4 do
  local id, from, to = ARGV[i], tonumber(ARGV[i + 1]), tonumber(ARGV[i + 2])
  local l = leaseParse(redis.call('HGET', KEYS[1], id))
  if l and l.rev == from then
    l.rev = to
    l.st = 'c'
    l.crit = ARGV[i + 3]
    redis.call('HSET', KEYS[1], id, leaseText(l))
    if l.dereg > 0 then
      redis.call('ZADD', KEYS[2], tonumber(l.crit) + l.dereg * 1000, id)
    else
      redis.call('ZREM', KEYS[2], id)
    end
  elseif not (l and l.rev >= to) then
    out[#out + 1] = id
  end
end
return out
