-- apply-sandbox: make a sandbox's metadata hash (what the rate-limit script reads) equal
-- a state read from PostgreSQL, unless a newer version of it is already there.
-- KEYS[1]  sb:{uuid}     hash: name, tier, limit, rev
-- ARGV[1]  rev           the sandbox row's version (sandboxes.version)
-- ARGV[2]  name
-- ARGV[3]  tier
-- ARGV[4]  limit         requests per minute of that tier
-- Returns 1 applied, 0 stale (a newer version is in place).
local cur = tonumber(redis.call('HGET', KEYS[1], 'rev') or '-1')
local rev = tonumber(ARGV[1])
if cur > rev then return 0 end
redis.call('HSET', KEYS[1], 'rev', rev, 'name', ARGV[2], 'tier', ARGV[3], 'limit', ARGV[4])
return 1
