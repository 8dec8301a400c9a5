-- apply-service: make the index entry of one service equal to a state read from
-- PostgreSQL, unless a newer state was already applied (revisions: the service's version
-- read with the state, or its tombstone's; rule in redis/README.md, "Revisions"). The ids
-- hash holds both: id -> "<seq>:<revision>", or ":<revision>" once the service is gone.
-- KEYS[1]  <base>ver:2    the namespace marker/version counter; also routes the call
-- ARGV[1]  <base>         "<prefix>reg:{ns}:<gen>:" every other key is built from it
-- ARGV[2]  id             service id
-- ARGV[3]  rev            the revision of that state (services.version or the tombstone's)
-- ARGV[4]  seq            the service's sequence number, "" when the service is gone
-- ARGV[5]  doc            serialised service object ("" when gone)
-- ARGV[6]  hdr            deprecation header data "<deprecatedAtSec>|<sunset HTTP-date>" or ""
-- ARGV[7]  members        newline-separated set suffixes (keys.ts memberSuffixes()): "all", then
--                         each dimension's ("c:<cap>", "p:<k>:<v>", "d:<dc>", "r:<proto>", "iot", …)
--                         (the sets a previous state is in are derived from its stored
--                         document: memberSuffixes() below, generated from dimensions.ts)
-- ARGV[8]  repl           comma-separated candidate seqs, ranked ("" none)
-- ARGV[9]  channel        pub/sub channel for the delta of an applied write ("" none: the
--                          rebuild's own applies, before anyone reads that generation): the
--                          near caches of every node apply it to the sets they hold
--                          (src/hot/search/near/near-cache.ts). "delta\t<base>\t<ver>\t<oldSeq>\t
--                          <old members>\t<newSeq>\t<new members>" (members newline-
--                          separated; seqs "" when absent). Published inside the script, so
--                          deltas reach subscribers in the order writes were applied.
-- Returns: the namespace version after the write (>= 2) when applied, 0 stale (a newer
-- revision is in place), -1 namespace not indexed
-- (Redis was emptied: the caller keeps its outbox row for after the rebuild).
-- All keys share the {ns} hash tag of KEYS[1], so the call stays in one cluster slot.
-- The work itself is lib/apply.lua's (shared with apply-services-1.lua, the same for many).
--@include buckets.lua
--@include dimensions.lua
--@include capability.lua
--@include doc-codec.lua
--@include apply.lua
if redis.call('EXISTS', KEYS[1]) == 0 then return -1 end
return applyOne(KEYS[1], ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5], ARGV[6], ARGV[7], ARGV[8], ARGV[9], function(key, n)
  setAdd(key, { n })
end)
