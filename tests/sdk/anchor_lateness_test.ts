import assert from "node:assert/strict";

const { afterStall, lateness } = await import(new URL("../../sdk/player_webcodecs.js", import.meta.url).href);

Deno.test("lateness: a unit that came live is measured (arrival − stamp)", () => {
  // joined at timeline 400; a unit stamped 427.5 arriving at page time 260 (the offset is the page's clock's)
  assert.equal(lateness(427.5, 260, 400, -Infinity), 260 - 427.5);
  assert.equal(lateness(400, 250, 400, -Infinity), -150);
});

Deno.test("lateness: the join burst is not measured, not even just before the join", () => {
  // Units stamped before the join arrive together with the first live ones, late by nature; those within
  // 60 ms of it were once measured and set the first anchor 60–85 ms too late.
  assert.equal(lateness(387.5, 250, 400, -Infinity), null);
  assert.equal(lateness(347.5, 250, 400, -Infinity), null);
  assert.equal(lateness(399.9, 250, 400, -Infinity), null);
});

Deno.test("lateness: nothing is measured while playback catches up after a stall", () => {
  assert.equal(lateness(5000, 1000, 400, 1200), null);
  assert.equal(lateness(5000, 1200, 400, 1200), 1200 - 5000);
});

Deno.test("afterStall: playing on its clock, the backlog is left out until the catch-up (at most 2 s)", () => {
  assert.deepEqual(afterStall(5000, true), { measureFrom: 7000, recoveringSince: 5000 });
});

Deno.test("afterStall: before the anchor is set, only the backlog's arrival is left out (the sound not held 2 s)", () => {
  // A gap between the join burst and the live media: nothing to catch up, and the anchor (which the sound
  // waits for) is set from lateness measured 300 ms on.
  assert.deepEqual(afterStall(1000, false), { measureFrom: 1300, recoveringSince: null });
  assert.ok(lateness(1040, 1300, 400, afterStall(1000, false).measureFrom) !== null);
});
