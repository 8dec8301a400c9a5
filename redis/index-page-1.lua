-- index-page: the rebuild's bulk write. Adds a page of services of one namespace, read from
-- PostgreSQL, to a generation being built: every set gets its members of the page in one
-- ZADD, the hashes their fields in one HSET each, instead of one apply-service call per
-- service (~10 commands each).
-- KEYS[1]  <base>ver      the namespace marker of the building generation; also routes the call
-- ARGV[1]  <base>         "<prefix>reg:{ns}:<gen>:" every other key is built from it
-- ARGV[2..] six per service, in seq order:
--          id, seq, doc, members ("\n"-joined set suffixes as apply-service's ARGV[7]),
--          hdr ("" none), repl (comma-separated candidate seqs, "" none)
-- Returns: the number of services written, or -1 when the namespace marker is gone (Redis
-- was emptied under the rebuild: it starts over).
-- Revision rule (the rebuild's only one): a service whose id has a revision in this
-- generation was written by apply-service while the rebuild ran; that state is newer than
-- the page (read before or during the write), so the page skips it. The rebuild itself
-- records no revision (its states are revision 0: any write wins over them).
-- At most ~1,000 services a call: unpack() of a table is bounded by Lua's C stack (8,000).
if redis.call('EXISTS', KEYS[1]) == 0 then return -1 end
local base = ARGV[1]
local revs = base .. 'rev'
local ids, docs, hdrs, repls = {}, {}, {}, {}
local sets = {}
local n = 0
for i = 2, #ARGV, 6 do
  local id, seq = ARGV[i], ARGV[i + 1]
  if redis.call('HEXISTS', revs, id) == 0 then
    n = n + 1
    ids[#ids + 1] = id
    ids[#ids + 1] = seq
    docs[#docs + 1] = seq
    docs[#docs + 1] = ARGV[i + 2]
    for m in string.gmatch(ARGV[i + 3], '[^\n]+') do
      local t = sets[m]
      if not t then
        t = {}
        sets[m] = t
      end
      t[#t + 1] = seq
      t[#t + 1] = seq
    end
    if ARGV[i + 4] ~= '' then
      hdrs[#hdrs + 1] = seq
      hdrs[#hdrs + 1] = ARGV[i + 4]
    end
    if ARGV[i + 5] ~= '' then
      repls[#repls + 1] = seq
      repls[#repls + 1] = ARGV[i + 5]
      for c in string.gmatch(ARGV[i + 5], '[^,]+') do redis.call('SADD', base .. 'replby:' .. c, seq) end
    end
  end
end
if n == 0 then return 0 end
for m, t in pairs(sets) do redis.call('ZADD', base .. m, unpack(t)) end
redis.call('HSET', base .. 'ids', unpack(ids))
redis.call('HSET', base .. 'docs', unpack(docs))
if #hdrs > 0 then redis.call('HSET', base .. 'hdrs', unpack(hdrs)) end
if #repls > 0 then redis.call('HSET', base .. 'repl', unpack(repls)) end
redis.call('INCR', KEYS[1])
return n
