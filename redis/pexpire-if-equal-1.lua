-- pexpire-if-equal: renew a lock only while we still own it (the rebuild's heartbeat).
-- KEYS[1]  the lock key
-- ARGV[1]  our token
-- ARGV[2]  new time to live, ms
-- Returns 1 renewed, 0 the lock is gone or someone else's (stop: another rebuild may run)
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return 0
