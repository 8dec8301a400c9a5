-- lease-sweep: one shard's due leases, for the node holding (or now taking) the shard's
-- sweep lock. The lock has a TTL, renewed by every call of its holder: when the holder dies
-- another node takes the shard over within lockMs.
-- KEYS[1]  lv:{shard}:lock  the holder's token
-- KEYS[2]  lv:{shard}:d     sorted set id -> when due (ms)
-- KEYS[3]  lv:{shard}:l     hash id -> lease record
-- ARGV[1]  this node's token
-- ARGV[2]  lock TTL (ms)
-- ARGV[3]  now (ms)
-- ARGV[4]  at most this many
-- Returns -1 when another node holds the lock, else a flat array id, due, record, ... (due
-- ids without a record are dropped from the set).
local holder = redis.call('GET', KEYS[1])
if not holder then
  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
elseif holder ~= ARGV[1] then
  return -1
else
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
local due = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', ARGV[3], 'WITHSCORES', 'LIMIT', 0, tonumber(ARGV[4]))
local out = {}
for i = 1, #due, 2 do
  local rec = redis.call('HGET', KEYS[3], due[i])
  if rec then
    out[#out + 1] = due[i]
    out[#out + 1] = due[i + 1]
    out[#out + 1] = rec
  else
    redis.call('ZREM', KEYS[2], due[i])
  end
end
return out
