import assert from "node:assert/strict";

const { settlingPictureNeed, settlingRaise } = await import(
  new URL("../../sdk/player_webcodecs.js", import.meta.url).href
);

// Page time of the service's timeline 0 (the clock's skew): an anchor of SKEW + 80 plays 80 ms behind it.
const SKEW = -5_000;
const CEILING = SKEW + 400;

Deno.test("settlingRaise: a sound that reaches the clock in time leaves the anchor as it is", () => {
  // stamped 1,000, reaching the clock at page time SKEW + 1,040, played 30 ms ahead: needs SKEW + 76 (+6 guard)
  assert.equal(settlingRaise(SKEW + 80, 1_000, SKEW + 1_040, 30, CEILING), null);
});

Deno.test("settlingRaise: a sound the start-up held past the anchor raises it to cover that sound", () => {
  // reaching the clock 150 ms after its instant: 150 + 30 ahead + 6 guard
  assert.equal(settlingRaise(SKEW + 80, 1_000, SKEW + 1_150, 30, CEILING), SKEW + 186);
});

Deno.test("settlingRaise: never beyond the ceiling (400 ms behind the service's clock), nor lowers", () => {
  assert.equal(settlingRaise(SKEW + 80, 1_000, SKEW + 1_500, 30, CEILING), CEILING);
  assert.equal(settlingRaise(CEILING, 1_000, SKEW + 1_500, 30, CEILING), null);
  assert.equal(settlingRaise(SKEW + 450, 1_000, SKEW + 1_500, 30, CEILING), null);
});

Deno.test("settlingRaise: a raise of a millisecond or less is not made", () => {
  assert.equal(settlingRaise(SKEW + 80, 1_000, SKEW + 1_045, 30, CEILING), null); // needs SKEW + 81
  assert.equal(settlingRaise(SKEW + 80, 1_000, SKEW + 1_046, 30, CEILING), SKEW + 82);
});

Deno.test("settlingPictureNeed: while settling, the picture holds the sound back at most 80 ms more than it needs", () => {
  // A reconnection's busy page: frames 540 ms late, the sound needing 200.
  assert.equal(settlingPictureNeed(540, 200, true, true), 280);
  assert.equal(settlingPictureNeed(230, 200, true, true), 230, "within the bound: whole");
  assert.equal(settlingPictureNeed(540, 200, false, true), 540, "settled: whole (raised by steps, raiseNow)");
  assert.equal(
    settlingPictureNeed(540, 200, true, false),
    540,
    "the first anchor: whole (the first frame at once)",
  );
  assert.equal(settlingPictureNeed(540, null, true, true), 540, "no sound measured: whole");
});
