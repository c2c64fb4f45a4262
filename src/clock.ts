/**
 * The clock the service reads time from. Injected everywhere so tests can move time.
 *
 * @module
 */

/** A source of time and of delays. */
export interface Clock {
  /** Current time, Unix epoch milliseconds. */
  now(): number;
  /** Resolves after `ms` milliseconds of this clock's time (rejects with the signal's reason if aborted). */
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
}

/** The wall clock. */
export const systemClock: Clock = {
  now: () => Date.now(),
  sleep: (ms, signal) =>
    new Promise((resolve, reject) => {
      if (signal?.aborted) return reject(signal.reason);
      const t = setTimeout(() => {
        signal?.removeEventListener("abort", onAbort);
        resolve();
      }, ms);
      const onAbort = () => {
        clearTimeout(t);
        reject(signal!.reason);
      };
      signal?.addEventListener("abort", onAbort, { once: true });
    }),
};

/**
 * A clock whose `now()` is the wall clock plus a settable offset: lets tests jump forward (token expiry,
 * idempotency retention) while real I/O keeps real time.
 */
export class OffsetClock implements Clock {
  #offset = 0;
  /** Moves this clock forward by `ms`. */
  advance(ms: number): void {
    this.#offset += ms;
  }
  now(): number {
    return Date.now() + this.#offset;
  }
  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    return systemClock.sleep(ms, signal);
  }
}
