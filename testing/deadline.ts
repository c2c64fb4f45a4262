/**
 * How long tests wait for a condition. Generous on purpose: the machine may be shared and both cores busy
 * (see scripts/cpu_hog.ts), so a test waits for what it expects for up to this long, and never asserts
 * how fast something happened (speed targets are in the benches).
 *
 * @module
 */

/** The deadline of a wait for a condition, ms. */
export const DEADLINE_MS = 30_000;

/** Polls `predicate` every 10 ms until it holds; throws naming `what` after `timeoutMs`. */
export async function until(
  predicate: () => boolean | Promise<boolean>,
  what: string,
  timeoutMs = DEADLINE_MS,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await predicate())) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}
