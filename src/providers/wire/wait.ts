/**
 * Bounded waits and periodic work on the injected clock, for the engine bridges.
 *
 * @module
 */
import type { Clock } from "../../clock.ts";

/** Waits for `promise` at most `ms` of the clock's time; true when it settled in time. */
export async function settlesWithin(clock: Clock, promise: Promise<unknown>, ms: number): Promise<boolean> {
  const stop = new AbortController();
  try {
    return await Promise.race([
      promise.then(() => true, () => true),
      clock.sleep(ms, stop.signal).then(() => false, () => false),
    ]);
  } finally {
    stop.abort();
  }
}

/**
 * Calls `tick` every `ms` of the clock's time until `signal` aborts (the first call after `ms`). A tick that
 * throws stops nothing.
 */
export function every(clock: Clock, ms: number, signal: AbortSignal, tick: () => void): void {
  const loop = async () => {
    while (!signal.aborted) {
      try {
        await clock.sleep(ms, signal);
      } catch {
        return;
      }
      if (signal.aborted) return;
      try {
        tick();
      } catch { /* the next tick tries again */ }
    }
  };
  void loop();
}

/** A deadline on the clock: `signal` aborts (with a {@link DeadlineExceeded}) once `ms` have passed. */
export function deadline(clock: Clock, ms: number): { signal: AbortSignal; stop(): void } {
  const fire = new AbortController();
  const stop = new AbortController();
  clock.sleep(ms, stop.signal).then(() => fire.abort(new DeadlineExceeded()), () => {/* stopped */});
  return { signal: fire.signal, stop: () => stop.abort() };
}

/** The reason a {@link deadline}'s signal aborts with. */
export class DeadlineExceeded extends Error {
  override name = "DeadlineExceeded";
}
