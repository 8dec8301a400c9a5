-- heartbeats: heartbeat-2.lua for the lease shards of one event-loop turn in one call, on a
-- standalone Redis (a cluster refuses keys of several slots in one script: there each shard
-- is its own heartbeat-2.lua call). A fleet's heartbeats fall in all 16 shards, so a turn's
-- batch was up to 16 script calls of ~2 heartbeats each (bench/README.md, Liveness, "fleet").
-- KEYS     pairs: lv:{shard}:l, lv:{shard}:d of each shard of the call
-- ARGV[1]  now (ms)
-- ARGV[1+i] the heartbeats of the i-th pair's shard, heartbeat-2.lua's lines
-- Returns the answers of every line, pair after pair, as heartbeat-2.lua answers them.
--@include heartbeat.lua
local now = tonumber(ARGV[1])
local out = {}
local n = 0
for i = 1, #KEYS / 2 do
  n = heartbeatLines(KEYS[2 * i - 1], KEYS[2 * i], now, ARGV[1 + i], out, n)
end
return out
