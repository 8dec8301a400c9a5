-- A lease record (liveness; src/hot/redis/replies.ts leaseRecord() decodes the same text; heartbeat-2.lua
-- matches it in place, lib/heartbeat.lua):
-- "<rev>|<ns>|<token sha256 hex>|<ttl s>|<status p or c>|<deregisterAfter s, 0 none>|<critical since ms or empty>"
local function leaseParse(rec)
  if not rec then return nil end
  local rev, ns, tok, ttl, st, dereg, crit = string.match(rec, '^(%d+)|([^|]*)|(%x*)|(%d+)|([pc])|(%d+)|(%d*)$')
  if not rev then return nil end
  return { rev = tonumber(rev), ns = ns, tok = tok, ttl = tonumber(ttl), st = st, dereg = tonumber(dereg), crit = crit }
end
local function leaseText(l)
  return table.concat({ l.rev, l.ns, l.tok, l.ttl, l.st, l.dereg, l.crit }, '|')
end
