// The near cache's documents, in chunks of 256 consecutive seqs of one namespace: each chunk
// holds the bytes of the documents it has, in seq order, each followed by ",", with their
// digests beside them (16 bytes each, in the same order). A page of a set is a run of
// ascending seqs, so its documents mostly sit next to each other in a chunk, commas
// included: the page body is copied in a few ranges, and its digest list too, where one
// document per page entry cost a Map look-up of a boxed number key, an entry object, a Buffer
// and a copy (bench/README.md, "Documents in chunks"; docs/decisions.md, same heading).
//
// A chunk is filled by merging: documents fetched for a page go into their chunks, each of
// which is rewritten once in seq order (a miss path). A delta drops a document by taking it
// out of its chunk's index; its bytes stay until the next merge or eviction (counted).
// Eviction is least recently used by chunk, with a second chance for a chunk read since it
// was last passed over (CLOCK).
import type { Doc } from '../domain/digest.js';
import { DIGEST_BYTES } from '../domain/digest.js';

const SLOTS = 256;
/** measured shape of a chunk apart from its documents: the object, four typed arrays, the Map and Set entries */
const CHUNK_OVERHEAD = 640;
/** per document held: start, end (4 + 4), slot (1), digest (16), its view (a Uint8Array: ~96), rounded up */
const PER_DOC = 124;

interface Chunk {
  /** namespace base id (NearCache.baseId) and chunk number (seq / 256) */
  base: number;
  no: number;
  /** its namespace's reset count when filled: an older one is dead */
  resets: number;
  /**
   * the documents, each followed by ",": in slot order when the chunk was last rewritten,
   * later ones appended (and dead bytes of dropped or replaced ones); room after `fill`
   */
  bytes: Buffer;
  /** bytes of `bytes` written */
  fill: number;
  /** documents held */
  n: number;
  /** slot (seq - no * 256) of each document held, ascending */
  slots: Uint8Array;
  /** where each document starts in `bytes`, and where it ends (its "," is at end) */
  start: Int32Array;
  end: Int32Array;
  /**
   * each document with its comma, as a view of `bytes` made once: a page of a sparse set
   * copies its documents one by one, and a view made per copy cost twice the copy
   */
  views: Uint8Array[];
  /** each document's digest, 16 bytes; and the same memory as 32-bit words (copied four at a time) */
  dig: Uint8Array;
  dig32: Int32Array;
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

const sizeOf = (c: Chunk) => CHUNK_OVERHEAD + c.bytes.length + c.slots.length * PER_DOC;

/** Index of `slot` in c.slots from `from` on (ascending), or -1: the next one first (a dense page), else by halving. */
function find(c: Chunk, slot: number, from: number): number {
  const s = c.slots;
  if (from < c.n && s[from] === slot) return from;
  let lo = from;
  let hi = c.n;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (s[mid]! < slot) lo = mid + 1;
    else hi = mid;
  }
  return lo < c.n && s[lo] === slot ? lo : -1;
}

export class NearDocs {
  /** chunks by namespace base id, then by chunk number */
  private byBase = new Map<number, Map<number, Chunk>>();
  /** every chunk, oldest insertion first (eviction order) */
  private order = new Set<Chunk>();
  bytes = 0;
  count = 0;

  // scratch of join(): the page's runs (chunk, first index, last index + 1), its body and digests
  private runChunk: (Chunk | null)[] = [];
  private runFrom = new Int32Array(SLOTS);
  private runTo = new Int32Array(SLOTS);
  private body = Buffer.allocUnsafeSlow(64 * 1024);
  private digs = Buffer.allocUnsafeSlow(SLOTS * DIGEST_BYTES);
  private digs32 = new Int32Array(this.digs.buffer, this.digs.byteOffset, this.digs.length / 4);

  private chunk(base: number, no: number, resets: number): Chunk | undefined {
    const c = this.byBase.get(base)?.get(no);
    if (c && c.resets !== resets) {
      this.dropChunk(c);
      return undefined;
    }
    return c;
  }

