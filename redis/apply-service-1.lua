-- apply-service: make the index entry of one service equal to a state read from
-- PostgreSQL, unless a newer state was already applied (revisions: the service's version
-- read with the state, or its tombstone's; rule in redis/README.md, "Revisions"). The ids
-- hash holds both: id -> "<seq>:<revision>", or ":<revision>" once the service is gone.
-- KEYS[1]  <base>ver:2    the namespace marker/version counter; also routes the call
-- ARGV[1]  <base>         "<prefix>reg:{ns}:<gen>:" every other key is built from it
-- ARGV[2]  id             service id
-- ARGV[3]  rev            the revision of that state (services.version or the tombstone's)
-- ARGV[4]  seq            the service's sequence number, "" when the service is gone
-- ARGV[5]  doc            serialised service object ("" when gone)
-- ARGV[6]  hdr            deprecation header data "<deprecatedAtSec>|<sunset HTTP-date>" or ""
-- ARGV[7]  members        newline-separated set suffixes (keys.ts memberSuffixes()): "all", then
--                         each dimension's ("c:<cap>", "p:<k>:<v>", "d:<dc>", "r:<proto>", "iot", …)
--                         (the sets a previous state is in are derived from its stored
--                         document: memberSuffixes() below, generated from dimensions.ts)
-- ARGV[8]  repl           comma-separated candidate seqs, ranked ("" none)
-- ARGV[9]  channel        pub/sub channel for the delta of an applied write ("" none: the
--                          rebuild's own applies, before anyone reads that generation): the
--                          near caches of every node apply it to the sets they hold
--                          (src/hot/index/near.ts). "delta\t<base>\t<ver>\t<oldSeq>\t
--                          <old members>\t<newSeq>\t<new members>" (members newline-
--                          separated; seqs "" when absent). Published inside the script, so
--                          deltas reach subscribers in the order writes were applied.
-- Returns: the namespace version after the write (>= 2) when applied, 0 stale (a newer
-- revision is in place), -1 namespace not indexed
-- (Redis was emptied: the caller keeps its outbox row for after the rebuild).
-- All keys share the {ns} hash tag of KEYS[1], so the call stays in one cluster slot.
--@include buckets.lua
if redis.call('EXISTS', KEYS[1]) == 0 then return -1 end
local base, id, rev = ARGV[1], ARGV[2], tonumber(ARGV[3])
local entry = redis.call('HGET', base .. 'ids', id) or ''
local oldSeq, cur = string.match(entry, '^(%d*):(%d+)$')
if cur and tonumber(cur) > rev then return 0 end
if oldSeq == '' then oldSeq = nil end
local function dropCache(seq)
  redis.call('DEL', base .. 'rc:' .. seq)
  for _, s in ipairs(redis.call('SMEMBERS', base .. 'replby:' .. seq)) do
    redis.call('DEL', base .. 'rc:' .. s)
  end
end
local function split(s, sep)
  local out = {}
  if not s or s == '' then return out end
  for part in string.gmatch(s, '([^' .. sep .. ']+)') do out[#out + 1] = part end
  return out
end

-- memberSuffixes(doc): the set suffixes of a stored document, generated from the table of
-- search dimensions (src/hot/domain/dimensions.ts, memberRuleLua()): the rule keys.ts
-- memberSuffixes() applies to the state. Deriving them costs a JSON decode per write;
-- storing them cost ~85 bytes per service.
--@include dimensions.lua

-- the previous state's sets, also published in the delta below
local oldMembers = oldSeq and memberSuffixes(redis.call('HGET', base .. 'docs', oldSeq)) or {}
local oldMem = table.concat(oldMembers, '\n')
if oldSeq then
  for _, m in ipairs(oldMembers) do
    setRemove(base .. m, tonumber(oldSeq))
  end
  for _, c in ipairs(split(redis.call('HGET', base .. 'repl', oldSeq), ',')) do
    redis.call('SREM', base .. 'replby:' .. c, oldSeq)
  end
  dropCache(oldSeq)
end

local seq = ARGV[4]
if seq == '' then
  if oldSeq then
    redis.call('HDEL', base .. 'docs', oldSeq)
    redis.call('HDEL', base .. 'hdrs', oldSeq)
    redis.call('HDEL', base .. 'repl', oldSeq)
  end
  -- the revision stays, so that an older state of this id loses afterwards
  redis.call('HSET', base .. 'ids', id, ':' .. ARGV[3])
else
  local n = tonumber(seq)
  for _, m in ipairs(split(ARGV[7], '\n')) do
    setAdd(base .. m, { n })
  end
  redis.call('HSET', base .. 'ids', id, seq .. ':' .. ARGV[3])
  redis.call('HSET', base .. 'docs', seq, ARGV[5])
  if ARGV[6] ~= '' then redis.call('HSET', base .. 'hdrs', seq, ARGV[6]) else redis.call('HDEL', base .. 'hdrs', seq) end
  if ARGV[8] ~= '' then
    redis.call('HSET', base .. 'repl', seq, ARGV[8])
    for _, c in ipairs(split(ARGV[8], ',')) do redis.call('SADD', base .. 'replby:' .. c, seq) end
  else
    redis.call('HDEL', base .. 'repl', seq)
  end
  dropCache(seq)
end
local ver = redis.call('INCR', KEYS[1])
if ARGV[9] and ARGV[9] ~= '' then
  local newMem = seq == '' and '' or ARGV[7]
  redis.call('PUBLISH', ARGV[9], table.concat({ 'delta', base, ver, oldSeq or '', oldMem, seq, newMem }, '\t'))
end
return ver
