/**
 * A clock moved by hand: `now()` stands still until the test advances it, and `sleep`ers wake in time order
 * as it passes their deadline (with the promise jobs they start run before the next one wakes), so code on
 * the injected clock runs on a deterministic schedule.
 *
 * @module
 */
import type { Clock } from "../src/clock.ts";

interface Sleeper {
  at: number;
  seq: number;
  resolve: () => void;
}

/** A {@link Clock} advanced by {@link ManualClock.advanceTo}. */
export class ManualClock implements Clock {
  #now: number;
  #seq = 0;
  readonly #sleepers = new Set<Sleeper>();

  constructor(start = 0) {
    this.#now = start;
  }

  now(): number {
    return this.#now;
  }

  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    return new Promise((resolve, reject) => {
      if (signal?.aborted) return reject(signal.reason);
      const sleeper: Sleeper = {
        at: this.#now + Math.max(0, ms),
        seq: this.#seq++,
        resolve: () => {
          signal?.removeEventListener("abort", onAbort);
          resolve();
        },
      };
      const onAbort = () => {
        this.#sleepers.delete(sleeper);
        reject(signal!.reason);
      };
      signal?.addEventListener("abort", onAbort, { once: true });
      this.#sleepers.add(sleeper);
    });
  }

  /** Moves the clock to `t`, waking every sleeper due on the way in order. */
  async advanceTo(t: number): Promise<void> {
    while (true) {
      let next: Sleeper | null = null;
      for (const s of this.#sleepers) {
        if (s.at <= t && (!next || s.at < next.at || (s.at === next.at && s.seq < next.seq))) next = s;
      }
      if (!next) break;
      this.#sleepers.delete(next);
      this.#now = Math.max(this.#now, next.at);
      next.resolve();
      await settle();
    }
    this.#now = Math.max(this.#now, t);
    await settle();
  }

  /** Moves the clock forward by `ms`. */
  advance(ms: number): Promise<void> {
    return this.advanceTo(this.#now + ms);
  }
}

/** Lets the promise jobs queued so far (and those they queue) run. */
async function settle(): Promise<void> {
  for (let i = 0; i < 20; i++) await Promise.resolve();
}
