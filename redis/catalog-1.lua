-- catalog: the members of one capability (or every service) of a namespace with their
-- revisions, and the capability tombstones, in one atomic read: what the Consul-compatible
-- catalog's answers and their X-Consul-Index are made of (src/hot/discovery/consul/,
-- docs/decisions/consul-index.md). Writes nothing.
-- KEYS[1]  <base>ver:…    the namespace marker (missing: not indexed)
-- ARGV[1]  <base>         "<prefix>reg:{ns}:<gen>:"
-- ARGV[2]  set            "c:<capability>" (that capability's members) or "all" (every service)
-- ARGV[3]  max            more members than this: nothing read
-- ARGV[4]  tombstones of  a capability, or "" for every capability that has any (<base>ctcaps)
-- Returns: -1 when the namespace is not indexed; { -3, members } when there are more than
-- max; otherwise { docs, revs, tombs }: the members' documents and the revisions of their
-- `ids` entries, in seq order, and tombs = { capability, id, revision, … } (<base>ct:<cap>:
-- who left it, at which revision; a service that holds it again is a member as well).
--@include buckets.lua
--@include doc-codec.lua
if redis.call('EXISTS', KEYS[1]) == 0 then return -1 end
local base = ARGV[1]
local set = base .. ARGV[2]
local n = tonumber(redis.call('HGET', set, 'n')) or 0
if n > tonumber(ARGV[3]) then return { -3, n } end

-- the set's seqs in order: its buckets sorted by number, each bucket's offsets in order
local flat = redis.call('HGETALL', set)
local buckets = {}
for i = 1, #flat, 2 do
  local b = tonumber(flat[i])
  if b then buckets[#buckets + 1] = { b = b, s = flat[i + 1] } end
end
table.sort(buckets, function(x, y) return x.b < y.b end)
local seqs = {}
for _, e in ipairs(buckets) do
  for i = 1, #e.s / 2 do seqs[#seqs + 1] = tostring(e.b * BW + boff(e.s, i)) end
end

-- documents and revisions, a thousand at a time (unpack() has a bound)
local docs, revs = {}, {}
local CHUNK = 1000
for i = 1, #seqs, CHUNK do
  local part = {}
  for j = i, math.min(i + CHUNK - 1, #seqs) do part[#part + 1] = seqs[j] end
  local got = redis.call('HMGET', base .. 'docs', unpack(part))
  local ids = {}
  for k = 1, #part do
    local d = docDecode(got[k])
    if d then
      docs[#docs + 1] = d
      -- the document's first field is its id (serviceObject(): fixed field order)
      ids[#ids + 1] = string.match(d, '^{"id":"([^"]*)"') or ''
    end
  end
  if #ids > 0 then
    for _, e in ipairs(redis.call('HMGET', base .. 'ids', unpack(ids))) do
      revs[#revs + 1] = (e and string.match(e, ':(%d+)$')) or '0'
    end
  end
end

local caps = ARGV[4] ~= '' and { ARGV[4] } or redis.call('SMEMBERS', base .. 'ctcaps')
local tombs = {}
for _, cap in ipairs(caps) do
  local t = redis.call('HGETALL', base .. 'ct:' .. cap)
  for i = 1, #t, 2 do
    tombs[#tombs + 1] = cap
    tombs[#tombs + 1] = t[i]
    tombs[#tombs + 1] = t[i + 1]
  end
end
return { docs, revs, tombs }
