-- near-load: one filter set of a namespace, whole, with the namespace version it is
-- consistent with, for a node's near cache (src/hot/index/near.ts). Atomic: the members are
-- exactly those of that version, so the deltas published after it (apply-service-1.lua)
-- bring the copy up to date.
-- KEYS[1]  <base>ver      namespace marker and version
-- KEYS[2]  <base><suffix> the set (zset; member = score = seq)
-- Returns: { ver, member1, member2, ... } in seq order, or -1 when the namespace is not indexed.
if redis.call('EXISTS', KEYS[1]) == 0 then return -1 end
local out = redis.call('ZRANGE', KEYS[2], 0, -1)
table.insert(out, 1, redis.call('GET', KEYS[1]))
return out
