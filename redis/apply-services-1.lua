-- apply-services: apply-service-1.lua for many states of one namespace in one call (a group
-- commit's registrations, a batch route's page): the same rule and the same deltas, one per
-- state, in order, but each set the states' new members go to is read and written once per
-- call instead of once per state (the bench's 64 writers sent ~50 states per call, all in
-- the set "all": ~50 reads and rewrites of its newest bucket, up to 8 KiB, became one).
-- KEYS[1]  <base>ver:2    the namespace marker/version counter; also routes the call
-- ARGV[1]  <base>         "<prefix>reg:{ns}:<gen>:" every other key is built from it
-- ARGV[2]  channel        pub/sub channel of the deltas ("" none), as apply-service's ARGV[9]
-- then 7 per state, as apply-service's ARGV[2..8]: id, rev, seq, doc, hdr, members, repl
-- Returns: -1 when the namespace is not indexed (nothing written); otherwise an array with,
-- per state in order, the namespace version after it (>= 2) or 0 (stale: a newer revision
-- is in place).
-- An id given twice is applied in order: the new members of the first are added before the
-- second's state replaces it. Keep calls to a few hundred states: the script holds Redis's
-- one thread while it runs.
--@include buckets.lua
--@include dimensions.lua
--@include capability.lua
--@include doc-codec.lua
--@include apply.lua
if redis.call('EXISTS', KEYS[1]) == 0 then return -1 end
local base, channel = ARGV[1], ARGV[2]
local pending, order, seen = {}, {}, {}
local function later(key, n)
  local l = pending[key]
  if not l then
    l = {}
    pending[key] = l
    order[#order + 1] = key
  end
  l[#l + 1] = n
end
local function flush()
  for _, key in ipairs(order) do setAdd(key, pending[key]) end
  pending, order, seen = {}, {}, {}
end
local out = {}
for i = 3, #ARGV - 6, 7 do
  local id = ARGV[i]
  if seen[id] then flush() end
  seen[id] = true
  out[#out + 1] = applyOne(KEYS[1], base, id, ARGV[i + 1], ARGV[i + 2], ARGV[i + 3], ARGV[i + 4], ARGV[i + 5], ARGV[i + 6], channel, later)
end
flush()
return out
