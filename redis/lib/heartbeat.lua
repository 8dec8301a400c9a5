-- The heartbeats of one lease shard (heartbeat-2.lua: one shard a call; heartbeats.lua: the
-- shards of a turn in one call, standalone Redis). Lines and answers: heartbeat-2.lua's header.
-- The lease record (lib/lease.lua: "<rev>|<ns>|<token sha256 hex>|<ttl s>|<p or c>|<deregisterAfter
-- s>|<critical since ms>") is not parsed whole by leaseParse: a table and seven captured strings
-- per heartbeat. "|<ns>|<hash>|" must follow its revision's digits, as plain text, and only the ttl
-- and status after it are captured; a record of another shape reads as another token's (-2).
-- Lines are matched in place, anchored at each line's start, without a string per line: the
-- script's time is the wait of every request in its batch (docs/decisions/heartbeat-batches.md).
-- Appends one answer per line of `s` to `out` after its `n` first; returns the new count.
local function heartbeatLines(lkey, dkey, now, s, out, n)
  local pos = 1
  while true do
    local e = string.find(s, '\n', pos, true)
    if not e then break end
    -- no class of the pattern matches a newline: a match ends at this line's end
    local id, tok, want, chk, ns = string.match(s, '^([%w_-]+) (%x+) ([pc]) ([01]) ([%w_-]+)\n', pos)
    pos = e + 1
    local r = -2
    if id then
      local rec = redis.call('HGET', lkey, id)
      if not rec then
        r = -1
      else
        local key = '|' .. ns .. '|' .. tok .. '|'
        local _, b = string.find(rec, '^%d+|')
        local ttl, st
        if b and string.find(rec, key, b, true) == b then ttl, st = string.match(rec, '^(%d+)|([pc])|%d+|%d*$', b + #key) end
        if st then
          r = (st ~= want) and 1 or 0
          if chk ~= '1' and want == 'p' then redis.call('ZADD', dkey, now + tonumber(ttl) * 1000, id) end
        end
      end
    end
    n = n + 1
    out[n] = r
  end
  return n
end
