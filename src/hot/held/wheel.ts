// The deadlines of held requests: a timer wheel (Varghese and Lauck's hashed wheel) of
// `slotMs` slots, each an intrusive doubly linked list of what ends in it, and one interval
// timer that runs only while something is held. Adding and removing are O(1) and allocate
// nothing per entry (the links are the entry's own fields): no timer, promise or closure per
// held request, whatever their number; a turn of the timer walks only the slots that came due.
//
// An entry is due at the first turn at or after its deadline, never before: its tick is the
// deadline rounded up to a slot, and a turn handles the ticks up to the current time rounded
// down. The wheel has more slots than the longest wait spans, so one slot never mixes turns.

/** What the wheel links: an entry's own fields. */
export interface Timed {
  /** the slot number (absolute: ms / slotMs) it is due at */
  tick: number;
  wprev: Timed | null;
  wnext: Timed | null;
}

export class Wheel<T extends Timed> {
  private readonly slots: (T | null)[];
  private timer: NodeJS.Timeout | null = null;
  /** the last tick handled */
  private last = 0;
  /** entries on the wheel */
  size = 0;

  constructor(
    private readonly slotMs: number,
    maxMs: number,
    /** an entry came due (already off the wheel) */
    private readonly due: (t: T) => void,
    private readonly now: () => number = () => performance.now(),
  ) {
    this.slots = new Array<T | null>(Math.ceil(maxMs / slotMs) + 2).fill(null);
  }

  /** Put `t` on the wheel, due at `deadline` (ms on the wheel's clock). */
  add(t: T, deadline: number): void {
    if (!this.timer) this.start();
    const now = Math.floor(this.now() / this.slotMs);
    t.tick = Math.max(Math.ceil(deadline / this.slotMs), now + 1);
    const i = t.tick % this.slots.length;
    const head = this.slots[i] ?? null;
    t.wprev = null;
    t.wnext = head;
    if (head) head.wprev = t;
    this.slots[i] = t;
    this.size++;
  }

  /** Take `t` off the wheel (it must be on it). */
  remove(t: T): void {
    if (t.wprev) t.wprev.wnext = t.wnext;
    else this.slots[t.tick % this.slots.length] = t.wnext as T | null;
    if (t.wnext) t.wnext.wprev = t.wprev;
    t.wprev = t.wnext = null;
    if (--this.size === 0) this.stop();
  }

  /** Every entry on the wheel, in no order (the drain). */
  *entries(): Generator<T> {
    for (const head of this.slots) for (let t: Timed | null = head; t; t = t.wnext) yield t as T;
  }

  /** The entries due by now, off the wheel and handed to `due`. */
  turn(): void {
    const now = Math.floor(this.now() / this.slotMs);
    // after a stall longer than the wheel, one pass over every slot handles everything due
    const from = Math.max(this.last + 1, now - this.slots.length + 1);
    for (let tick = from; tick <= now && this.size; tick++) {
      let t = this.slots[tick % this.slots.length] ?? null;
      while (t) {
        const next = t.wnext as T | null;
        if (t.tick <= now) {
          this.remove(t);
          this.due(t);
        }
        t = next;
      }
    }
    this.last = now;
  }

  private start(): void {
    this.last = Math.floor(this.now() / this.slotMs);
    this.timer = setInterval(() => this.turn(), this.slotMs);
    this.timer.unref(); // held requests keep their sockets open; the process's life is not theirs
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }
}
