// A chunk of the near cache's documents (near-docs.ts): 256 consecutive seqs of one namespace,
// their bytes one after another (each followed by ","), and an index of M 32-bit words per
// document holding its slot, where its bytes are and its digest. The record, its layout, the look-ups
// on it and the join of a page from chunks (PageJoin: the hot path of a cold page, kept in
// the module of the layout it reads, so its constants and look-ups are local to it); NearDocs
// (near-docs.ts) owns the chunks.
import { DIGEST_BYTES, type Doc } from '../../domain/digest.js';

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
 * A chunk's index: M 32-bit words per document, interleaved, so that finding a document,
 * its bytes and its digest reads one cache line (four separate arrays were four misses a
 * document at 1M services): slot, start, end (its "," is at end), then its digest as four
 * words whose bytes in memory are the digest's 16 bytes (copied as words into a page's
 * digest list, which is those bytes: digestBytes()'s layout).
 */
export const LAYOUT = { SLOTS: 256, M: 8, SLOT: 0, START: 1, END: 2, DIG: 3 } as const;
// Module-local copies, never exported bindings: an exported one lives in a module cell, which
// the optimiser does not fold into the index arithmetic of join()'s loops; copied into plain
// consts they fold as literals do (docs/decisions/near-cache-pages.md). near-docs.ts takes its
// copies the same way.
/** seqs per chunk */
const { SLOTS, M, SLOT, START, END, DIG } = LAYOUT;
/** documents up to which a chunk's index is read from the previous look-up on (PageJoin pass 1) */
const SMALL = 64;
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
  /**
   * the bytes of every document whose slot follows the previous entry's directly follow that
   * one's comma (a rewrite makes it so, a drop keeps it, an append next to a neighbour's slot
   * but not after its bytes ends it): documents of consecutive slots are then one range,
   * found from the first and last alone (PageJoin's blocks)
   */
  sorted: boolean;
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

/**
 * First index from `from` on whose slot is >= `slot` (c.n when none). The slots are distinct
 * and ascending below SLOTS, so index i holds a slot in [i, i + SLOTS - n]: the answer lies in
 * [slot - (SLOTS - n), slot], one entry wide in a full chunk (a sparse page of a full chunk
 * reads one index line a document, not eight by halving).
 */
