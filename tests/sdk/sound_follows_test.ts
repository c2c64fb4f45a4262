import assert from "node:assert/strict";

const { soundFollows } = await import(new URL("../../sdk/player_webcodecs.js", import.meta.url).href);

Deno.test("soundFollows: the first unit, and each that starts where the last ended, follow", () => {
  assert.equal(soundFollows(407.5, 20, null), "next");
  assert.equal(soundFollows(427.5, 20, 427.5), "next");
  // (stamps from 48 kHz sample counts: a fraction of a millisecond off is the same instant)
  assert.equal(soundFollows(427.52, 20, 427.5), "next");
});

Deno.test("soundFollows: a gap (a reconnection's) or a unit out of order restarts the decoder", () => {
  assert.equal(soundFollows(1427.5, 20, 427.5), "gap");
  assert.equal(soundFollows(447.5, 20, 427.5), "gap");
  // starts before the last one ended but ends after it: out of order, not had
  assert.equal(soundFollows(417.5, 20, 427.5), "gap");
});

Deno.test("soundFollows: a unit the join burst repeats (it ends where the last did, or earlier) was had", () => {
  assert.equal(soundFollows(407.5, 20, 427.5), "had");
  assert.equal(soundFollows(307.5, 20, 427.5), "had");
});
