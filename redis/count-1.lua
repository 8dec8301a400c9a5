-- count: add one to a throttle counter and return the new count, giving a new counter its
-- lifetime in the same step (a counter is never left without an expiry). Callers compare
-- the count AFTER counting, so parallel requests cannot all read the same old value.
-- KEYS[1]  the counter (throttle:create:<addr>:<minute>, throttle:login:<addr>:<minute>)
-- ARGV[1]  lifetime of a new counter, seconds
-- Returns the count including this one.
local n = redis.call('INCR', KEYS[1])
if n == 1 then redis.call('EXPIRE', KEYS[1], tonumber(ARGV[1])) end
return n
