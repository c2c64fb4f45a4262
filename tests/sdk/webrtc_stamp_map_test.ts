/**
 * Video-free over WebRTC: the player places the data channel's stamps on the sound from the messages' own
 * arrivals (the median lag) plus the browser's audio delay; a late message does not move it.
 */
import assert from "node:assert/strict";
import { ANIMATION_CHANNEL_OPTIONS, createStampMap } from "../../sdk/player_webrtc_animation.js";

Deno.test("stamp map: heard(t) = t + median arrival lag + audio delay; outliers and loss do not move it", () => {
  const m = createStampMap();
  assert.equal(m.heardAt(5000, 40), null, "nothing before the first message");
  // Messages stamped every 40 ms arrive 60 ms later, give or take 5; one came 400 ms late.
  for (let i = 0; i < 30; i++) m.arrived(1000 + i * 40, 1000 + i * 40 + 60 + (i % 3 - 1) * 5);
  m.arrived(2300, 2700);
  assert.equal(m.delay(40), 100);
  assert.equal(m.heardAt(2000, 40), 1900);
  // Before the browser reports an audio delay, an assumed one is used.
  assert.equal(m.delay(null)! > 60, true);
});

Deno.test("stamp map: the animation channel is unordered and never retransmitted", () => {
  assert.deepEqual({ ...ANIMATION_CHANNEL_OPTIONS }, { ordered: false, maxRetransmits: 0 });
});
