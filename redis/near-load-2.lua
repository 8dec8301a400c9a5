-- near-load: one filter set of a namespace, whole, with the namespace version it is
-- consistent with, for a node's near cache (src/hot/search/near/near-cache.ts). Atomic: the members are
-- exactly those of that version, so the deltas published after it (apply-service-1.lua)
-- bring the copy up to date.
-- KEYS[1]  <base>ver:2    namespace marker and version
-- KEYS[2]  <base><suffix> the set (a bucketed set: lib/buckets.lua)
-- Returns: { ver, bucket1, offsets1, bucket2, offsets2, ... } (buckets in no particular
-- order; offsets as stored: decodeBuckets() in src/workers/buckets.ts), or -1 when the
-- namespace is not indexed.
if redis.call('EXISTS', KEYS[1]) == 0 then return -1 end
local out = { redis.call('GET', KEYS[1]) }
local all = redis.call('HGETALL', KEYS[2])
for i = 1, #all, 2 do
  if tonumber(all[i]) then
    out[#out + 1] = all[i]
    out[#out + 1] = all[i + 1]
  end
end
return out