  /** Whether the document of `seq` is held. */
  has(base: number, resets: number, seq: number): boolean {
    const no = Math.floor(seq / SLOTS);
    const c = this.chunk(base, no, resets);
    return !!c && find(c, seq - no * SLOTS, 0) >= 0;
  }

  /** One document (a view of its chunk's bytes, which never change in place), or null. */
  get(base: number, resets: number, seq: number): Doc | null {
    const no = Math.floor(seq / SLOTS);
    const c = this.chunk(base, no, resets);
    if (!c) return null;
    const i = find(c, seq - no * SLOTS, 0);
    if (i < 0) return null;
    c.used = true;
    const d = c.dig;
    const at = i * DIGEST_BYTES;
    const int = (k: number) => (d[at + k]! << 24) | (d[at + k + 1]! << 16) | (d[at + k + 2]! << 8) | d[at + k + 3]!;
    return { buf: c.bytes.subarray(c.start[i]!, c.end[i]!), d0: int(0), d1: int(4), d2: int(8), d3: int(12) };
  }

  /**
   * The page of `seqs` (ascending) as its JSON array and its documents' digests (page order,
   * 16 bytes each), if every document is held; null otherwise. Both are views of scratch
   * memory, valid until the next call.
   */
  join(base: number, resets: number, seqs: Float64Array): { body: Buffer; digests: Buffer } | null {
    const map = this.byBase.get(base);
    if (!map && seqs.length) return null;
    // pass 1: find every document, as runs of neighbours in one chunk; the body's length
    let runs = 0;
    let len = 2;
    let c: Chunk | undefined;
    let cno = -1;
    let ci = 0;
    for (let k = 0; k < seqs.length; k++) {
      const seq = seqs[k]!;
      const no = Math.floor(seq / SLOTS);
      if (no !== cno) {
        c = map!.get(no);
        if (!c || c.resets !== resets) return this.forget(runs);
        c.used = true;
        cno = no;
        ci = 0;
      }
      const i = find(c!, seq - no * SLOTS, ci);
      if (i < 0) return this.forget(runs);
      ci = i + 1;
      // the same run when the previous document of the page is this one's neighbour in its chunk
      if (runs && this.runChunk[runs - 1] === c && this.runTo[runs - 1] === i && c!.start[i] === c!.end[i - 1]! + 1) {
        this.runTo[runs - 1] = i + 1;
      } else {
        if (runs === this.runFrom.length) this.growRuns();
        this.runChunk[runs] = c!;
        this.runFrom[runs] = i;
        this.runTo[runs] = i + 1;
        runs++;
      }
      len += c!.end[i]! - c!.start[i]! + 1;
    }
    if (seqs.length) len--; // n documents, n - 1 commas
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
      const a = ch.start[from]!;
      const b = ch.end[to - 1]! + 1;
      out.set(to - from === 1 ? ch.views[from]! : new Uint8Array(ch.bytes.buffer, ch.bytes.byteOffset + a, b - a), at);
      at += b - a;
      // the digests: memory copied as words (the byte order stays as stored)
      const w = ch.dig32;
      for (let k = from * 4, e = to * 4; k < e; k++) d32[dat++] = w[k]!;
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

  /**
   * Put documents into their chunks (`docs` in ascending seq order; a seq already held is
   * replaced). A few documents for a chunk with room are appended to it and indexed (a page
   * of a sparse set touches a hundred chunks, one document each: rewriting each would copy
   * whole chunks per page); otherwise the chunk is rewritten once, in slot order, without its
   * dead bytes and with room for more. A chunk that would not fit `maxBytes` is not kept.
   */
  insert(base: number, resets: number, docs: Incoming[], maxBytes: number): void {
    let i = 0;
    while (i < docs.length) {
      const no = Math.floor(docs[i]!.seq / SLOTS);
      let j = i + 1;
      let len = docs[i]!.doc.buf.length + 1;
      while (j < docs.length && Math.floor(docs[j]!.seq / SLOTS) === no) len += docs[j++]!.doc.buf.length + 1;
      const c = this.chunk(base, no, resets);
      if (c && (j - i) * 4 <= c.n && c.fill + len <= c.bytes.length && c.n + (j - i) <= c.slots.length) {
        for (let k = i; k < j; k++) this.append(c, docs[k]!.seq - no * SLOTS, docs[k]!.doc);
      } else this.merge(base, no, resets, docs, i, j, maxBytes);
      i = j;
    }
  }

  /** One document into a chunk with room for it (insert() checked): its bytes at the end, its entry in slot order. */
  private append(c: Chunk, slot: number, doc: Doc): void {
    let lo = 0;
    let hi = c.n;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (c.slots[mid]! < slot) lo = mid + 1;
      else hi = mid;
    }
    const i = lo;
    if (i >= c.n || c.slots[i] !== slot) {
      // a new entry at i: the ones after it move up (a replaced one keeps its place; its old bytes are dead)
      c.slots.copyWithin(i + 1, i, c.n);
      c.start.copyWithin(i + 1, i, c.n);
      c.end.copyWithin(i + 1, i, c.n);
      c.dig.copyWithin((i + 1) * DIGEST_BYTES, i * DIGEST_BYTES, c.n * DIGEST_BYTES);
      c.views.splice(i, 0, c.views[0]!);
      c.n++;
      this.count++;
    }
    const buf = doc.buf;
    const at = c.fill;
    c.bytes.set(buf, at);
    c.bytes[at + buf.length] = 0x2c; // ,
    c.fill = at + buf.length + 1;
    c.slots[i] = slot;
    c.start[i] = at;
    c.end[i] = at + buf.length;
    c.views[i] = new Uint8Array(c.bytes.buffer, c.bytes.byteOffset + at, buf.length + 1);
    writeDigest(c.dig, i * DIGEST_BYTES, doc);
  }

