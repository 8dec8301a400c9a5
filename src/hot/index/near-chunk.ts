// A chunk of the near cache's documents (near-docs.ts): 256 consecutive seqs of one namespace,
// their bytes side by side (each followed by ","), and an index of M 32-bit words per document
// holding its slot, where its bytes are and its digest. The record, its layout and the
// look-ups on it; NearDocs owns the chunks.
import type { Doc } from '../domain/digest.js';

export const SLOTS = 256;
/** measured shape of a chunk apart from its documents: the object, its arrays, its Set entry */
export const CHUNK_OVERHEAD = 600;
/**
 * per document slot: its index entry (M words), its view (a Uint8Array over the chunk's
 * bytes), its slot in `views`, and the heap's slack around them. Resident memory grew ~604 B a
 * document of 337 bytes over 400,000 (bench/overheads.ts): ~267 B beside its bytes, rounded
 * down to 256 because a chunk's bytes are counted with their room for more.
 */
export const PER_DOC = 256;
/**
 * A chunk's index: M 32-bit words per document, side by side, so that finding a document,
 * its bytes and its digest reads one cache line (four separate arrays were four misses a
 * document at 1M services): slot, start, end (its "," is at end), then its digest as four
 * words whose bytes in memory are the digest's 16 bytes (copied as words into a page's
 * digest list, which is those bytes: digestBytes()'s layout).
 */
export const M = 8;
export const SLOT = 0;
export const START = 1;
export const END = 2;
export const DIG = 3;
/** the platform's byte order: a digest word is stored byte-swapped on a little-endian one */
const LITTLE = new Uint8Array(new Uint32Array([1]).buffer)[0] === 1;
const swap = (x: number) => ((x & 0xff) << 24) | ((x & 0xff00) << 8) | ((x >>> 8) & 0xff00) | (x >>> 24);
/** a digest integer (Doc.d0..d3) as the word whose memory is its big-endian bytes, and back */
export const toWord = LITTLE ? swap : (x: number) => x;

export interface Chunk {
  /** namespace base id (NearCache.baseId) and chunk number (seq / 256) */
  base: number;
  no: number;
  /** its namespace's reset count when filled: an older one is dead */
  resets: number;
  /**
   * the documents, each followed by ",": in slot order when the chunk was last rewritten,
   * later ones appended (and dead bytes of dropped or replaced ones); room after `fill`
   */
  text: Buffer;
  /** bytes of `text` written */
  fill: number;
  /** documents held, and room in the index */
  n: number;
  cap: number;
  /** the index: M words per document, in slot order (see M) */
  meta: Int32Array;
  /**
   * each document with its comma, as a view of `text` made once: a page of a sparse set
   * copies its documents one by one, and a view made per copy cost twice the copy
   */
  views: Uint8Array[];
  /** read since eviction last passed it */
  used: boolean;
  /** bytes accounted for it */
  size: number;
}

/** A document that joins a chunk: its seq, bytes and digest. */
export interface Incoming {
  seq: number;
  doc: Doc;
}

export const sizeOf = (c: Chunk) => CHUNK_OVERHEAD + c.text.length + c.cap * PER_DOC;

/** First index from `from` on whose slot is >= `slot` (c.n when none). */
export function lowerBound(c: Chunk, slot: number, from: number): number {
  const m = c.meta;
  if (from < c.n && m[from * M + SLOT]! >= slot && (from === 0 || m[(from - 1) * M + SLOT]! < slot)) return from;
  let lo = from;
  let hi = c.n;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (m[mid * M + SLOT]! < slot) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** Index of `slot` from `from` on, or -1: the next one first (a dense page), else by halving. */
export function find(c: Chunk, slot: number, from: number): number {
  const i = lowerBound(c, slot, from);
  return i < c.n && c.meta[i * M + SLOT] === slot ? i : -1;
}


/** Index entry i of `meta`: the document's slot, where its bytes are, and its digest. */
export function entry(meta: Int32Array, i: number, slot: number, start: number, end: number, d: Doc): void {
  const at = i * M;
  meta[at + SLOT] = slot;
  meta[at + START] = start;
  meta[at + END] = end;
  meta[at + DIG] = toWord(d.d0);
  meta[at + DIG + 1] = toWord(d.d1);
  meta[at + DIG + 2] = toWord(d.d2);
  meta[at + DIG + 3] = toWord(d.d3);
}
