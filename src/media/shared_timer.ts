/**
 * One timer for the clocks of many sessions. Each session's media plane wakes up some seventy times a second
 * (its audio blocks and its frames); with a `setTimeout` each, a host of two hundred sessions runs fourteen
 * thousand timers a second, and a Deno timer costs about 5 µs of a core (measured with 100–200 chains of
 * 20 ms timers). Here every wake-up waits in one heap and a single `setTimeout` serves the earliest; when it
 * fires, every wake-up that is due by then runs. Nothing runs early, so a session sees the same instants as
 * with a timer of its own (each wake-up runs at or after its time, as `setTimeout` does).
 *
 * @module
 */

/** A scheduled wake-up (pass it to {@link SharedTimer.cancel}). */
export interface WakeUp {
  readonly at: number;
}

interface Entry extends WakeUp {
  readonly fn: () => void;
  live: boolean;
}

/** Wake-ups of many owners on one timer; times on the clock `now` (default `performance.now()`). */
export class SharedTimer {
  readonly #heap: Entry[] = [];
  #live = 0;
  #timer: ReturnType<typeof setTimeout> | undefined;
  /** When the pending `setTimeout` was armed for (Infinity: none). */
  #armedAt = Infinity;
  /** While due wake-ups run, the timer is armed once after them (not at each one they schedule). */
  #firing = false;
  /** Times the timer fired, and wake-ups run (counters). */
  readonly stats = { fired: 0, ran: 0 };

  constructor(readonly now: () => number = () => performance.now()) {}

  /** Wake-ups scheduled and not yet run or cancelled. */
  get pending(): number {
    return this.#live;
  }

  /** Runs `fn` once the clock reaches `at` (in a later task, never synchronously). */
  schedule(at: number, fn: () => void): WakeUp {
    const e: Entry = { at, fn, live: true };
    this.#push(e);
    this.#live++;
    if (!this.#firing && at < this.#armedAt) this.#arm();
    return e;
  }

  /** Cancels a wake-up that has not run (nothing happens if it ran or was cancelled). */
  cancel(w: WakeUp | undefined): void {
    const e = w as Entry | undefined;
    if (!e?.live) return;
    e.live = false;
    this.#live--;
    if (this.#live === 0) {
      // Nothing left: no timer stays pending (a process, or a test, can end).
      this.#heap.length = 0;
      clearTimeout(this.#timer);
      this.#timer = undefined;
      this.#armedAt = Infinity;
    }
  }

  #arm(): void {
    while (this.#heap.length && !this.#heap[0].live) this.#pop();
    clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#armedAt = Infinity;
    if (!this.#heap.length) return;
    const at = this.#heap[0].at;
    this.#armedAt = at;
    this.#timer = setTimeout(this.#fire, Math.max(0, Math.ceil(at - this.now())));
  }

  #fire = (): void => {
    this.#timer = undefined;
    this.#armedAt = Infinity;
    this.stats.fired++;
    // The due wake-ups are taken first: one scheduled while they run waits for the next firing (a
    // callback that asks for "now" again cannot keep the others, or the process's I/O, waiting).
    const now = this.now();
    const due: Entry[] = [];
    while (this.#heap.length && (!this.#heap[0].live || this.#heap[0].at <= now)) {
      const e = this.#pop();
      if (!e.live) continue;
      e.live = false;
      this.#live--;
      due.push(e);
    }
    this.#firing = true;
    for (const e of due) {
      this.stats.ran++;
      try {
        e.fn();
      } catch (err) {
        // One owner's failure must not cancel the others': it is rethrown as an uncaught error.
        queueMicrotask(() => {
          throw err;
        });
      }
    }
    this.#firing = false;
    if (this.#live > 0) this.#arm();
  };

  #push(e: Entry): void {
    const h = this.#heap;
    h.push(e);
    let i = h.length - 1;
    while (i > 0) {
      const p = (i - 1) >> 1;
      if (h[p].at <= e.at) break;
      h[i] = h[p];
      i = p;
    }
    h[i] = e;
  }

  #pop(): Entry {
    const h = this.#heap;
    const top = h[0];
    const last = h.pop()!;
    if (h.length) {
      let i = 0;
      for (;;) {
        const l = 2 * i + 1, r = l + 1;
        let m = i;
        let mAt = last.at;
        if (l < h.length && h[l].at < mAt) {
          m = l;
          mAt = h[l].at;
        }
        if (r < h.length && h[r].at < mAt) m = r;
        if (m === i) break;
        h[i] = h[m];
        i = m;
      }
      h[i] = last;
    }
    return top;
  }
}
