-- replacements: the shared public cache of GET /services/{id}/replacements. A hit returns
-- the stored entry; a miss renders the ranked candidates from the index, stores the entry
-- for ttl seconds and returns it. apply-service deletes entries a write makes stale.
-- KEYS[1]  <base>ver:2   namespace marker (missing: -1)
-- ARGV[1]  <base>
-- ARGV[2]  id
-- ARGV[3]  ttl seconds
-- ARGV[4]  now (ms)
-- Returns -1 (not indexed), 0 (no such service) or
--   { 'HIT'|'MISS', body, etag, storedAtMs, hdr of the service ("" none) }
--@include doc-codec.lua
if redis.call('EXISTS', KEYS[1]) == 0 then return -1 end
local base = ARGV[1]
-- ids: id -> "<seq>:<revision>", or ":<revision>" for a deleted id
local seq = string.match(redis.call('HGET', base .. 'ids', ARGV[2]) or '', '^(%d+):')
if not seq then return 0 end
local hdr = redis.call('HGET', base .. 'hdrs', seq) or ''
local key = base .. 'rc:' .. seq
local hit = redis.call('HMGET', key, 'b', 'e', 't')
if hit[1] then return { 'HIT', hit[1], hit[2], hit[3], hdr } end
local docs = {}
local list = redis.call('HGET', base .. 'repl', seq)
if list then
  local seqs = {}
  for s in string.gmatch(list, '([^,]+)') do seqs[#seqs + 1] = s end
  if #seqs > 0 then
    for _, d in ipairs(redis.call('HMGET', base .. 'docs', unpack(seqs))) do
      if d then docs[#docs + 1] = docDecode(d) end
    end
  end
end
local body = '[' .. table.concat(docs, ',') .. ']'
local etag = '"' .. redis.sha1hex(body) .. '"'
redis.call('HSET', key, 'b', body, 'e', etag, 't', ARGV[4])
redis.call('EXPIRE', key, tonumber(ARGV[3]))
return { 'MISS', body, etag, ARGV[4], hdr }
