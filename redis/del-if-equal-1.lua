-- del-if-equal: compare-and-delete of one string key (release a lock we own; drop a live
-- generation pointer only if it still names the generation found broken).
-- KEYS[1]  the key
-- ARGV[1]  the value it must hold
-- Returns 1 deleted, 0 it held something else (or nothing)
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
