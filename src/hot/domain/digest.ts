// Digests of serialised documents and the ETag of a search page made from them: a page's tag
// hashes its documents' digests (computed once per document where it is cached), never the
// page's own ~33 KB. Shared by the near cache, the Redis and pool paths and the routes, so
// that every path gives one page one tag (docs/decisions/canonical-queries-and-etags.md).
import { hash } from 'node:crypto';

/** Bytes of a document's digest: 128 bits. */
export const DIGEST_BYTES = 16;

/**
 * A document's bytes and its digest: the first 16 bytes of the SHA-256 of those bytes, as
 * four big-endian 32-bit integers (plain fields: copying them into a page's digest list costs
 * four integer stores, where a string or Buffer per document cost a call each).
 */
export interface Doc {
  buf: Buffer;
  d0: number;
  d1: number;
  d2: number;
  d3: number;
}

/** A document with its digest (computed here: once per document where it is cached). */
export function digested(buf: Buffer): Doc {
  const h = hash('sha256', buf, 'hex');
  return { buf, d0: parseInt(h.slice(0, 8), 16) | 0, d1: parseInt(h.slice(8, 16), 16) | 0, d2: parseInt(h.slice(16, 24), 16) | 0, d3: parseInt(h.slice(24, 32), 16) | 0 };
}

/** The digests of a page's documents, in page order, as bytes (n × 16). */
export function digestBytes(docs: readonly Doc[]): Uint8Array {
  const out = new Uint8Array(docs.length * DIGEST_BYTES);
  const v = new DataView(out.buffer);
  for (let i = 0, at = 0; i < docs.length; i++, at += DIGEST_BYTES) {
    const d = docs[i]!;
    v.setInt32(at, d.d0);
    v.setInt32(at + 4, d.d1);
    v.setInt32(at + 8, d.d2);
    v.setInt32(at + 12, d.d3);
  }
  return out;
}

/**
 * A search page's strong ETag from its documents' digests (digestBytes, page order) and its
 * Link header ("" when none): SHA-256 over digest_1 .. digest_n, "\n", Link; its first 22
 * base64url characters (132 bits, as http/conditional.ts etagOf). The body of a search page is
 * "[" + the documents joined by "," + "]", so the digests and the Link determine the whole
 * answer, and every path that serves a page (near cache, Redis, the worker pool, the result
 * cache) computes the same tag for the same answer, on every node. ~1.6 KB hashed for a page of
 * 100 instead of the page's ~33 KB.
 */
export function pageEtag(digests: Uint8Array, link: string): string {
  const n = digests.length;
  // into scratch memory (hashed at once, never kept): no buffer per page
  const need = n + 1 + link.length * 3;
  if (need > etagScratch.length) etagScratch = Buffer.allocUnsafeSlow(2 ** Math.ceil(Math.log2(need)));
  const buf = etagScratch;
  buf.set(digests, 0);
  buf[n] = 0x0a; // \n
  // Stryker disable next-line StringLiteral: Buffer#write takes an empty encoding name for its default, UTF-8: the same bytes
  const len = n + 1 + buf.write(link, n + 1, 'utf8');
  return '"' + hash('sha256', buf.subarray(0, len), 'base64url').slice(0, 22) + '"';
}

/** pageEtag()'s input, reused: grown as needed (a UTF-8 byte per UTF-16 unit takes at most 3). */
let etagScratch = Buffer.allocUnsafeSlow(4096);
