// The delta messages of the index's channel (redis/README.md, its pub/sub channel): what one applied
// write or one page of expiries changed in a namespace's sets, as apply-service-1.lua and
// health-flip-1.lua publish it. Decoded here, once for every reader: the near cache
// (search/near) follows them, held requests (held/) wake on them.

/**
 * One version's change to a namespace's sets: a write (one seq leaves `oldMembers`, a seq
 * joins `newMembers`), or a page of expiries (`seqs`: each of them leaves `oldMembers` and
 * joins `newMembers`; oldSeq and newSeq null).
 */
export interface Delta {
  ver: number;
  oldSeq: number | null;
  oldMembers: string[];
  newSeq: number | null;
  newMembers: string[];
  /** a page's seqs (health-flip-1.lua), null for a single write */
  seqs: number[] | null;
}

/**
 * A delta message, its base and delta (null: malformed). Two kinds, both one namespace version:
 * - "delta\t<base>\t<ver>\t<oldSeq>\t<oldMem>\t<newSeq>\t<newMem>" (apply-service-1.lua: a write);
 * - "deltas\t<base>\t<ver>\t<seq,seq,…>\t<left>\t<joined>" (health-flip-1.lua: a page of
 *   expiries, each seq leaving the sets left and joining the sets joined).
 */
export function parseDelta(msg: string): { base: string; delta: Delta } | null {
  const f = msg.split('\t');
  if (f[0] === 'deltas') {
    if (f.length !== 6 || !f[3]) return null;
    const seqs = f[3].split(',').map(Number);
    if (!seqs.every((x) => Number.isSafeInteger(x) && x >= 0)) return null;
    return { base: f[1]!, delta: { ver: Number(f[2]), oldSeq: null, oldMembers: f[4] ? f[4].split('\n') : [], newSeq: null, newMembers: f[5] ? f[5].split('\n') : [], seqs } };
  }
  if (f.length !== 7) return null;
  return {
    base: f[1]!,
    delta: {
      ver: Number(f[2]),
      oldSeq: f[3] ? Number(f[3]) : null,
      oldMembers: f[4] ? f[4].split('\n') : [],
      newSeq: f[5] ? Number(f[5]) : null,
      newMembers: f[6] ? f[6].split('\n') : [],
      seqs: null,
    },
  };
}
