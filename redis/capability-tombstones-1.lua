-- capability-tombstones: the rebuild's copy of who left which capability (PostgreSQL's
-- capability_tombstones, each at its service's revision when read) into the generation
-- being built. An entry already there at an equal or newer revision (a write applied to
-- the generation during the rebuild) is kept (docs/decisions/consul-index.md).
-- KEYS[1]  <base>ver:…    the namespace marker (missing: not indexed)
-- ARGV[1]  <base>         "<prefix>reg:{ns}:<gen>:"
-- then 3 per tombstone: capability, service id, revision
-- Returns: -1 when the namespace is not indexed, else the number of entries written.
if redis.call('EXISTS', KEYS[1]) == 0 then return -1 end
local base = ARGV[1]
local written = 0
for i = 2, #ARGV, 3 do
  local key = base .. 'ct:' .. ARGV[i]
  local cur = tonumber(redis.call('HGET', key, ARGV[i + 1]) or '-1')
  if cur < tonumber(ARGV[i + 2]) then
    redis.call('HSET', key, ARGV[i + 1], ARGV[i + 2])
    redis.call('SADD', base .. 'ctcaps', ARGV[i])
    written = written + 1
  end
end
return written
