/**
 * Video-free over WebRTC: the player places the data channel's stamps on the sound from the messages' own
 * arrivals (the median lag) plus the browser's audio delay; a late message does not move it. Each message is
 * applied once, whether it came first, in a later datagram's `prev` or as a repeat.
 */
import assert from "node:assert/strict";
import {
  ANIMATION_CHANNEL_OPTIONS,
  animationMessage,
  createSeenMessages,
  createStampMap,
  strip,
} from "../../sdk/player_webrtc_animation.js";

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

Deno.test("animation messages: each is applied once by type and stamp, with what the channel added taken off", () => {
  const seen = createSeenMessages();
  const a = { type: "viseme", t_ms: 100, viseme: "aa" };
  assert.equal(seen.has(a), false, "first time");
  assert.equal(seen.has({ ...a, prev: [] }), true, "a copy");
  assert.equal(seen.has({ type: "head", t_ms: 100, dx: 0, dy: 0 }), false, "another type at the same stamp");
  assert.deepEqual(strip({ ...a, prev: [{ type: "face", t_ms: 90 }], repeat: true }), a);
  assert.equal(animationMessage(a), true);
  assert.equal(animationMessage({ type: "animation_channel" }), false);
  assert.equal(animationMessage({ type: "viseme", t_ms: "100" }), false);
  // Bounded: the oldest are forgotten.
  for (let i = 0; i < 1000; i++) seen.has({ type: "viseme", t_ms: 1000 + i });
  assert.equal(seen.has(a), false, "long forgotten");
});
