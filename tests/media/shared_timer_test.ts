import assert from "node:assert/strict";
import { SharedTimer } from "../../src/media/shared_timer.ts";

const deadline = <T>(p: Promise<T>, ms = 10_000) =>
  Promise.race([
    p,
    new Promise<never>((_, reject) => {
      const t = setTimeout(() => reject(new Error("timed out")), ms);
      p.finally(() => clearTimeout(t));
    }),
  ]);

Deno.test("shared timer: wake-ups run in time order, never before their time, on fewer timers", async () => {
  const timer = new SharedTimer();
  const t0 = performance.now();
  const ran: { i: number; at: number; late: number }[] = [];
  let done!: () => void;
  const all = new Promise<void>((r) => done = r);
  const n = 60;
  // Sixty wake-ups over 30 ms, scheduled in a shuffled order: many share a millisecond.
  const order = Array.from({ length: n }, (_, i) => (i * 37) % n);
  for (const i of order) {
    const at = t0 + 5 + i / 2;
    timer.schedule(at, () => {
      ran.push({ i, at, late: performance.now() - at });
      if (ran.length === n) done();
    });
  }
  assert.equal(timer.pending, n);
  await deadline(all);
  assert.deepEqual(ran.map((r) => r.i), Array.from({ length: n }, (_, i) => i));
  for (const r of ran) assert.ok(r.late >= 0, `wake-up ${r.i} ran ${-r.late} ms early`);
  assert.equal(timer.pending, 0);
  assert.equal(timer.stats.ran, n);
  assert.ok(timer.stats.fired < n, `one timer per wake-up (${timer.stats.fired} firings)`);
});

Deno.test("shared timer: a cancelled wake-up never runs, and none left means no timer pending", async () => {
  const timer = new SharedTimer();
  const now = performance.now();
  let ranA = false, ranB = false;
  const a = timer.schedule(now + 5, () => ranA = true);
  const b = timer.schedule(now + 10, () => ranB = true);
  timer.cancel(a);
  timer.cancel(a); // twice: nothing more happens
  assert.equal(timer.pending, 1);
  timer.cancel(b);
  assert.equal(timer.pending, 0);
  // The op sanitizer fails this test if a timer were still pending; wait past both times anyway.
  await new Promise((r) => setTimeout(r, 30));
  assert.equal(ranA, false);
  assert.equal(ranB, false);
});

Deno.test("shared timer: a wake-up scheduled while others run (even for now) waits for the next firing", async () => {
  const timer = new SharedTimer();
  const seen: string[] = [];
  let done!: () => void;
  const finished = new Promise<void>((r) => done = r);
  const now = performance.now();
  timer.schedule(now, () => {
    seen.push("first");
    timer.schedule(performance.now() - 5, () => {
      seen.push("rescheduled");
      done();
    });
    assert.deepEqual(seen, ["first"], "the new wake-up must not run inside this firing");
  });
  timer.schedule(now, () => seen.push("second"));
  await deadline(finished);
  assert.deepEqual(seen, ["first", "second", "rescheduled"]);
  assert.equal(timer.pending, 0);
});

Deno.test("shared timer: an earlier wake-up scheduled after a later one still runs first", async () => {
  const timer = new SharedTimer();
  const seen: number[] = [];
  let done!: () => void;
  const finished = new Promise<void>((r) => done = r);
  const now = performance.now();
  timer.schedule(now + 200, () => {
    seen.push(200);
    done();
  });
  timer.schedule(now + 5, () => seen.push(5));
  await deadline(finished);
  assert.deepEqual(seen, [5, 200]);
});
