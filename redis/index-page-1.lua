-- index-page: the rebuild's bulk write. Adds a page of services of one namespace, read from
-- PostgreSQL, to a generation being built: every set gets its members of the page in one
-- read and one HSET of the buckets they fall in (lib/buckets.lua), the hashes their fields
-- in one HSET each, instead of one apply-service call per service (~10 commands each).
-- KEYS[1]  <base>ver:2    the namespace marker of the building generation; also routes the call
-- ARGV[1]  <base>         "<prefix>reg:{ns}:<gen>:" every other key is built from it
-- ARGV[2..] seven per service, in seq order:
--          id, version (the revision of the state, read with it), seq, doc, members
--          ("\n"-joined set suffixes as apply-service's ARGV[7]), hdr ("" none), repl
--          (comma-separated candidate seqs, "" none)
-- Returns: -1 when the namespace marker is gone (Redis was emptied under the rebuild: it
-- starts over); otherwise { written, id, id, ... }: the ids listed are left to the caller,
-- which applies each with apply-service (see below).
-- Revision rule (redis/README.md, "Revisions"), the rebuild's side of it, here alone: a
-- service whose revision in this generation is the page's version or newer was applied by
-- a sync while the rebuild ran, and is skipped; one with an older state already indexed
-- (a sync that loaded its state before this page was read) needs that entry replaced,
-- which is apply-service's job: its id is returned. Every state written records its
-- version, so a sync still holding an older state loses to it afterwards.
-- At most ~1,000 services a call: unpack() of a table is bounded by Lua's C stack (8,000).
--@include buckets.lua
if redis.call('EXISTS', KEYS[1]) == 0 then return -1 end
local base = ARGV[1]
local ids, docs, hdrs, repls = {}, {}, {}, {}
local sets = {}
local n = 0
local left = {}
local ids_key = base .. 'ids'
for i = 2, #ARGV, 7 do
  local id, version, seq = ARGV[i], tonumber(ARGV[i + 1]), ARGV[i + 2]
  -- ids: id -> "<seq>:<revision>", ":<revision>" for a deleted id (apply-service-1.lua)
  local oldSeq, cur = string.match(redis.call('HGET', ids_key, id) or '', '^(%d*):(%d+)$')
  cur = tonumber(cur or '-1')
  if cur < version and oldSeq ~= '' and oldSeq ~= nil then
    left[#left + 1] = id
  elseif cur < version then
    n = n + 1
    ids[#ids + 1] = id
    ids[#ids + 1] = seq .. ':' .. ARGV[i + 1]
    docs[#docs + 1] = seq
    docs[#docs + 1] = ARGV[i + 3]
    for m in string.gmatch(ARGV[i + 4], '[^\n]+') do
      local t = sets[m]
      if not t then
        t = {}
        sets[m] = t
      end
      t[#t + 1] = tonumber(seq)
    end
    if ARGV[i + 5] ~= '' then
      hdrs[#hdrs + 1] = seq
      hdrs[#hdrs + 1] = ARGV[i + 5]
    end
    if ARGV[i + 6] ~= '' then
      repls[#repls + 1] = seq
      repls[#repls + 1] = ARGV[i + 6]
      for c in string.gmatch(ARGV[i + 6], '[^,]+') do redis.call('SADD', base .. 'replby:' .. c, seq) end
    end
  end
end
local out = { n }
for _, id in ipairs(left) do out[#out + 1] = id end
if n == 0 then return out end
for m, t in pairs(sets) do setAdd(base .. m, t) end
redis.call('HSET', base .. 'ids', unpack(ids))
redis.call('HSET', base .. 'docs', unpack(docs))
if #hdrs > 0 then redis.call('HSET', base .. 'hdrs', unpack(hdrs)) end
if #repls > 0 then redis.call('HSET', base .. 'repl', unpack(repls)) end
redis.call('INCR', KEYS[1])
return out
