import assert from "node:assert/strict";
import { parseRetrySchedule } from "../config.ts";
import { describeRetrySchedule, nextAttemptAt, scheduleSpanMs } from "./schedule.ts";

Deno.test("retry schedule: the next attempt waits the schedule's delay plus up to 10 % jitter, or Retry-After", () => {
  const schedule = parseRetrySchedule("5s,5m");
  assert.equal(nextAttemptAt(schedule, 1, 1_000, () => 0), 6_000);
  assert.equal(nextAttemptAt(schedule, 2, 1_000, () => 0.999), 1_000 + 300_000 + 29_970);
  assert.equal(nextAttemptAt(schedule, 3, 1_000, () => 0), null, "exhausted");
  assert.equal(nextAttemptAt(schedule, 1, 0, () => 0, 60_000), 60_000, "a longer Retry-After wins");
  assert.equal(nextAttemptAt(schedule, 1, 0, () => 0, 3 * 86_400_000), 86_400_000, "capped at a day");
});

Deno.test("retry schedule: its prose (delays, attempts, span) as the documents state it", () => {
  assert.deepEqual(describeRetrySchedule(parseRetrySchedule("500ms,90s,2m,1h,25h")), {
    delays: "500 ms, 90 s, 2 min, 1 h, 25 h",
    attempts: 6,
    span: "1 day and 2 hours",
  });
  assert.equal(scheduleSpanMs([1, 2, 3]), 6);
  assert.deepEqual(describeRetrySchedule(), {
    delays: "5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 14 h, 20 h, 24 h",
    attempts: 10,
    span: "3 days and 3 hours",
  });
});