  private merge(base: number, no: number, resets: number, docs: Incoming[], from: number, to: number, maxBytes: number): void {
    const old = this.chunk(base, no, resets);
    // the merged list: old documents and new ones by slot (a new one replaces an old one)
    const srcBuf: Buffer[] = [];
    const srcA: number[] = [];
    const srcB: number[] = [];
    const srcDig: Uint8Array[] = [];
    const srcDigAt: number[] = [];
    const slots: number[] = [];
    let oi = 0;
    let ni = from;
    const fresh = new Uint8Array(to - from === 0 ? 0 : (to - from) * DIGEST_BYTES);
    for (let k = from; k < to; k++) writeDigest(fresh, (k - from) * DIGEST_BYTES, docs[k]!.doc);
    const oldN = old ? old.n : 0;
    while (oi < oldN || ni < to) {
      const os = oi < oldN ? old!.slots[oi]! : SLOTS;
      const ns = ni < to ? docs[ni]!.seq - no * SLOTS : SLOTS;
      if (ns <= os) {
        const d = docs[ni]!.doc.buf;
        srcBuf.push(d);
        srcA.push(0);
        srcB.push(d.length);
        srcDig.push(fresh);
        srcDigAt.push((ni - from) * DIGEST_BYTES);
        slots.push(ns);
        ni++;
        if (ns === os) oi++;
      } else {
        srcBuf.push(old!.bytes);
        srcA.push(old!.start[oi]!);
        srcB.push(old!.end[oi]!);
        srcDig.push(old!.dig);
        srcDigAt.push(oi * DIGEST_BYTES);
        slots.push(os);
        oi++;
      }
    }
    const n = slots.length;
    let len = 0;
    for (let k = 0; k < n; k++) len += srcB[k]! - srcA[k]! + 1;
    // room for more documents of a chunk not yet full: half as many again, at their mean size
    const more = Math.min(SLOTS - n, (n >>> 1) + 4);
    const cap = n + more;
    const room = Math.ceil((len / Math.max(1, n)) * more);
    const c: Chunk = old ?? { base, no, resets, bytes: Buffer.alloc(0), fill: 0, n: 0, slots: new Uint8Array(0), start: new Int32Array(0), end: new Int32Array(0), views: [], dig: new Uint8Array(0), dig32: new Int32Array(0), used: false, size: 0 };
    const bytes = Buffer.allocUnsafeSlow(len + room);
    const start = new Int32Array(cap);
    const end = new Int32Array(cap);
    const dig = new Uint8Array(cap * DIGEST_BYTES);
    const sl = new Uint8Array(cap);
    const views = new Array<Uint8Array>(n);
    let at = 0;
    for (let k = 0; k < n; k++) {
      const a = srcA[k]!;
      const b = srcB[k]!;
      start[k] = at;
      bytes.set(srcBuf[k]!.subarray(a, b), at);
      at += b - a;
      end[k] = at;
      bytes[at++] = 0x2c; // ,
      views[k] = new Uint8Array(bytes.buffer, bytes.byteOffset + start[k]!, at - start[k]!);
      dig.set(srcDig[k]!.subarray(srcDigAt[k]!, srcDigAt[k]! + DIGEST_BYTES), k * DIGEST_BYTES);
      sl[k] = slots[k]!;
    }
    if (old) {
      this.bytes -= old.size;
      this.count -= old.n;
    }
    c.bytes = bytes;
    c.fill = len;
    c.n = n;
    c.slots = sl;
    c.start = start;
    c.end = end;
    c.dig = dig;
    c.views = views;
    c.dig32 = new Int32Array(dig.buffer, dig.byteOffset, dig.length / 4);
    c.size = sizeOf(c);
    if (c.size > maxBytes) {
      if (old) this.dropChunk(old, false);
      return;
    }
    this.bytes += c.size;
    this.count += n;
    if (!old) {
      let m = this.byBase.get(base);
      if (!m) this.byBase.set(base, (m = new Map()));
      m.set(no, c);
      this.order.add(c);
    }
  }

