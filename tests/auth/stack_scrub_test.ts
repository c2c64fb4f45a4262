import assert from "node:assert/strict";
import { StackScrub } from "../../src/app/stack_scrub.ts";
import { scrubStack } from "../../src/auth/memory_scrub.ts";

Deno.test("stack scrub: one timer for the requests made before it runs; settled waits for it", async () => {
  const scrub = new StackScrub();
  await scrub.settled(); // nothing pending
  const a = scrub.request();
  const b = scrub.request();
  assert.equal(a, b, "requests before the timer share it");
  await scrub.settled();
  await a;
  const c = scrub.request();
  assert.notEqual(c, a, "a request after it ran gets a new one");
  await c;
});

Deno.test("stack scrub: the recursion reaches its depth, and stops at the stack's limit without throwing", () => {
  assert.ok(scrubStack(64 * 1024) >= 100);
  assert.equal(scrubStack(1 << 30), -1, "a request past V8's stack limit goes as deep as it can");
});
