-- heartbeats: heartbeat-2.lua for the lease shards of one event-loop turn in one call, on a
-- standalone Redis (a cluster refuses keys of several slots in one script: there each shard
-- is its own heartbeat-2.lua call): a fleet's heartbeats fall in all 16 shards. The call also
-- carries the turn's rate records (rate-count-2.lua's, one per sandbox): the requests the
-- thread answered from its admission batches, sandbox heartbeats among them, which saves a
-- rate-count call a turn (docs/decisions/heartbeat-batches.md).
-- KEYS     S pairs lv:{shard}:l, lv:{shard}:d, one per shard of the call; then R pairs
--          rl:{uuid}:h, rl:{uuid}:t, one per rate record (R may be 0)
-- ARGV[1]  now (ms); ARGV[2] S
-- ARGV[2+i] the heartbeats of the i-th shard (i = 1..S), heartbeat-2.lua's lines
-- when R > 0: ARGV[3+S] bucket length (ms), ARGV[4+S] history TTL (s), then per record j
--          (j = 1..R) ARGV[3+S+2j] its requests and ARGV[4+S+2j] how many were refused
-- Returns the answers of every line, shard after shard, as heartbeat-2.lua answers them.
--@include heartbeat.lua
--@include rate-count.lua
local now = tonumber(ARGV[1])
local s = tonumber(ARGV[2])
local out = {}
local n = 0
for i = 1, s do
  n = heartbeatLines(KEYS[2 * i - 1], KEYS[2 * i], now, ARGV[2 + i], out, n)
end
local r = (#KEYS - 2 * s) / 2
if r > 0 then
  local b = rateBucket(tonumber(ARGV[3 + s]))
  local ttl = tonumber(ARGV[4 + s])
  for j = 1, r do
    rateRecord(KEYS[2 * s + 2 * j - 1], KEYS[2 * s + 2 * j], b, tonumber(ARGV[3 + s + 2 * j]), tonumber(ARGV[4 + s + 2 * j]), ttl)
  end
end
return out
