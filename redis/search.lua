-- search: one page of the intersection of sorted sets, in sequence order, with the
-- pre-serialised documents. Variable key count (called with numKeys first).
-- KEYS[1]    <base>ver    namespace marker (missing: index not built, return -1)
-- KEYS[2]    <base>docs   seq -> serialised service object
-- KEYS[3..]  the filter sets (members and scores are service seqs); at least one
-- ARGV[1]    after        exclusive lower bound on seq ("" for the first page)
-- ARGV[2]    limit        page size; limit+1 are looked for to know whether more exist
-- ARGV[3]    budget       most members of the smallest set to examine (0 = no bound)
-- ARGV[4]    heavy        planner threshold: with several sets whose smallest has more
--                          members than this, do not scan here (0 = always scan)
-- ARGV[5]    joined       "1": answer the documents as one string, joined with "," (the
--                          body of a search answer but its brackets; no per-document
--                          strings for the caller to parse and join again)
-- Returns: -1 when the namespace is not indexed; { -2, version } when the intersection is
-- heavy (the caller runs it in the worker pool); otherwise
--   { more (0/1), lastSeq ("" none), exhausted (0/1: budget ran out), seq1, doc1, seq2, doc2, ... }
-- or, joined: { more, lastSeq, exhausted, "doc1,doc2,..." }
if redis.call('EXISTS', KEYS[1]) == 0 then return -1 end
local limit = tonumber(ARGV[2])
local budget = tonumber(ARGV[3])
local lower = ARGV[1] == '' and '-inf' or ('(' .. ARGV[1])

-- drive the scan from the smallest set, probe the others
local sets = {}
for i = 3, #KEYS do
  sets[#sets + 1] = { key = KEYS[i], n = redis.call('ZCARD', KEYS[i]) }
end
table.sort(sets, function(a, b) return a.n < b.n end)
local out = { 0, '', 0 }
if ARGV[5] == '1' then out[4] = '' end
if sets[1].n == 0 then return out end
local heavy = tonumber(ARGV[4] or '0')
if #sets > 1 and heavy > 0 and sets[1].n > heavy then
  return { -2, redis.call('GET', KEYS[1]) }
end

local found = {}
if #sets == 1 then
  found = redis.call('ZRANGEBYSCORE', sets[1].key, lower, '+inf', 'LIMIT', 0, limit + 1)
else
  local scanned = 0
  local batch = 512
  local cursor = lower
  while #found <= limit do
    local page = redis.call('ZRANGEBYSCORE', sets[1].key, cursor, '+inf', 'LIMIT', 0, batch)
    if #page == 0 then break end
    for _, m in ipairs(page) do
      local ok = true
      for j = 2, #sets do
        if not redis.call('ZSCORE', sets[j].key, m) then ok = false; break end
      end
      if ok then
        found[#found + 1] = m
        if #found > limit then break end
      end
    end
    scanned = scanned + #page
    cursor = '(' .. page[#page]
    if #page < batch then break end
    if budget > 0 and scanned >= budget and #found <= limit then
      out[3] = 1
      out[2] = page[#page]
      break
    end
  end
end

if #found > limit then
  out[1] = 1
  found[#found] = nil
end
if ARGV[5] == '1' then
  local docs = {}
  if #found > 0 then
    docs = redis.call('HMGET', KEYS[2], unpack(found))
    for i = 1, #found do
      if not docs[i] then docs[i] = 'null' end
    end
    if out[3] == 0 then out[2] = found[#found] end
  end
  out[4] = table.concat(docs, ',')
  return out
end
if #found > 0 then
  local docs = redis.call('HMGET', KEYS[2], unpack(found))
  for i, s in ipairs(found) do
    out[#out + 1] = s
    out[#out + 1] = docs[i] or 'null'
  end
  if out[3] == 0 then out[2] = found[#found] end
end
return out
