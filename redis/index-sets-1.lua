-- index-sets: the rebuild's write of set buckets. The rebuilding process keeps the members of
-- the pages it has written (index-page-1.lua) and, once the pages are past a range of
-- buckets, sends every set's buckets of that range here, each bucket whole: it is written
-- once, not read and rewritten page after page. A sync that removed a member of an unwritten
-- bucket meanwhile noted it in <base>rx (lib/buckets.lua, rxNote): those offsets are left
-- out. What syncs added to the bucket is merged with it (setAddEncoded).
-- KEYS[1]  <base>ver:2   the namespace marker of the building generation; also routes the call
-- ARGV[1]  <base>        "<prefix>reg:{ns}:<gen>:"
-- ARGV[2]  watermark     after the write, the first bucket still unwritten (<base>wm): "" to
--                        leave it (more calls of the range follow), "end" once every bucket
--                        is written (wm and rx go: later removals are ordinary)
-- ARGV[3]  index         per bucket of a set, "<set suffix>\n<bucket>\n<count>\n" (a set's
--                        buckets consecutive, ascending)
-- ARGV[4]  blob          their offsets in the same order, count of them per line, each the
--                        member's 2-byte big-endian offset in its bucket, sorted and distinct
--                        (encodeSets(), src/workers/buckets.ts)
-- Returns -1 when the namespace marker is gone (Redis was emptied under the rebuild), else 1.
-- The marker is not incremented (index-page-1.lua: it counts syncs' writes).
--@include buckets.lua
if redis.call('EXISTS', KEYS[1]) == 0 then return -1 end
local base, wm, index, blob = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
local rxKey = base .. 'rx'
local noted = redis.call('EXISTS', rxKey) == 1
local sets = {}
local at = 1
for sfx, b, c in string.gmatch(index, '([^\n]+)\n(%d+)\n(%d+)\n') do
  local len = 2 * tonumber(c)
  local last = sets[#sets]
  if not last or last.sfx ~= sfx then
    last = { sfx = sfx, fields = {}, adds = {} }
    sets[#sets + 1] = last
  end
  local add = string.sub(blob, at, at + len - 1)
  at = at + len
  if noted then
    local field = sfx .. '\n' .. b
    local gone = redis.call('HGET', rxKey, field)
    if gone then
      redis.call('HDEL', rxKey, field)
      local drop = {}
      for i = 1, #gone / 2 do drop[boff(gone, i)] = true end
      local keep = {}
      for i = 1, #add / 2 do
        if not drop[boff(add, i)] then keep[#keep + 1] = string.sub(add, 2 * i - 1, 2 * i) end
      end
      add = table.concat(keep)
    end
  end
  if add ~= '' then
    last.fields[#last.fields + 1] = b
    last.adds[#last.adds + 1] = add
  end
end
for _, s in ipairs(sets) do
  if #s.fields > 0 then setAddEncoded(base .. s.sfx, s.fields, s.adds, false) end
end
if wm == 'end' then
  redis.call('DEL', base .. 'wm', rxKey)
elseif wm ~= '' then
  redis.call('SET', base .. 'wm', wm)
end
return 1
