-- health-flip: a page of expired services of one namespace turned critical in the index
-- without the general apply-service: only their documents' health and the sets that depend on
-- health change (src/hot/liveness/expiry.ts derives both from the table of dimensions and
-- serializeService, and passes them here). Two uses (redis/README.md, "Revisions"):
--   flip    the sweeper, right after lease-sweep-3.lua marked the leases critical and BEFORE
--           PostgreSQL has the change: the transition is visible at once; the revision in
--           `ids` stays (the state is provisional: any state applied from PostgreSQL at that
--           revision or later replaces it). Only where `ids` holds exactly the revision the
--           lease was made from (a newer state in place: the durable write decides).
--   commit  after the expiry committed: `ids` takes the committed revision; a document
--           already flipped stays as it is (no second version, delta or ETag change).
--           Where the index holds neither the revision the expiry was made from nor a newer
--           one, or a document without the expected health, the id is returned and the
--           caller applies the committed state with apply-service.
-- The page is one write for the near caches: the namespace version rises by one (not one per
-- service) and one delta names every seq it changed:
--   deltas\t<base>\t<ver>\t<seq,seq,…>\t<sets left>\t<sets joined>
-- (redis/README.md, the pub/sub channel; src/hot/search/near/state.ts parseDelta).
-- KEYS[1]  <base>ver:2…  the namespace marker/version counter; also routes the call
-- ARGV[1]  <base>        "<prefix>reg:{ns}:<gen>:"
-- ARGV[2]  channel       pub/sub channel for deltas and the namespace's cache invalidation ("" none)
-- ARGV[3]  ns            the namespace (the invalidation message)
-- ARGV[4]  old tail      the passing document's health, up to its ttl: ',"health":{"status":"passing","ttl":'
-- ARGV[5]  new tail      the same for critical
-- ARGV[6]  sets left     newline-separated suffixes a service leaves when it turns critical ("h")
-- ARGV[7]  sets joined   newline-separated suffixes it joins ("" none)
-- ARGV[8]  mode          "flip" or "commit"
-- ARGV[9…] per service: id, the revision the expiry was made from, the committed revision
--          (flip: the same as the second)
-- Returns -1 when the namespace is not indexed, else {changed, id…}: how many documents
-- changed, then (commit) the ids left to apply-service.
--@include buckets.lua
--@include doc-codec.lua
if redis.call('EXISTS', KEYS[1]) == 0 then return -1 end
local base, channel, oldTail, newTail, commit = ARGV[1], ARGV[2], ARGV[4], ARGV[5], ARGV[8] == 'commit'
local function split(s)
  local out = {}
  for part in string.gmatch(s, '([^\n]+)') do out[#out + 1] = part end
  return out
end
local left, joined = split(ARGV[6]), split(ARGV[7])
-- the document with its health tail (at the very end: serviceObject() writes health last) swapped
local function patched(doc)
  local from = #doc - #oldTail - 8
  if from < 1 then from = 1 end
  local at = string.find(doc, oldTail, from, true)
  if not at then return nil end
  local ttl = string.match(string.sub(doc, at + #oldTail), '^(%d+)}}$')
  if not ttl then return nil end
  return string.sub(doc, 1, at - 1) .. newTail .. ttl .. '}}'
end
local function isCritical(doc)
  local from = #doc - #newTail - 8
  if from < 1 then from = 1 end
  local at = string.find(doc, newTail, from, true)
  return at and string.match(string.sub(doc, at + #newTail), '^%d+}}$') ~= nil
end
local changed = 0
local out = { 0 }
local gone = {}
local seqs = {}
for i = 9, #ARGV, 3 do
  local id, from, to = ARGV[i], tonumber(ARGV[i + 1]), ARGV[i + 2]
  local entry = redis.call('HGET', base .. 'ids', id) or ''
  local seq, cur = string.match(entry, '^(%d*):(%d+)$')
  cur = tonumber(cur)
  if commit and cur and cur >= tonumber(to) then
    -- a newer state (or this one) is in place: nothing to do
  elseif seq == nil or seq == '' or cur ~= from then
    if commit then out[#out + 1] = id end
  else
    local doc = docDecode(redis.call('HGET', base .. 'docs', seq))
    local new = doc and patched(doc)
    if new then
      local n = tonumber(seq)
      redis.call('HSET', base .. 'docs', seq, docEncode(new))
      gone[#gone + 1] = n
      -- the replacement lists that show this service carry its document
      redis.call('DEL', base .. 'rc:' .. seq)
      for _, s in ipairs(redis.call('SMEMBERS', base .. 'replby:' .. seq)) do redis.call('DEL', base .. 'rc:' .. s) end
      seqs[#seqs + 1] = seq
      changed = changed + 1
    elseif commit and not (doc and isCritical(doc)) then
      out[#out + 1] = id
      to = nil
    end
    if commit and to then redis.call('HSET', base .. 'ids', id, seq .. ':' .. to) end
  end
end
-- the sets, once per page (each bucket read and written once), and one version and one
-- delta for the page: every seq in it leaves the sets left and joins the sets joined
if #gone > 0 then
  for _, m in ipairs(left) do setRemoveMany(base, m, gone) end
  for _, m in ipairs(joined) do setAdd(base .. m, gone) end
  local ver = redis.call('INCR', KEYS[1])
  if channel ~= '' then
    redis.call('PUBLISH', channel, table.concat({ 'deltas', base, ver, table.concat(seqs, ','), ARGV[6], ARGV[7] }, '\t'))
  end
end
if changed > 0 and channel ~= '' then redis.call('PUBLISH', channel, ARGV[3]) end
out[1] = changed
return out
