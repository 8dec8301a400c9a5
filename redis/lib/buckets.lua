-- Bucketed sets (redis/README.md, "Bucketed sets"), included by the index scripts. A filter
-- set is one hash: field "n" = its member count (the planner's), "hi" = its highest bucket
-- (where an ordered walk stops), and per bucket b (a decimal field) the members
-- with seq in [b*BW, (b+1)*BW) as their offsets seq - b*BW, sorted, two bytes each
-- (big-endian). A set with no member has no key, like the sorted set it replaces.
local BW = 4096
-- offset number i (1-based) of a bucket string
local function boff(s, i)
  local x, y = string.byte(s, 2 * i - 1, 2 * i)
  return x * 256 + y
end
-- first index in from..to (default: the whole bucket) whose offset is >= o (to + 1 when none)
local function bfirst(s, o, from, to)
  local lo, hi = from or 1, to or #s / 2
  while lo <= hi do
    local mid = math.floor((lo + hi) / 2)
    if boff(s, mid) < o then lo = mid + 1 else hi = mid - 1 end
  end
  return lo
end
local function bchar(o)
  return string.char(math.floor(o / 256), o % 256)
end
-- bucket string s with the sorted offsets offs (numbers, duplicates allowed) merged in:
-- returns the new string and how many offsets were new to it. (Offsets that all follow the
-- last one are appended by the caller, setAddEncoded, without this walk.)
local function bmerge(s, offs)
  local k = #s / 2
  local parts = {}
  local prev = -1
  local added = 0
  local from = 1
  for _, o in ipairs(offs) do
    if o ~= prev then
      prev = o
      local at = bfirst(s, o, from)
      if at > from then parts[#parts + 1] = string.sub(s, 2 * from - 1, 2 * at - 2) end
      if at > k or boff(s, at) ~= o then
        parts[#parts + 1] = bchar(o)
        added = added + 1
      end
      from = at
    end
  end
  if from <= k then parts[#parts + 1] = string.sub(s, 2 * from - 1) end
  return table.concat(parts), added
end
-- add to the set at key the buckets fields[j] (decimal strings) their new members adds[j]
-- (strings of sorted, distinct offsets, as encodeSets() makes them: src/workers/buckets.ts):
-- a bucket whose new offsets all come after its last one (a rebuild's pages come in seq
-- order) is one concatenation, without a Lua value per member; others are merged. `absent`:
-- the caller knows the key does not exist (nothing to read)
local function setAddEncoded(key, fields, adds, absent)
  local nb = #fields
  fields[nb + 1] = 'n'
  fields[nb + 2] = 'hi'
  local cur = absent and {} or redis.call('HMGET', key, unpack(fields))
  local n = tonumber(cur[nb + 1]) or 0
  local hi = tonumber(cur[nb + 2]) or -1
  local out = {}
  for j = 1, nb do
    local add = adds[j]
    local s = cur[j] or ''
    local k = #s / 2
    if k == 0 or boff(s, k) < boff(add, 1) then
      s = s .. add
      n = n + #add / 2
    else
      local offs = {}
      for i = 1, #add / 2 do offs[i] = boff(add, i) end
      local added
      s, added = bmerge(s, offs)
      n = n + added
    end
    local b = tonumber(fields[j])
    out[#out + 1] = fields[j]
    out[#out + 1] = s
    if b > hi then hi = b end
  end
  out[#out + 1] = 'n'
  out[#out + 1] = n
  out[#out + 1] = 'hi'
  out[#out + 1] = hi
  redis.call('HSET', key, unpack(out))
end
-- seqs (numbers, any order) by bucket: groups[b] lists the offsets in bucket b (as they come,
-- repeats kept), order the buckets as first seen
local function byBucket(seqs)
  local groups, order = {}, {}
  for _, q in ipairs(seqs) do
    local b = math.floor(q / BW)
    local g = groups[b]
    if not g then
      g = {}
      groups[b] = g
      order[#order + 1] = b
    end
    g[#g + 1] = q - b * BW
  end
  return groups, order
end
-- add seqs (numbers, any order) to the set at key
local function setAdd(key, seqs)
  local groups, order = byBucket(seqs)
  if #order == 0 then return 0 end
  local fields, adds = {}, {}
  for i, b in ipairs(order) do
    local offs = groups[b]
    table.sort(offs)
    local bytes, prev = {}, -1
    for _, o in ipairs(offs) do
      if o ~= prev then
        bytes[#bytes + 1] = bchar(o)
        prev = o
      end
    end
    fields[i] = tostring(b)
    adds[i] = table.concat(bytes)
  end
  setAddEncoded(key, fields, adds, false)
end
-- set the hash's `hi` field to its highest bucket number again, after buckets were dropped
-- (kept exact, so a rebuild of the same members writes the same hash)
local function resetHi(key)
  local top = -1
  for _, f in ipairs(redis.call('HKEYS', key)) do
    local x = tonumber(f)
    if x and x > top then top = x end
  end
  redis.call('HSET', key, 'hi', top)
end
-- A rebuild writes each bucket of its generation's sets once, when the pages past it are in
-- (index-sets-1.lua), not page by page. Until then a bucket numbered <base>wm or higher is
-- unwritten, and a removal of one of its members by a sync cannot take away what the rebuild
-- will add: it is noted in <base>rx instead (field "<set suffix>\n<bucket>", the removed
-- offsets appended, 2 bytes each), and the rebuild leaves those offsets out of that bucket.
-- Both keys exist only while the generation is being built (redis/README.md).
local RX_WM = {}
-- the first unwritten bucket of base's sets, or false when nothing is deferred
local function rxWatermark(base)
  local w = RX_WM[base]
  if w == nil then
    w = tonumber(redis.call('GET', base .. 'wm') or '') or false
    RX_WM[base] = w
  end
  return w
end
-- note offsets (a string of 2-byte offsets) removed from bucket b of set sfx, when b is unwritten
local function rxNote(base, sfx, b, offs)
  local w = rxWatermark(base)
  if not w or b < w then return end
  local key, field = base .. 'rx', sfx .. '\n' .. b
  redis.call('HSET', key, field, (redis.call('HGET', key, field) or '') .. offs)
end
-- remove one seq from the set base .. sfx (the key goes with its last member)
local function setRemove(base, sfx, seq)
  local key = base .. sfx
  local b = math.floor(seq / BW)
  local o = seq - b * BW
  rxNote(base, sfx, b, bchar(o))
  local s = redis.call('HGET', key, b)
  if not s then return end
  local at = bfirst(s, o)
  if at > #s / 2 or boff(s, at) ~= o then return end
  if redis.call('HINCRBY', key, 'n', -1) <= 0 then
    redis.call('DEL', key)
  elseif #s == 2 then
    redis.call('HDEL', key, b)
    if tonumber(redis.call('HGET', key, 'hi')) == b then resetHi(key) end
  else
    redis.call('HSET', key, b, string.sub(s, 1, 2 * at - 2) .. string.sub(s, 2 * at + 1))
  end
end
-- remove seqs (numbers, any order) from the set base .. sfx: each bucket read and written
-- once (setRemove() per seq copies its bucket each time: a mass expiry takes thousands of
-- members out of one set in one call)
local function setRemoveMany(base, sfx, seqs)
  local key = base .. sfx
  local groups, order = byBucket(seqs)
  if #order == 0 then return end
  local fields = {}
  for i, b in ipairs(order) do
    fields[i] = tostring(b)
    local offs = {}
    for j, o in ipairs(groups[b]) do offs[j] = bchar(o) end
    rxNote(base, sfx, b, table.concat(offs))
  end
  local cur = redis.call('HMGET', key, unpack(fields))
  local removed, emptied, sets = 0, {}, {}
  for i, b in ipairs(order) do
    local s = cur[i]
    if s then
      local drop = {}
      for _, o in ipairs(groups[b]) do drop[o] = true end
      local parts, from, k = {}, 1, #s / 2
      for j = 1, k do
        if drop[boff(s, j)] then
          if j > from then parts[#parts + 1] = string.sub(s, 2 * from - 1, 2 * j - 2) end
          from = j + 1
          removed = removed + 1
        end
      end
      if from <= k then parts[#parts + 1] = string.sub(s, 2 * from - 1) end
      local left = table.concat(parts)
      if left == '' then emptied[#emptied + 1] = fields[i]
      elseif #left ~= #s then
        sets[#sets + 1] = fields[i]
        sets[#sets + 1] = left
      end
    end
  end
  if removed == 0 then return end
  if redis.call('HINCRBY', key, 'n', -removed) <= 0 then
    redis.call('DEL', key)
    return
  end
  if #sets > 0 then redis.call('HSET', key, unpack(sets)) end
  if #emptied > 0 then
    redis.call('HDEL', key, unpack(emptied))
    resetHi(key)
  end
end
