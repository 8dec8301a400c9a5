// The near cache's documents, in chunks of 256 consecutive seqs of one namespace
// (docs/decisions/near-cache-pages.md): each chunk holds its documents' bytes in seq order,
// each followed by ",", with their digests beside them, so a page (a run of ascending seqs) is
// copied in a few ranges. Fetched documents are appended to a chunk with room, or the chunk is
// rewritten once in slot order with room for more; a page checks contiguity per pair, never
// assumes it. A delta drops a document from its chunk's index (its bytes stay, counted, until
// the next rewrite). Eviction is by chunk, least recently used with a second chance (CLOCK).
import type { Doc } from '../../domain/digest.js';
import { entry, find, LAYOUT, lowerBound, PageJoin, sizeOf, toWord, type Chunk, type Incoming } from './chunk.js';
import { nextUnused, Oldest } from '../../domain/oldest.js';

// the chunk layout as module-local consts (folded by the optimiser: near-chunk.ts, LAYOUT)
const { SLOTS, M, SLOT, START, END, DIG } = LAYOUT;
/** documents of one chunk arriving together from which a sorted chunk is rewritten, not appended to (insert) */
const SORTED_RUN = 16;

export { CHUNK_OVERHEAD, PER_DOC, type Incoming } from './chunk.js';

export class NearDocs {
  /** chunks by namespace base id, then by chunk number (an array: one read, where a Map was a hash look-up) */
  private byBase = new Map<number, (Chunk | undefined)[]>();
  /** every chunk, oldest insertion first (eviction order) */
  private order = new Set<Chunk>();
  /** the clock's hand over `order` (domain/oldest.ts: a chunk passed is moved to the end or dropped) */
  private readonly hand = new Oldest(this.order);
  bytes = 0;
  count = 0;

  /** joins a page from the chunks (its scratch memory: near-chunk.ts) */
  private joiner = new PageJoin();

  private chunk(base: number, no: number, resets: number): Chunk | undefined {
    const c = this.byBase.get(base)?.[no];
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
    const m = c.meta;
    const at = i * M;
    return { buf: c.text.subarray(m[at + START]!, m[at + END]!), d0: toWord(m[at + DIG]!), d1: toWord(m[at + DIG + 1]!), d2: toWord(m[at + DIG + 2]!), d3: toWord(m[at + DIG + 3]!) };
  }

