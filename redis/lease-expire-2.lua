-- lease-expire: the sweeper's flip of a shard's due leases (src/hot/liveness/sweeper.ts):
-- each lease still passing and still past its deadline (no heartbeat came since the sweep
-- listed it) turns critical at once, so that a heartbeat from now on asks for the durable
-- change back (and meets the expiry's row locks, or revokes it: liveness.ts). Its due time
-- moves recheck ms on: the durable write, normally within a second, puts the real schedule;
-- a flip it never made durable (the node died, PostgreSQL away) is due again then.
-- KEYS[1]  lv:{shard}:l
-- KEYS[2]  lv:{shard}:d
-- ARGV[1]  now (ms)
-- ARGV[2]  recheck (ms)
-- ARGV[3…] service ids (all of this shard)
-- Returns the ids confirmed expired (the others were renewed, are gone or already critical).
--@include lease.lua
local now = tonumber(ARGV[1])
local out = {}
for i = 3, #ARGV do
  local id = ARGV[i]
  local l = leaseParse(redis.call('HGET', KEYS[1], id))
  local due = l and l.st == 'p' and redis.call('ZSCORE', KEYS[2], id)
  if due and tonumber(due) <= now then
    l.st = 'c'
    l.crit = tostring(now)
    redis.call('HSET', KEYS[1], id, leaseText(l))
    redis.call('ZADD', KEYS[2], now + tonumber(ARGV[2]), id)
    out[#out + 1] = id
  end
end
return out
