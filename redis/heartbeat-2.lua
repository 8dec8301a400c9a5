-- heartbeat: check heartbeat tokens and renew leases, a batch of one shard at a time (the
-- serving thread collects the heartbeats of one event-loop turn: liveness/heartbeat-batch.ts).
-- A heartbeat that does not change the status ends here: nothing durable, no document touched.
-- KEYS[1]  lv:{shard}:l   hash id -> lease record (lib/lease.lua)
-- KEYS[2]  lv:{shard}:d   sorted set id -> deadline (ms)
-- ARGV[1]  now (ms)
-- ARGV[2]  the heartbeats, one line each (one argument for the batch: the client encodes
--          each argument on its own, which cost more than the script), fields by one space:
--   id                       1-64 of [A-Za-z0-9_-]
--   sha256 hex of the token presented
--   wanted status            p | c
--   check only               1: answer as below but renew nothing (a sandbox's heartbeat
--                            whose token this thread has not seen accepted is counted against
--                            its rate limit between the check and the renewal); 0: renew
--   the namespace of the route (a token of another namespace's service is not this one's)
-- Returns an array, one integer per line in order: 0 renewed, status unchanged; 1 the
-- status must change (a durable write, by the caller; a passing heartbeat has renewed the
-- deadline already); -1 no lease here; -2 not this service's token. A line of another shape
-- is answered -2 and renews nothing (the client sends none: its count would not match).
-- The lease record (lib/lease.lua: "<rev>|<ns>|<token sha256 hex>|<ttl s>|<p or c>|<deregisterAfter
-- s>|<critical since ms>") is not parsed whole by leaseParse: a table and seven captured strings
-- per heartbeat. "|<ns>|<hash>|" must follow its revision's digits, as plain text, and only the ttl
-- and status after it are captured; a record of another shape reads as another token's (-2).
-- Lines are matched in place, anchored at each line's start, without a string per line. Redis
-- µs per heartbeat 4.9 -> 4.0 (docs/decisions.md, "Heartbeat script"): the script's time is the
-- wait of every request in its batch.
local now = tonumber(ARGV[1])
local s = ARGV[2]
local out = {}
local n = 0
local pos = 1
while true do
  local e = string.find(s, '\n', pos, true)
  if not e then break end
  -- no class of the pattern matches a newline: a match ends at this line's end
  local id, tok, want, chk, ns = string.match(s, '^([%w_-]+) (%x+) ([pc]) ([01]) ([%w_-]+)\n', pos)
  pos = e + 1
  local r = -2
  if id then
    local rec = redis.call('HGET', KEYS[1], id)
    if not rec then
      r = -1
    else
      local key = '|' .. ns .. '|' .. tok .. '|'
      local _, b = string.find(rec, '^%d+|')
      local ttl, st
      if b and string.find(rec, key, b, true) == b then ttl, st = string.match(rec, '^(%d+)|([pc])|%d+|%d*$', b + #key) end
      if st then
        r = (st ~= want) and 1 or 0
        if chk ~= '1' and want == 'p' then redis.call('ZADD', KEYS[2], now + tonumber(ttl) * 1000, id) end
      end
    end
  end
  n = n + 1
  out[n] = r
end
return out
