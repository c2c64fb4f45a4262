/**
 * The webhook retry schedule: the first attempt is immediate; after each failed attempt the next waits the
 * schedule's next delay (plus up to 10 % jitter, or the receiver's `Retry-After` if longer, capped at a
 * day). Once the schedule is exhausted the event is given up (`failed`). The schedule itself is a setting
 * (`SVC_WEBHOOK_RETRY_SCHEDULE`, parsed by `src/config.ts`); the prose that documents the default one is
 * generated here ({@link describeRetrySchedule}), so the OpenAPI document and docs/webhooks.md say what
 * the code does.
 *
 * @module
 */
import { DEFAULT_RETRY_SCHEDULE, parseRetrySchedule } from "../config.ts";

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

/** A delay in the largest unit that divides it (`5 s`, `30 min`, `24 h`). */
function delayText(ms: number): string {
  if (ms % 3600_000 === 0) return `${ms / 3600_000} h`;
  if (ms % 60_000 === 0) return `${ms / 60_000} min`;
  if (ms % 1000 === 0) return `${ms / 1000} s`;
  return `${ms} ms`;
}

/** A span in whole days and hours, rounded down (`3 days and 3 hours`). */
function spanText(ms: number): string {
  const days = Math.floor(ms / 86_400_000);
  const hours = Math.floor((ms % 86_400_000) / 3600_000);
  const part = (n: number, unit: string) => `${n} ${unit}${n === 1 ? "" : "s"}`;
  if (days === 0) return part(hours, "hour");
  return hours === 0 ? part(days, "day") : `${part(days, "day")} and ${part(hours, "hour")}`;
}

/**
 * How a schedule reads in the documentation: its delays (`5 s, 5 min, …, 24 h`), how many attempts an
 * event gets (the first plus one per delay), and about how long they span (without jitter).
 *
 * @example Usage
 * ```ts
 * import { describeRetrySchedule } from "./schedule.ts";
 * describeRetrySchedule().delays; // "5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 14 h, 20 h, 24 h"
 * describeRetrySchedule().attempts; // 10
 * describeRetrySchedule().span; // "3 days and 3 hours"
 * ```
 */
export function describeRetrySchedule(
  schedule: readonly number[] = parseRetrySchedule(DEFAULT_RETRY_SCHEDULE),
): { delays: string; attempts: number; span: string } {
  return {
    delays: schedule.map(delayText).join(", "),
    attempts: schedule.length + 1,
    span: spanText(scheduleSpanMs(schedule)),
  };
}
