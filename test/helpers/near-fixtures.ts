// Fixtures of the near cache's unit tests (test/unit/near-deltas, near-reads and
// near-budget): one namespace base, the delta message a write publishes for it, a loader
// that counts its calls, and a set as a plain array to compare.
export const B = 'reg:{production}:g1:';
export const delta = (ver: number, oldSeq: number | '', oldMem: string[], newSeq: number | '', newMem: string[]) =>
  ['delta', B, ver, oldSeq, oldMem.join('\n'), newSeq, newMem.join('\n')].join('\t');
export const loader = (ver: number, members: number[]) => {
  let calls = 0;
  const f = async () => {
    calls++;
    return { ver, members: Float64Array.from(members) };
  };
  return { f, calls: () => calls };
};
export const arr = (a: Float64Array | null) => (a ? Array.from(a) : null);
