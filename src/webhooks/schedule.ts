/**
 * The webhook retry schedule: the first attempt is immediate; after each failed attempt the next waits the
 * schedule's next delay (plus up to 10 % jitter, or the receiver's `Retry-After` if longer, capped at a
 * day). Once the schedule is exhausted the event is given up (`failed`).
 *
 * @module
 */

/** The default delays after each failed attempt (Standard Webhooks' example schedule): 5 s … 24 h. */
export const DEFAULT_RETRY_SCHEDULE = "5s,5m,30m,2h,5h,10h,14h,20h,24h";

const UNIT_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3600_000 };

/** Longest single delay accepted: 48 hours. */
export const MAX_RETRY_DELAY_MS = 48 * 3600_000;

/**
 * Parses `5s,5m,30m,2h` into milliseconds. Throws an Error (message safe to show) when an entry is not a
 * duration, a delay is outside 1 ms..48 h, delays decrease, or there are not 1..20 of them.
 */
export function parseRetrySchedule(text: string): number[] {
  const parts = text.split(",").map((p) => p.trim());
  if (parts.length < 1 || parts.length > 20) throw new Error("must list 1..20 delays");
  const out = parts.map((p) => {
    const m = /^(\d+)(ms|s|m|h)$/.exec(p);
    if (!m) throw new Error("must be comma-separated durations such as 5s,5m,2h");
    const ms = Number(m[1]) * UNIT_MS[m[2]];
    if (ms < 1 || ms > MAX_RETRY_DELAY_MS) throw new Error("each delay must be 1ms..48h");
    return ms;
  });
  for (let i = 1; i < out.length; i++) if (out[i] < out[i - 1]) throw new Error("delays must not decrease");
  return out;
}

/**
 * When to try again after the `attempts`-th failed attempt (1-based) finished at `now`, or null when the
 * schedule is exhausted. `retryAfterMs` (from a 429/503 `Retry-After`) stretches the delay, up to 24 h.
 */
export function nextAttemptAt(
  schedule: readonly number[],
  attempts: number,
  now: number,
  random: () => number,
  retryAfterMs: number | null = null,
): number | null {
  const base = schedule[attempts - 1];
  if (base === undefined) return null;
  const jittered = base + Math.floor(base * 0.1 * random());
  const wait = retryAfterMs === null ? jittered : Math.max(jittered, Math.min(retryAfterMs, 24 * 3600_000));
  return now + wait;
}

/** Total span of a schedule, ms (without jitter): how long an event keeps being retried. */
export function scheduleSpanMs(schedule: readonly number[]): number {
  return schedule.reduce((a, b) => a + b, 0);
}
