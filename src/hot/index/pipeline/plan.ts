// The page pipeline (docs/decisions/page-pipeline.md). Every search page is
// built in five named stages, whatever answers it:
//
//   plan       what the page needs: the filter sets (domain/keys.ts filterSuffixes), the
//              cursor as a seq, limit + 1 to learn whether more follow  (this file)
//   sets       the sorted seqs of each set, from where they are        (sets.ts)
//   intersect  their intersection from the cursor, inline or in the pool  (intersect.ts)
//   join       the page's documents as its JSON array, with their digests  (join.ts)
//   etag       the page's tag from those digests and its Link           (etag.ts)
//
// Three kinds of source differ only in where a stage gets its data:
//   near cache  sets and documents in this thread's memory (near.ts): synchronously when
//               everything is held (Index.nearBodyNow), else loading what is missing
//   Redis       search.lua runs sets, intersect and the document fetch in one atomic script
//               (a page consistent with one namespace version); join and etag as the others
//   pool        a heavy intersection the planner in search.lua hands back: the sets fetched
//               by this thread (FetchedSets), intersected by a worker, the documents fetched
//               and joined here
// Every source ends in the same join and etag, so one page has one body and one ETag
// whichever answered it.

/** The cursor of a page as a seq: -1 (before every seq) for the first page. */
export function cursorOf(after: string): number {
  return after === '' ? -1 : Number(after);
}

/** The seq a page's next one continues after: its last, "" for an empty page. */
export function lastSeq(seqs: ArrayLike<number>): string {
  return seqs.length ? String(seqs[seqs.length - 1]) : '';
}
