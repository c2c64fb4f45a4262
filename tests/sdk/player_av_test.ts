/**
 * The players' mouth-vs-sound meter (`sdk/player_av.js`) on simulated pictures: a sound start heard at a
 * known time, pictures shown every 40 ms whose mouth opens at another known time; the sample is the first
 * open picture shown − the sound start, whatever the levels' scale, and none when the mouth never moves.
 */
import assert from "node:assert/strict";
import { createAvMeter } from "../../sdk/player_av.js";

/** Pictures every 40 ms from `from` to `to` (page ms), open (level `open`) from `opensAt` for 400 ms. */
function feed(
  m: ReturnType<typeof createAvMeter>,
  o: { from: number; to: number; opensAt: number; closed: number; open: number; phase?: number },
) {
  for (let t = o.from + (o.phase ?? 0); t < o.to; t += 40) {
    m.shown(t, t >= o.opensAt && t < o.opensAt + 400 ? o.open : o.closed);
  }
}

Deno.test("av meter: the first open picture − the sound start, per sound start, on any scale", () => {
  const m = createAvMeter({ minRange: 3 });
  // Three sound starts; the mouth opens 40 ms late, on time, 20 ms early (pictures at 40 ms steps).
  m.soundStart(1000);
  m.soundStart(2000);
  m.soundStart(3000);
  feed(m, { from: 0, to: 1000, opensAt: Infinity, closed: 91, open: 111 });
  feed(m, { from: 1000, to: 2000, opensAt: 1040, closed: 91, open: 111 });
  feed(m, { from: 2000, to: 3000, opensAt: 2000, closed: 91, open: 111 });
  feed(m, { from: 2980, to: 4000, opensAt: 2980, closed: 91, open: 111 });
  assert.deepEqual(m.take(4000), [40, 0, -20]);
  // Each once.
  assert.deepEqual(m.take(5000), []);
});

Deno.test("av meter: a pose drawn only when it changes (the canvas) — the mouth before the window counts", () => {
  const m = createAvMeter({ minRange: 0.5 });
  m.shown(100, 0); // closed long before
  m.soundStart(1000);
  m.shown(1016, 1);
  m.shown(1056, 1);
  m.shown(1600, 0);
  assert.deepEqual(m.take(1600), [16]);
});

Deno.test("av meter: nothing while the window is open, nothing for a mouth that never moved or a single open picture", () => {
  const still = createAvMeter({ minRange: 3 });
  still.soundStart(1000);
  feed(still, { from: 0, to: 2000, opensAt: 1000, closed: 91, open: 92 });
  assert.deepEqual(still.take(2000), [], "a 1-level change is not a mouth");

  const m = createAvMeter({ minRange: 3 });
  m.soundStart(1000);
  feed(m, { from: 0, to: 1200, opensAt: 1040, closed: 90, open: 110 });
  assert.deepEqual(m.take(1200), [], "the window is still open");
  feed(m, { from: 1200, to: 2000, opensAt: 1040, closed: 90, open: 110 });
  assert.deepEqual(m.take(2000), [40]);

  const blip = createAvMeter({ minRange: 3 });
  blip.soundStart(1000);
  for (let t = 0; t < 2000; t += 40) blip.shown(t, t === 1040 ? 110 : 90);
  blip.shown(5000, 110); // (calibration sees an open mouth elsewhere)
  assert.deepEqual(blip.take(6000), [], "one open picture alone");
});

Deno.test("av meter: a picture read late is placed in the order shown; no pictures at all ends with no sample", () => {
  const m = createAvMeter({ minRange: 3 });
  m.soundStart(1000);
  feed(m, { from: 0, to: 2000, opensAt: 1080, closed: 90, open: 110 });
  m.shown(1060, 110); // read late: it was shown before 1080
  assert.deepEqual(m.take(2000), [60]);

  const empty = createAvMeter({ minRange: 3 });
  empty.soundStart(1000);
  assert.deepEqual(empty.take(1500), []);
  assert.deepEqual(empty.take(2500), [], "given up on after the window and a second");
  empty.shown(3000, 90);
  assert.deepEqual(empty.take(3000), []);
});
