-- near-load: one filter set of a namespace, with the namespace version it is consistent with,
-- for a node's near cache (src/hot/search/near/near-cache.ts) and the pool path. A small set
-- comes whole in one call; a large one in slices of consecutive buckets, one call each, so
-- that no call holds Redis for long (docs/decisions/near-cache.md).
-- Each slice is exact at the version it returns; the caller takes the oldest version of its
-- slices, and the deltas published after it bring every slice up to date (adding a member
-- that is there, or removing one that is not, changes nothing: loadSet() in
-- src/hot/search/pipeline/sets.ts).
-- KEYS[1]  <base>ver:2    namespace marker and version
-- KEYS[2]  <base><suffix> the set (a bucketed set: lib/buckets.lua)
-- ARGV[1]  the first bucket to return (0: the start)
-- ARGV[2]  most buckets a slice spans (0: the whole set in this call)
-- ARGV[3]  most members of a set returned whole (from bucket 0): a larger one is sliced
-- Returns: { ver, next, bucket1, offsets1, bucket2, offsets2, ... } (offsets as stored:
-- decodeBuckets() in src/workers/buckets.ts; next: the first bucket of the next slice, or -1
-- when this one reached the end), or -1 when the namespace is not indexed.
if redis.call('EXISTS', KEYS[1]) == 0 then return -1 end
local from, span, whole = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local ver = redis.call('GET', KEYS[1])
local nhi = redis.call('HMGET', KEYS[2], 'n', 'hi')
local n, hi = tonumber(nhi[1]) or 0, tonumber(nhi[2]) or -1
local out = { ver, '-1' }
if span == 0 or (from == 0 and n <= whole) then
  local all = redis.call('HGETALL', KEYS[2])
  for i = 1, #all, 2 do
    if tonumber(all[i]) then
      out[#out + 1] = all[i]
      out[#out + 1] = all[i + 1]
    end
  end
  return out
end
local to = math.min(from + span - 1, hi)
if to < from then return out end
local fields = {}
for b = from, to do fields[#fields + 1] = tostring(b) end
local got = redis.call('HMGET', KEYS[2], unpack(fields))
for i = 1, #fields do
  if got[i] then
    out[#out + 1] = fields[i]
    out[#out + 1] = got[i]
  end
end
if to < hi then out[2] = tostring(to + 1) end
return out