export function lowerBound(c: Chunk, slot: number, from: number): number {
  const m = c.meta;
  const n = c.n;
  if (from < n && m[from * M + SLOT]! >= slot && (from === 0 || m[(from - 1) * M + SLOT]! < slot)) return from;
  let lo = Math.max(from, slot - (SLOTS - n));
  let hi = Math.min(n, slot);
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (m[mid * M + SLOT]! < slot) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/**
 * Index of `slot`, or -1, searched for only in [slot - (SLOTS - n), slot] (lowerBound): its
 * first probe's address depends on nothing read before it. A page's look-ups (PageJoin pass 1)
 * then overlap their cache misses; from a previous answer on, each waited for the last (a
 * sparse page over full chunks: one index line a document, missed one after another).
 */
export function indexOf(c: Chunk, slot: number): number {
  const m = c.meta;
  const n = c.n;
  let lo = slot - (SLOTS - n);
  if (lo < 0) lo = 0;
  let hi = n < slot ? n : slot;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (m[mid * M + SLOT]! < slot) lo = mid + 1;
    else hi = mid;
  }
  return lo < n && m[lo * M + SLOT] === slot ? lo : -1;
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

/** where join()'s reads ahead of its copies go (read by nothing: kept so that they are not optimised away) */
let _touched = 0;
/** The join of a page from chunks, with its scratch memory (one per NearDocs: per thread). */
export class PageJoin {
  // scratch of join(): the page's runs (chunk, first index, last index + 1), its body and digests
  private runChunk: (Chunk | null)[] = [];
  private runFrom = new Int32Array(SLOTS);
  private runTo = new Int32Array(SLOTS);
  private body = Buffer.allocUnsafeSlow(64 * 1024);
  private digs = Buffer.allocUnsafeSlow(SLOTS * DIGEST_BYTES);
  private digs32 = new Int32Array(this.digs.buffer, this.digs.byteOffset, this.digs.length / 4);

  /**
   * The page of `seqs` (ascending) as its JSON array and its documents' digests (page order,
   * 16 bytes each), if every document is held; null otherwise. Both are views of scratch
   * memory, valid until the next call.
   */
  join(map: (Chunk | undefined)[] | undefined, resets: number, seqs: Float64Array): { body: Buffer; digests: Buffer } | null {
    if (!map && seqs.length) return null;
    // pass 1: find every document, as runs of neighbours in one chunk; the body's length
    let runs = 0;
    let len = 2;
    let c: Chunk | undefined;
    let cno = -1;
    let ci = 0;
    // a page of consecutive seqs (a dense set's): the part of it in a sorted chunk is one range
    // when the chunk holds as many documents between its first and last as the page has
    const consecutive = seqs.length > 1 && seqs[seqs.length - 1]! - seqs[0]! === seqs.length - 1;
    for (let k = 0; k < seqs.length; k++) {
      const seq = seqs[k]!;
      const no = Math.floor(seq / SLOTS);
      if (no !== cno) {
        c = map![no];
        if (!c || c.resets !== resets) return this.forget(runs);
        c.used = true;
        cno = no;
        ci = 0;
        if (consecutive && c.sorted) {
          const slot = seq - no * SLOTS;
          const n = Math.min(seqs.length - k, SLOTS - slot);
          const i = indexOf(c, slot);
          if (i >= 0 && indexOf(c, slot + n - 1) === i + n - 1) {
            const m = c.meta;
            if (runs === this.runFrom.length) this.growRuns();
            this.runChunk[runs] = c;
            this.runFrom[runs] = i;
            this.runTo[runs] = i + n;
            runs++;
            len += m[(i + n - 1) * M + END]! + 1 - m[i * M + START]!;
            k += n - 1;
            continue;
          }
        }
      }
      // a small chunk's index is in cache: from the previous answer on (a dense page reads the
      // next entry); a large one's is not: a look-up that waits for no earlier one
      const i = c!.n <= SMALL ? find(c!, seq - no * SLOTS, ci) : indexOf(c!, seq - no * SLOTS);
      if (i < 0) return this.forget(runs);
      ci = i + 1;
      // the same run when the previous document of the page is this one's neighbour in its chunk
      const m = c!.meta;
      const st = m[i * M + START]!;
      const en = m[i * M + END]!;
      if (runs && this.runChunk[runs - 1] === c && this.runTo[runs - 1] === i && st === m[(i - 1) * M + END]! + 1) {
        this.runTo[runs - 1] = i + 1;
      } else {
        if (runs === this.runFrom.length) this.growRuns();
        this.runChunk[runs] = c!;
        this.runFrom[runs] = i;
        this.runTo[runs] = i + 1;
        runs++;
      }
      len += en - st + 1;
    }
    if (seqs.length) len--; // n documents, n - 1 commas
    // a sparse page's documents (runs of one): each one's view and its bytes' first and last
    // lines read ahead, their misses overlapping, not one after another in pass 2's copies
    if (runs > 8) {
      let t = 0;
      for (let r = 0; r < runs; r++) {
        const from = this.runFrom[r]!;
        if (this.runTo[r] !== from + 1) continue;
        const ch = this.runChunk[r]!;
        t ^= ch.views[from]!.length + ch.text[ch.meta[from * M + START]!]! + ch.text[ch.meta[from * M + END]!]!;
      }
      _touched ^= t;
    }
    // pass 2: copy each run (its commas included) and its digests
    if (len > this.body.length) this.body = Buffer.allocUnsafeSlow(2 ** Math.ceil(Math.log2(len)));
    if (seqs.length * DIGEST_BYTES > this.digs.length) {
      this.digs = Buffer.allocUnsafeSlow(2 ** Math.ceil(Math.log2(seqs.length * DIGEST_BYTES)));
      this.digs32 = new Int32Array(this.digs.buffer, this.digs.byteOffset, this.digs.length / 4);
    }
    const out = this.body;
    const d32 = this.digs32;
    let at = 0;
    let dat = 0;
    out[at++] = 0x5b; // [
    for (let r = 0; r < runs; r++) {
      const ch = this.runChunk[r]!;
      const from = this.runFrom[r]!;
      const to = this.runTo[r]!;
      // through its last document's comma: the separator before the next run, or the "]" spot.
      // (A Uint8Array over the chunk's memory: cheaper to make than a Buffer's subarray.)
      const m = ch.meta;
      const a = m[from * M + START]!;
      const b = m[(to - 1) * M + END]! + 1;
      out.set(to - from === 1 ? ch.views[from]! : new Uint8Array(ch.text.buffer, ch.text.byteOffset + a, b - a), at);
      at += b - a;
      // the digests: memory copied as words (the byte order stays as stored)
      for (let k = from * M + DIG, e = to * M + DIG; k < e; k += M) {
        d32[dat++] = m[k]!;
        d32[dat++] = m[k + 1]!;
        d32[dat++] = m[k + 2]!;
        d32[dat++] = m[k + 3]!;
      }
      this.runChunk[r] = null; // (scratch keeps no chunk alive)
    }
    if (runs) at--; // the last comma
    out[at++] = 0x5d; // ]
    return { body: out.subarray(0, at), digests: this.digs.subarray(0, dat * 4) };
  }

  /** join()'s miss: its scratch keeps no chunk alive. */
  private forget(runs: number): null {
    for (let r = 0; r < runs; r++) this.runChunk[r] = null;
    return null;
  }

  private growRuns(): void {
    const n = this.runFrom.length * 2;
    const f = new Int32Array(n);
    f.set(this.runFrom);
    const t = new Int32Array(n);
    t.set(this.runTo);
    this.runFrom = f;
    this.runTo = t;
  }
}
