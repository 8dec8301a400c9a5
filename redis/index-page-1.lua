-- index-page: the rebuild's bulk write. Adds a page of services of one namespace, read from
-- PostgreSQL, to a generation being built: the ids, documents, headers and replacement
-- lists in one HSET each, and every set the page touches in one read and one HSET of the
-- buckets its members fall in, the members already grouped and encoded per bucket by the
-- caller (pageArgs(), encodeBuckets() in src/workers/buckets.ts), so this script does no
-- work per member.
-- KEYS[1]  <base>ver:2    the namespace marker of the building generation; also routes the call
-- ARGV[1]  <base>         "<prefix>reg:{ns}:<gen>:" every other key is built from it
-- ARGV[2]  k              how many services
-- ARGV[3..] six per service, in seq order: id, version (the revision of the state, read
--          with it), seq, doc, hdr ("" none), repl (comma-separated candidate seqs, "" none)
-- ARGV[6k+3] the page's set members, per bucket of a set: "<set suffix>\n<bucket>\n<count>\n",
--          a set's buckets consecutive
-- ARGV[6k+4] their offsets, in the same order: count of them per line, each the member's
--          2-byte big-endian offset in its bucket (lib/buckets.lua), sorted and distinct
-- Returns: -1 when the namespace marker is gone (Redis was emptied under the rebuild: it
-- starts over); { -2, s, skip ids (s of them)..., left ids... } when some ids are not new
-- to this generation, and then NOTHING is written; otherwise { k }.
-- Revision rule (redis/README.md, "Revisions"), the rebuild's side of it: a service whose
-- revision in this generation is the page's version or newer was applied by a sync while
-- the rebuild ran, and must be skipped; one with an older state already indexed (a sync
-- that loaded its state before this page was read) needs that entry replaced, which is
-- apply-service's job. Either way the members grouped by the caller include it, so the
-- script writes nothing and names them: the caller sends the page again without them
-- (a sync may add more meanwhile: the script checks again) and applies the "left" ones
-- with apply-service. Every state written records its version, so a sync still holding an
-- older state loses to it afterwards.
-- At most ~2,000 services a call: unpack() of a table is bounded by Lua's C stack (8,000).
--@include buckets.lua
local v = redis.call('GET', KEYS[1])
if not v then return -1 end
-- the marker is set to 1 when the rebuild starts and every write to the namespace in this
-- generation increments it (apply-service, this script): at 1, nothing of it is here yet, so
-- no id is to be checked and no set key to be read (a small sandbox's whole run)
local fresh = v == '1'
local base = ARGV[1]
local k = tonumber(ARGV[2])
local ids_key = base .. 'ids'
if not fresh then
  local idl = {}
  for i = 1, k do idl[i] = ARGV[6 * i - 3] end
  local cur = redis.call('HMGET', ids_key, unpack(idl))
  local skip, left = {}, {}
  for i = 1, k do
    -- ids: id -> "<seq>:<revision>", ":<revision>" for a deleted id (apply-service-1.lua)
    local e = cur[i]
    if e then
      local oldSeq, rev = string.match(e, '^(%d*):(%d+)$')
      if tonumber(rev) >= tonumber(ARGV[6 * i - 2]) then
        skip[#skip + 1] = idl[i]
      elseif oldSeq ~= '' then
        left[#left + 1] = idl[i]
      end
    end
  end
  if #skip + #left > 0 then
    local out = { -2, #skip }
    for _, id in ipairs(skip) do out[#out + 1] = id end
    for _, id in ipairs(left) do out[#out + 1] = id end
    return out
  end
end
if k == 0 then return { 0 } end
local ids, docs, hdrs, repls = {}, {}, {}, {}
for i = 1, k do
  local a = 6 * i - 3
  local seq = ARGV[a + 2]
  ids[#ids + 1] = ARGV[a]
  ids[#ids + 1] = seq .. ':' .. ARGV[a + 1]
  docs[#docs + 1] = seq
  docs[#docs + 1] = ARGV[a + 3]
  if ARGV[a + 4] ~= '' then
    hdrs[#hdrs + 1] = seq
    hdrs[#hdrs + 1] = ARGV[a + 4]
  end
  if ARGV[a + 5] ~= '' then
    repls[#repls + 1] = seq
    repls[#repls + 1] = ARGV[a + 5]
    for c in string.gmatch(ARGV[a + 5], '[^,]+') do redis.call('SADD', base .. 'replby:' .. c, seq) end
  end
end
redis.call('HSET', ids_key, unpack(ids))
redis.call('HSET', base .. 'docs', unpack(docs))
if #hdrs > 0 then redis.call('HSET', base .. 'hdrs', unpack(hdrs)) end
if #repls > 0 then redis.call('HSET', base .. 'repl', unpack(repls)) end
-- the sets: consecutive lines of one suffix are one set
local blob = ARGV[6 * k + 4]
local at = 1
local m, fields, adds = nil, {}, {}
for sfx, b, c in string.gmatch(ARGV[6 * k + 3], '([^\n]+)\n(%d+)\n(%d+)\n') do
  if sfx ~= m then
    if m then setAddEncoded(base .. m, fields, adds, fresh) end
    m, fields, adds = sfx, {}, {}
  end
  local len = 2 * tonumber(c)
  fields[#fields + 1] = b
  adds[#adds + 1] = string.sub(blob, at, at + len - 1)
  at = at + len
end
if m then setAddEncoded(base .. m, fields, adds, fresh) end
redis.call('INCR', KEYS[1])
return { k }
