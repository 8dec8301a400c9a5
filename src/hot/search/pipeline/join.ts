// The join stage: a page's documents (bytes as stored, never parsed or re-encoded) joined into
// its JSON array, with their digests in page order for the etag stage. The near cache joins
// from its chunks of neighbouring documents (NearCache.joinNow: near-docs.ts); a page whose
// documents came one by one (from Redis, or fetched for the pool path) joins here.
import { digestBytes, type Doc } from '../../domain/digest.js';

/** One page of a search as the bytes of its JSON array, and its documents' digests (pageEtag). */
export interface PageBody {
  body: Buffer;
  more: boolean;
  /** seq to continue after, "" when none */
  last: string;
  /** the documents' digests in page order, 16 bytes each (domain/digest.ts) */
  digests: Uint8Array;
}

/** what a page holds for a seq whose document is gone (search.lua answers the same) */
export const NULL_DOC = Buffer.from('null');

/** A page from its documents: their bytes joined into its JSON array, and their digests. */
export function joinPage(docs: Doc[], more: boolean, last: string): PageBody {
  return { body: joinDocs(docs), more, last, digests: digestBytes(docs) };
}

/** A page's JSON array from its documents' bytes: one allocation, no decoding. */
export function joinDocs(docs: Doc[]): Buffer {
  let n = 2 + Math.max(0, docs.length - 1);
  for (const d of docs) n += d.buf.length;
  const out = Buffer.allocUnsafe(n);
  let at = 0;
  out[at++] = 0x5b; // [
  // TypedArray set(), not Buffer copy(): copy() checks its arguments in JS on every call
  // (docs/decisions/redis-index.md)
  for (let i = 0; i < docs.length; i++) {
    if (i) out[at++] = 0x2c; // ,
    const d = docs[i]!.buf;
    out.set(d, at);
    at += d.length;
  }
  out[at] = 0x5d; // ]
  return out;
}
