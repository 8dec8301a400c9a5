-- One service's state into one generation of the index (redis/README.md, "Revisions"):
-- the body of apply-service-1.lua (one state) and apply-services-1.lua (a group commit's or
-- a batch's states in one call). Needs buckets.lua, dimensions.lua and doc-codec.lua included
-- before it.
-- applyOne(verKey, base, id, rev, seq, doc, hdr, members, repl, channel, add) makes the entry
-- of `id` equal to that state unless a newer revision is in place, and returns the
-- namespace version after it (>= 2), or 0 when stale. The ids hash holds both: id ->
-- "<seq>:<revision>", or ":<revision>" once the service is gone. A previous state's members
-- are removed at once; the new state's are handed to add(setKey, seq), which adds them at
-- once (apply-service) or together with the other states' (apply-services: one read and one
-- write of each set per call instead of per service). A capability the previous state had
-- and this one has not (a patch, a deletion) is recorded as left at this revision:
-- <base>ct:<capability> id -> revision, the capability in <base>ctcaps (the Consul catalog's
-- index, docs/decisions/consul-index.md). Needs capability.lua (CAPABILITY_SET) included too.
local function applySplit(s, sep)
  local out = {}
  if not s or s == '' then return out end
  for part in string.gmatch(s, '([^' .. sep .. ']+)') do out[#out + 1] = part end
  return out
end
local function applyDropCache(base, seq)
  redis.call('DEL', base .. 'rc:' .. seq)
  for _, s in ipairs(redis.call('SMEMBERS', base .. 'replby:' .. seq)) do
    redis.call('DEL', base .. 'rc:' .. s)
  end
end
-- the capabilities among old members that the new ones lack: left at revText, unless an
-- entry is newer already (the rebuild's or the readiness watcher's raise, capability-
-- tombstones-1.lua, wrote the service's later revision: an entry never falls)
local function applyLeft(base, id, revText, oldMembers, newMembers)
  local keep = {}
  for _, m in ipairs(newMembers) do keep[m] = true end
  local n = #CAPABILITY_SET
  for _, m in ipairs(oldMembers) do
    if not keep[m] and string.sub(m, 1, n) == CAPABILITY_SET then
      local cap = string.sub(m, n + 1)
      local key = base .. 'ct:' .. cap
      if (tonumber(redis.call('HGET', key, id) or '-1') or -1) < tonumber(revText) then redis.call('HSET', key, id, revText) end
      redis.call('SADD', base .. 'ctcaps', cap)
    end
  end
end
local function applyOne(verKey, base, id, revText, seq, doc, hdr, members, repl, channel, add)
  local rev = tonumber(revText)
  local entry = redis.call('HGET', base .. 'ids', id) or ''
  local oldSeq, cur = string.match(entry, '^(%d*):(%d+)$')
  if cur and tonumber(cur) > rev then return 0 end
  if oldSeq == '' then oldSeq = nil end
  -- the previous state's sets (derived from its stored document: memberSuffixes(), generated
  -- from dimensions.ts), also published in the delta below
  local oldMembers = oldSeq and memberSuffixes(docDecode(redis.call('HGET', base .. 'docs', oldSeq))) or {}
  local oldMem = table.concat(oldMembers, '\n')
  if oldSeq then
    for _, m in ipairs(oldMembers) do
      setRemove(base, m, tonumber(oldSeq))
    end
    for _, c in ipairs(applySplit(redis.call('HGET', base .. 'repl', oldSeq), ',')) do
      redis.call('SREM', base .. 'replby:' .. c, oldSeq)
    end
    applyDropCache(base, oldSeq)
    applyLeft(base, id, revText, oldMembers, seq == '' and {} or applySplit(members, '\n'))
  end
  if seq == '' then
    if oldSeq then
      redis.call('HDEL', base .. 'docs', oldSeq)
      redis.call('HDEL', base .. 'hdrs', oldSeq)
      redis.call('HDEL', base .. 'repl', oldSeq)
    end
    -- the revision stays, so that an older state of this id loses afterwards
    redis.call('HSET', base .. 'ids', id, ':' .. revText)
  else
    local n = tonumber(seq)
    for _, m in ipairs(applySplit(members, '\n')) do add(base .. m, n) end
    redis.call('HSET', base .. 'ids', id, seq .. ':' .. revText)
    redis.call('HSET', base .. 'docs', seq, doc)
    if hdr ~= '' then redis.call('HSET', base .. 'hdrs', seq, hdr) else redis.call('HDEL', base .. 'hdrs', seq) end
    if repl ~= '' then
      redis.call('HSET', base .. 'repl', seq, repl)
      for _, c in ipairs(applySplit(repl, ',')) do redis.call('SADD', base .. 'replby:' .. c, seq) end
    else
      redis.call('HDEL', base .. 'repl', seq)
    end
    applyDropCache(base, seq)
  end
  local ver = redis.call('INCR', verKey)
  if channel and channel ~= '' then
    local newMem = seq == '' and '' or members
    redis.call('PUBLISH', channel, table.concat({ 'delta', base, ver, oldSeq or '', oldMem, seq, newMem }, '\t'))
  end
  return ver
end
