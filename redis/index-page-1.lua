-- index-page: the rebuild's bulk write. Adds a page of services of one namespace, read from
-- PostgreSQL, to a generation being built: the ids, documents, headers and replacement
-- lists in one HSET each. Their set members are not written here: the rebuilding process
-- keeps them until the pages past their buckets are in and writes each bucket once
-- (index-sets-1.lua).
-- KEYS[1]  <base>ver:2    the namespace marker of the building generation; also routes the call
-- ARGV[1]  <base>         "<prefix>reg:{ns}:<gen>:" every other key is built from it
-- then four sections of (field, value) pairs, each as its hash's HSET takes them, so that
-- they pass from ARGV to the HSET by unpack() without a Lua value per service:
--   k, then k pairs (id, "<seq>:<version>"): the services, in seq order, each with the
--          revision of its state (the version read with it) as the ids hash holds them
--   k pairs (seq, doc) in the same order
--   h, then h pairs (seq, hdr) of the services that have header data
--   r, then r pairs (seq, repl) of those with replacement candidates (comma-separated seqs)
-- Returns: -1 when the namespace marker is gone (Redis was emptied under the rebuild: it
-- starts over); { -2, s, skip ids (s of them)..., left ids... } when some ids are not new
-- to this generation, and then NOTHING is written; otherwise { k }.
-- Revision rule (redis/README.md, "Revisions"), the rebuild's side of it: a service whose
-- revision in this generation is the page's version or newer was applied by a sync while
-- the rebuild ran, and must be skipped; one with an older state already indexed (a sync
-- that loaded its state before this page was read) needs that entry replaced, which is
-- apply-service's job. Either way the script writes nothing and names them: the caller
-- sends the page again without them (a sync may add more meanwhile: the script checks
-- again) and applies the "left" ones with apply-service. Every state written records its version, so a sync still holding an
-- older state loses to it afterwards.
-- At most ~2,000 services a call: unpack() of a table is bounded by Lua's C stack (8,000).
local v = redis.call('GET', KEYS[1])
if not v then return -1 end
-- the marker is set to 1 when the rebuild starts and every sync's write to the namespace in
-- this generation increments it (apply-service, apply-services, health-flip); the rebuild's
-- own pages and set writes do not: at 1, no id of this generation can be a sync's, and none
-- is checked (a quiet rebuild's every page)
local fresh = v == '1'
local base = ARGV[1]
local k = tonumber(ARGV[2])
local ids_key = base .. 'ids'
if not fresh then
  local idl = {}
  for i = 1, k do idl[i] = ARGV[2 * i + 1] end
  local cur = redis.call('HMGET', ids_key, unpack(idl))
  local skip, left = {}, {}
  for i = 1, k do
    -- ids: id -> "<seq>:<revision>", ":<revision>" for a deleted id (apply-service-1.lua)
    local e = cur[i]
    if e then
      local oldSeq, rev = string.match(e, '^(%d*):(%d+)$')
      if tonumber(rev) >= tonumber(string.match(ARGV[2 * i + 2], ':(%d+)$')) then
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
local at = 3
redis.call('HSET', ids_key, unpack(ARGV, at, at + 2 * k - 1))
at = at + 2 * k
redis.call('HSET', base .. 'docs', unpack(ARGV, at, at + 2 * k - 1))
at = at + 2 * k
local h = tonumber(ARGV[at])
if h > 0 then redis.call('HSET', base .. 'hdrs', unpack(ARGV, at + 1, at + 2 * h)) end
at = at + 1 + 2 * h
local r = tonumber(ARGV[at])
if r > 0 then
  redis.call('HSET', base .. 'repl', unpack(ARGV, at + 1, at + 2 * r))
  for i = at + 1, at + 2 * r, 2 do
    for c in string.gmatch(ARGV[i + 1], '[^,]+') do redis.call('SADD', base .. 'replby:' .. c, ARGV[i]) end
  end
end
return { k }
