-- lease-sweep: one shard's due leases, for the node holding (or now taking) the shard's
-- sweep lock. The lock has a TTL, renewed by every call of its holder: when the holder dies
-- another node takes the shard over within lockMs.
-- With a recheck (ARGV[5]), the sweeper's flip happens here too (until issue 23's mass-expiry
-- work a second script, lease-expire-2.lua, did it for the ids listed): each due lease still passing turns
-- critical at once, atomically with the listing (a heartbeat that renewed it first moved its
-- deadline past now, so it is not listed), and its due time moves recheck ms on: the durable
-- write, normally within seconds, puts the real schedule; a flip it never made durable (the
-- node died, PostgreSQL away) is due again then.
-- KEYS[1]  lv:{shard}:lock  the holder's token
-- KEYS[2]  lv:{shard}:d     sorted set id -> when due (ms)
-- KEYS[3]  lv:{shard}:l     hash id -> lease record
-- ARGV[1]  this node's token
-- ARGV[2]  lock TTL (ms)
-- ARGV[3]  now (ms)
-- ARGV[4]  at most this many
-- ARGV[5]  recheck (ms), or absent: list only
-- Returns -1 when another node holds the lock, else a flat array id, due, record, flipped
-- ("1": turned critical by this call; the record as it is now), ... (due ids without a
-- record are dropped from the set).
--@include lease.lua
local holder = redis.call('GET', KEYS[1])
if not holder then
  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
elseif holder ~= ARGV[1] then
  return -1
else
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
local now = tonumber(ARGV[3])
local recheck = ARGV[5] and tonumber(ARGV[5])
local due = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', ARGV[3], 'WITHSCORES', 'LIMIT', 0, tonumber(ARGV[4]))
local out = {}
for i = 1, #due, 2 do
  local id = due[i]
  local rec = redis.call('HGET', KEYS[3], id)
  if rec then
    local flipped = '0'
    if recheck then
      local l = leaseParse(rec)
      if l and l.st == 'p' then
        l.st = 'c'
        l.crit = string.format('%.0f', now) -- whole ms: a record holds digits only
        rec = leaseText(l)
        redis.call('HSET', KEYS[3], id, rec)
        redis.call('ZADD', KEYS[2], now + recheck, id)
        flipped = '1'
      end
    end
    out[#out + 1] = id
    out[#out + 1] = due[i + 1]
    out[#out + 1] = rec
    out[#out + 1] = flipped
  else
    redis.call('ZREM', KEYS[2], id)
  end
end
return out
