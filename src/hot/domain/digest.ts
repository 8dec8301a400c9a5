// Digests of serialised documents and the ETag of a search page made from them: a page's tag
// hashes its documents' digests (computed once per document where it is cached), never the
// page's own ~33 KB. Shared by the near cache, the Redis and pool paths and the routes, so
// that every path gives one page one tag (docs/decisions.md, "ETag from document digests").
import { hash } from 'node:crypto';

/** Bytes of a document's digest (docDigest): 128 bits, as for the ETags themselves. */
export const DIGEST_BYTES = 16;

/**
 * A document's digest: the first 16 bytes of the SHA-256 of its serialised bytes, as a
 * 16-character latin1 string (one character per byte: cheaper to keep than a Buffer).
 * Computed once per document where it is cached (index/near.ts), or where a page is fetched
 * whole (the Redis and pool paths), so that a page's ETag never hashes the page itself.
 */
export function docDigest(doc: Uint8Array): string {
  return hash('sha256', doc, 'binary').slice(0, DIGEST_BYTES); // 'binary': latin1
}

/**
 * A search page's strong ETag from its documents' digests, in page order, and its Link
 * header ("" when none): SHA-256 over digest_1 .. digest_n, "\n", Link; the first 128 bits,
 * base64url. The body of a search page is "[" + the documents joined by "," + "]", so the
 * digests and the Link determine the whole answer, and every path that serves a page (near
 * cache, Redis, the worker pool, the result cache) computes the same tag for the same
 * answer, on every node. ~1.6 KB hashed for a page of 100 instead of the page's ~33 KB.
 */
export function pageEtag(digests: readonly string[], link: string): string {
  const n = digests.length * DIGEST_BYTES;
  const buf = Buffer.allocUnsafe(n + 1 + Buffer.byteLength(link));
  for (let i = 0; i < digests.length; i++) buf.write(digests[i]!, i * DIGEST_BYTES, DIGEST_BYTES, 'latin1');
  buf[n] = 0x0a; // \n
  buf.write(link, n + 1, 'utf8');
  return '"' + hash('sha256', buf, 'base64url').slice(0, 22) + '"';
}
