// The page pipeline (docs/decisions/page-pipeline.md): every search page is built in five
// stages, whatever answers it — plan (the filter sets, the cursor as a seq, limit + 1: this
// file), sets (sets.ts), intersect (intersect.ts: inline or in the pool), join (join.ts: the
// documents as one JSON array, with their digests) and etag (etag.ts). The near cache, Redis
// (search.lua runs sets, intersect and fetch in one atomic script) and the pool differ only in
// where a stage gets its data, so one page has one body and one ETag whichever answered it.

/** The cursor of a page as a seq: -1 (before every seq) for the first page. */
export function cursorOf(after: string): number {
  return after === '' ? -1 : Number(after);
}

/** The seq a page's next one continues after: its last, "" for an empty page. */
export function lastSeq(seqs: ArrayLike<number>): string {
  return seqs.length ? String(seqs[seqs.length - 1]) : '';
}
