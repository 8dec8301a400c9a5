// The sandbox key maps' memory bound: a Map whose entries are counted in the bytes they
// occupy on V8's heap (both strings and the Map's own slots), evicting the oldest entries
// (insertion order) to stay within a byte budget. The constants below are V8's layouts, checked
// against the heap after a full GC (docs/decisions/sandbox-keys.md).

import { Oldest } from './oldest.js';

/** a Map entry's own cost, above its key and value (measured ~37 on average; doubling slack) */
export const ENTRY_BYTES = 48;
/** a heap number (a value that is not a small integer) */
export const NUMBER_BYTES = 16;

/** heap bytes of a sequential one-byte string of this length (keys, hashes, uuids are ASCII) */
export function stringBytes(s: string): number {
  return 16 + ((s.length + 7) & ~7);
}

/** heap bytes of a plain object with this many in-object fields (a 12-byte header, 4 bytes a field: compressed pointers) */
export function objectBytes(fields: number): number {
  return 12 + 4 * fields;
}

/** a value's counted bytes: a string's, or a heap number's */
function scalarBytes(v: unknown): number {
  return typeof v === 'string' ? stringBytes(v) : NUMBER_BYTES;
}

export class ByteBoundedMap<V> {
  private readonly map = new Map<string, V>();
  /** the oldest entries, for eviction (domain/oldest.ts: O(1) an eviction, not O(size)) */
  private readonly oldest = new Oldest(this.map);
  /** counted bytes of every entry */
  bytes = 0;

  /** `valueBytes`: what a value occupies beyond the entry and its key (strings and numbers by default) */
  constructor(
    readonly budget: number,
    private readonly valueBytes: (v: V) => number = scalarBytes,
  ) {}

  get size(): number {
    return this.map.size;
  }

  get(k: string): V | undefined {
    return this.map.get(k);
  }

  has(k: string): boolean {
    return this.map.has(k);
  }

  delete(k: string): void {
    const v = this.map.get(k);
    if (v === undefined) return;
    this.map.delete(k);
    this.bytes -= this.cost(k, v);
  }

  /** Insert or replace; the oldest entries go until it fits. An entry larger than the whole budget is not kept. */
  set(k: string, v: V): void {
    this.delete(k);
    const c = this.cost(k, v);
    if (c > this.budget) return;
    while (this.bytes + c > this.budget) {
      const ok = this.oldest.next()!;
      const ov = this.map.get(ok)!;
      this.map.delete(ok);
      this.bytes -= this.cost(ok, ov);
    }
    this.map.set(k, v);
    this.bytes += c;
  }

  clear(): void {
    this.oldest.clear(); // the map too (domain/oldest.ts)
    this.bytes = 0;
  }

  private cost(k: string, v: V): number {
    return ENTRY_BYTES + stringBytes(k) + this.valueBytes(v);
  }
}
