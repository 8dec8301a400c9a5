-- get-service: one service by id.
-- KEYS[1]  <base>ver:2   namespace marker (missing: -1)
-- ARGV[1]  <base>
-- ARGV[2]  id
-- Returns -1 (not indexed), 0 (no such service) or { seq, doc, hdr ("" none) }
--@include doc-codec.lua
if redis.call('EXISTS', KEYS[1]) == 0 then return -1 end
local base = ARGV[1]
-- ids: id -> "<seq>:<revision>", or ":<revision>" for a deleted id
local seq = string.match(redis.call('HGET', base .. 'ids', ARGV[2]) or '', '^(%d+):')
if not seq then return 0 end
return { seq, docDecode(redis.call('HGET', base .. 'docs', seq)) or 'null', redis.call('HGET', base .. 'hdrs', seq) or '' }
