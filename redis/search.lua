-- search: one page of the intersection of filter sets, in sequence order, with the
-- pre-serialised documents. Variable key count (called with numKeys first).
-- KEYS[1]    <base>ver:2  namespace marker (missing: index not built, return -1)
-- KEYS[2]    <base>docs   seq -> serialised service object
-- KEYS[3..]  the filter sets (bucketed sets of service seqs, lib/buckets.lua); at least one
-- ARGV[1]    after        exclusive lower bound on seq ("" for the first page)
-- ARGV[2]    limit        page size; limit+1 are looked for to know whether more exist
-- ARGV[3]    heavy        planner threshold: with several sets whose smallest has more
--                          members than this, do not scan here (0 = always scan)
-- Returns: -1 when the namespace is not indexed; { -2, version } when the intersection is
-- heavy (the caller runs it in the worker pool); otherwise
--   { more (0/1), lastSeq ("" none), seq1, doc1, seq2, doc2, ... }
-- (decoded by searchPage() in src/hot/redis/replies.ts; the caller joins the documents and
-- digests them for the page's ETag: the page pipeline, src/hot/search/pipeline/)
--@include buckets.lua
--@include doc-codec.lua
if redis.call('EXISTS', KEYS[1]) == 0 then return -1 end
local limit = tonumber(ARGV[2])
local after = ARGV[1] == '' and -1 or tonumber(ARGV[1])

-- drive the scan from the smallest set, probe the others
local sets = {}
for i = 3, #KEYS do
  sets[#sets + 1] = { key = KEYS[i], n = tonumber(redis.call('HGET', KEYS[i], 'n')) or 0 }
end
table.sort(sets, function(a, b) return a.n < b.n end)
local out = { 0, '' }
if sets[1].n == 0 then return out end
local heavy = tonumber(ARGV[3] or '0')
if #sets > 1 and heavy > 0 and sets[1].n > heavy then
  return { -2, redis.call('GET', KEYS[1]) }
end

-- the driver's buckets from the one holding `after`, in order: the range up to its highest
-- bucket, or, when that range is mostly empty (a small set of spread seqs), its field list
local drv = sets[1].key
local hiB = tonumber(redis.call('HGET', drv, 'hi')) or -1
local b0 = after < 0 and 0 or math.floor(after / BW)
local buckets = {}
if hiB - b0 + 1 > 2 * redis.call('HLEN', drv) then
  for _, f in ipairs(redis.call('HKEYS', drv)) do
    local b = tonumber(f)
    if b and b >= b0 then buckets[#buckets + 1] = b end
  end
  table.sort(buckets)
else
  for b = b0, hiB do buckets[#buckets + 1] = b end
end

-- first index >= from whose offset is >= o, for offsets that come in order: gallop from
-- `from` (1, 2, 4, ... ahead), then binary search the last step. A probe costs the log of
-- the distance to the previous one, not of the bucket: a set twice as dense as the driver
-- costs about two steps a probe, not twelve.
local function bgallop(s, o, from, k)
  if from > k or boff(s, from) >= o then return from end
  local lo, step = from, 1
  local hi = from + 1
  while hi <= k and boff(s, hi) < o do
    lo = hi
    step = step * 2
    hi = lo + step
  end
  return bfirst(s, o, lo + 1, math.min(hi, k))
end

local found = {}
local multi = #sets > 1
for _, b in ipairs(buckets) do
  local s = redis.call('HGET', drv, b)
  if s then
    local k = #s / 2
    local base = b * BW
    local i = 1
    if after >= base then i = bfirst(s, math.floor(after - base) + 1) end
    if not multi then
      while i <= k and #found <= limit do
        found[#found + 1] = tostring(base + boff(s, i))
        i = i + 1
      end
      if #found > limit then break end
    else
      -- this bucket of every other set, fetched once; a set without it matches nothing here
      local others, dead = {}, false
      for j = 2, #sets do
        local t = redis.call('HGET', sets[j].key, b)
        if not t then
          dead = true
          break
        end
        others[#others + 1] = { s = t, k = #t / 2, at = 1 }
      end
      local stop = false
      -- a set without this bucket: nothing here matches
      if dead then i = k + 1 end
      while i <= k do
        local o = boff(s, i)
        local ok = true
        for _, t in ipairs(others) do
          -- members come in order: each probe starts where the last one ended
          local at = bgallop(t.s, o, t.at, t.k)
          t.at = at
          if at > t.k or boff(t.s, at) ~= o then
            ok = false
            break
          end
        end
        if ok then
          found[#found + 1] = tostring(base + o)
          if #found > limit then
            stop = true
            break
          end
        end
        i = i + 1
      end
      if stop then break end
    end
  end
end

if #found > limit then
  out[1] = 1
  found[#found] = nil
end
if #found > 0 then
  local docs = redis.call('HMGET', KEYS[2], unpack(found))
  for i, s in ipairs(found) do
    out[#out + 1] = s
    out[#out + 1] = docDecode(docs[i]) or 'null'
  end
  out[2] = found[#found]
end
return out