  /**
   * The page of `seqs` (ascending) as its JSON array and its documents' digests (page order,
   * 16 bytes each), if every document is held; null otherwise. Both are views of scratch
   * memory, valid until the next call.
   */
  join(base: number, resets: number, seqs: Float64Array): { body: Buffer; digests: Buffer } | null {
    return this.joiner.join(this.byBase.get(base), resets, seqs);
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
      // (a sorted chunk is rewritten for a run of SORTED_RUN or more: appended, the run's first
      // document would end the chunk's one-range pages; at most 1/SORTED_RUN of a chunk's
      // bytes copied again a document)
      if (c && (j - i) * 4 <= c.n && (!c.sorted || j - i < SORTED_RUN) && c.fill + len <= c.text.length && c.n + (j - i) <= c.cap) {
        for (let k = i; k < j; k++) this.append(c, docs[k]!.seq - no * SLOTS, docs[k]!.doc);
      } else this.merge(base, no, resets, docs, i, j, maxBytes);
      i = j;
    }
  }

  /** One document into a chunk with room for it (insert() checked): its bytes at the end, its entry in slot order. */
  private append(c: Chunk, slot: number, doc: Doc): void {
    const i = lowerBound(c, slot, 0);
    const m = c.meta;
    if (i >= c.n || m[i * M + SLOT] !== slot) {
      // a new entry at i: the ones after it move up (a replaced one keeps its place; its old
      // bytes are dead)
      m.copyWithin((i + 1) * M, i * M, c.n * M);
      c.views.splice(i, 0, c.views[0]!);
      c.n++;
      this.count++;
    }
    const buf = doc.buf;
    const at = c.fill;
    // its bytes go last: still sorted unless a neighbouring slot's bytes are not right before them
    if (c.sorted) c.sorted = (i === c.n - 1 || m[(i + 1) * M + SLOT] !== slot + 1) && (i === 0 || m[(i - 1) * M + SLOT] !== slot - 1 || at === m[(i - 1) * M + END]! + 1);
    c.text.set(buf, at);
    c.text[at + buf.length] = 0x2c; // ,
    c.fill = at + buf.length + 1;
    c.views[i] = new Uint8Array(c.text.buffer, c.text.byteOffset + at, buf.length + 1);
    entry(m, i, slot, at, at + buf.length, doc);
  }

  private merge(base: number, no: number, resets: number, docs: Incoming[], from: number, to: number, maxBytes: number): void {
    const old = this.chunk(base, no, resets);
    // the merged list, by slot: old documents (index oi) and new ones (ni); a new one replaces
    // an old one
    const oldN = old ? old.n : 0;
    const om = old?.meta;
    const pick: number[] = []; // >= 0: old index; < 0: -(new index) - 1
    let len = 0;
    let oi = 0;
    let ni = from;
    while (oi < oldN || ni < to) {
      const oldSlot = oi < oldN ? om![oi * M + SLOT]! : SLOTS;
      const newSlot = ni < to ? docs[ni]!.seq - no * SLOTS : SLOTS;
      if (newSlot <= oldSlot) {
        pick.push(-ni - 1);
        len += docs[ni]!.doc.buf.length + 1;
        ni++;
        if (newSlot === oldSlot) oi++;
      } else {
        pick.push(oi);
        len += om![oi * M + END]! - om![oi * M + START]! + 1;
        oi++;
      }
    }
    const n = pick.length;
    // room for more documents of a chunk not yet full: half as many again, at their mean size
    const more = Math.min(SLOTS - n, (n >>> 1) + 4);
    const cap = n + more;
    const room = Math.ceil((len / Math.max(1, n)) * more);
    const text = Buffer.allocUnsafeSlow(len + room);
    const meta = new Int32Array(cap * M);
    const views = new Array<Uint8Array>(n);
    let at = 0;
    for (let k = 0; k < n; k++) {
      const p = pick[k]!;
      const begin = at;
      if (p >= 0) {
        const a = om![p * M + START]!;
        const e = om![p * M + END]!;
        text.set(new Uint8Array(old!.text.buffer, old!.text.byteOffset + a, e - a), at);
        at += e - a;
        meta.set(om!.subarray(p * M, p * M + M), k * M);
        meta[k * M + START] = begin;
        meta[k * M + END] = at;
      } else {
        const d = docs[-p - 1]!;
        text.set(d.doc.buf, at);
        at += d.doc.buf.length;
        entry(meta, k, d.seq - no * SLOTS, begin, at, d.doc);
      }
      text[at++] = 0x2c; // ,
      views[k] = new Uint8Array(text.buffer, text.byteOffset + begin, at - begin);
    }
    if (old) {
      this.bytes -= old.size;
      this.count -= old.n;
    }
    const c: Chunk = old ?? { base, no, resets, text, fill: 0, n: 0, cap: 0, meta, views, sorted: true, used: false, size: 0 };
    c.sorted = true; // (written in slot order, each right after the previous comma)
    c.text = text;
    c.fill = len;
    c.n = n;
    c.cap = cap;
    c.meta = meta;
    c.views = views;
    c.size = sizeOf(c);
    if (c.size > maxBytes) {
      if (old) this.dropChunk(old, false);
      return;
    }
    this.bytes += c.size;
    this.count += n;
    if (!old) {
      let arr = this.byBase.get(base);
      if (!arr) this.byBase.set(base, (arr = []));
      arr[no] = c;
      this.order.add(c);
    }
  }

  /** A write changed the document of `seq`: it is no longer held. */
  drop(base: number, seq: number): void {
    const no = Math.floor(seq / SLOTS);
    const c = this.byBase.get(base)?.[no];
    if (!c) return;
    const i = find(c, seq - no * SLOTS, 0);
    if (i < 0) return;
    if (c.n === 1) return this.dropChunk(c);
    // out of the index; its bytes stay (counted) until the chunk is rewritten or evicted (a
    // sorted chunk stays sorted: no range of consecutive slots spans the gap)
    c.meta.copyWithin(i * M, (i + 1) * M, c.n * M);
    c.views.splice(i, 1);
    c.n--;
    this.count--;
  }

  /** Evict one chunk (a used one gets a second chance first); false when none is held. */
  evictOne(): boolean {
    const c = nextUnused(this.hand, this.order);
    if (!c) return false;
    this.dropChunk(c);
    return true;
  }

  private dropChunk(c: Chunk, accounted = true): void {
    const arr = this.byBase.get(c.base);
    if (arr?.[c.no] !== c) return;
    arr[c.no] = undefined;
    this.order.delete(c);
    if (accounted) {
      this.bytes -= c.size;
      this.count -= c.n;
    }
  }

  clear(): void {
    this.byBase.clear();
    this.hand.clear(); // the map too (domain/oldest.ts)
    this.bytes = 0;
    this.count = 0;
  }
}