  /** A write changed the document of `seq`: it is no longer held. */
  drop(base: number, seq: number): void {
    const no = Math.floor(seq / SLOTS);
    const c = this.byBase.get(base)?.get(no);
    if (!c) return;
    const i = find(c, seq - no * SLOTS, 0);
    if (i < 0) return;
    if (c.n === 1) return this.dropChunk(c);
    // out of the index; its bytes stay (counted) until the chunk is rewritten or evicted
    c.slots.copyWithin(i, i + 1, c.n);
    c.start.copyWithin(i, i + 1, c.n);
    c.end.copyWithin(i, i + 1, c.n);
    c.dig.copyWithin(i * DIGEST_BYTES, (i + 1) * DIGEST_BYTES, c.n * DIGEST_BYTES);
    c.views.splice(i, 1);
    c.n--;
    this.count--;
  }

  /** Evict one chunk (a used one gets a second chance first); false when none is held. */
  evictOne(): boolean {
    for (const c of this.order) {
      if (c.used) {
        c.used = false;
        this.order.delete(c);
        this.order.add(c);
        continue;
      }
      this.dropChunk(c);
      return true;
    }
    return false;
  }

  private dropChunk(c: Chunk, accounted = true): void {
    const m = this.byBase.get(c.base);
    if (m?.get(c.no) !== c) return;
    m.delete(c.no);
    if (!m.size) this.byBase.delete(c.base);
    this.order.delete(c);
    if (accounted) {
      this.bytes -= c.size;
      this.count -= c.n;
    }
  }

  clear(): void {
    this.byBase.clear();
    this.order.clear();
    this.bytes = 0;
    this.count = 0;
  }
}

/** A document's digest as its 16 big-endian bytes (digestBytes' layout). */
function writeDigest(out: Uint8Array, at: number, d: Doc): void {
  const w = (x: number, o: number) => {
    out[at + o] = x >>> 24;
    out[at + o + 1] = (x >>> 16) & 0xff;
    out[at + o + 2] = (x >>> 8) & 0xff;
    out[at + o + 3] = x & 0xff;
  };
  w(d.d0, 0);
  w(d.d1, 4);
  w(d.d2, 8);
  w(d.d3, 12);
}
