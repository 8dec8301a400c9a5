-- lease-expire: the sweeper's confirmation, inside the PostgreSQL transaction that turns a
-- service critical (holding its row lock): the lease is still passing and still past its
-- deadline (no heartbeat came since the sweep saw it). The record turns critical at once,
-- so a heartbeat from now on asks for the durable change back (and waits for the row lock);
-- the due time moves recheckMs on, so that a transaction that then fails is looked at again
-- (the projector's apply of the committed state puts the real schedule).
-- KEYS[1]  lv:{shard}:l
-- KEYS[2]  lv:{shard}:d
-- ARGV[1]  id
-- ARGV[2]  now (ms)
-- ARGV[3]  recheck (ms)
-- Returns 1 expired, 0 not (renewed, gone or already critical).
--@include lease.lua
local id, now = ARGV[1], tonumber(ARGV[2])
local l = leaseParse(redis.call('HGET', KEYS[1], id))
if not l or l.st ~= 'p' then return 0 end
local due = redis.call('ZSCORE', KEYS[2], id)
if not due or tonumber(due) > now then return 0 end
l.st = 'c'
l.crit = tostring(now)
redis.call('HSET', KEYS[1], id, leaseText(l))
redis.call('ZADD', KEYS[2], now + tonumber(ARGV[3]), id)
return 1
