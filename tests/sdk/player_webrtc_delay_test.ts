/**
 * The WebRTC player's audio delay from the receiver's statistics (`sdk/player_webrtc_delay.js`): the jitter
 * buffer's wait, the decoded audio not yet played out (counted from the counters), the playout; and the
 * video target that brings the picture back to its sound.
 */
import assert from "node:assert/strict";
import {
  createAudioDelayMeter,
  nextVideoTarget,
  STEER_DEADBAND_MS,
  STEER_MIN_PICTURES,
} from "../../sdk/player_webrtc_delay.js";

const RATE = 48_000;

/**
 * A receiver's counters after `seconds` of audio put out, with `heldMs` decoded and not yet put out, the jitter
 * buffer's wait `jbMs` per sample, and `insertedMs` stretched in.
 */
function stats(seconds: number, heldMs: number, jbMs: number, insertedMs = 0) {
  const out = seconds * RATE;
  const inserted = insertedMs * RATE / 1000;
  const emitted = out + heldMs * RATE / 1000 - inserted;
  return {
    audio: {
      jitterBufferDelay: emitted * jbMs / 1000, // seconds, summed over the samples
      jitterBufferEmittedCount: emitted,
      totalSamplesReceived: out,
      totalSamplesDuration: seconds,
      concealedSamples: 0,
      insertedSamplesForDeceleration: inserted,
      removedSamplesForAcceleration: 0,
    },
    playout: { totalPlayoutDelay: out * 0.03, totalSamplesCount: out }, // 30 ms each
  };
}

Deno.test("the delay is the jitter buffer's wait, the decoded audio's mean wait and the playout", () => {
  const m = createAudioDelayMeter();
  const first = stats(1, 0, 20);
  assert.equal(m.update(first.audio, first.playout), null); // no window yet
  // A 20 ms packet put out 10 ms at a time: 10 or 0 ms held at a read, 5 on average.
  let delay: number | null = null;
  for (let s = 2; s <= 9; s++) {
    const r = stats(s, s % 2 ? 0 : 10, 20);
    delay = m.update(r.audio, r.playout);
  }
  assert.ok(delay !== null);
  assert.ok(Math.abs(delay - (20 + 5 + 30)) < 0.01, `delay ${delay}`);
});

Deno.test("audio stretched into the sync buffer counts, though the jitter buffer reads less", () => {
  // What Chromium showed when NetEQ stretched the first speech by 9.7 ms: the jitter buffer 10, not 20, and the
  // sync buffer 9.7 or 19.7 at a read instead of 0 or 10.
  const m = createAudioDelayMeter();
  let delay: number | null = null;
  for (let s = 1; s <= 10; s++) {
    const r = s <= 2 ? stats(s, s % 2 ? 10 : 0, 20) : stats(s, s % 2 ? 19.7 : 9.7, 10, 9.7);
    delay = m.update(r.audio, r.playout);
  }
  assert.ok(delay !== null);
  // the last eight reads: 19.7 and 9.7 held in turn
  assert.ok(Math.abs(delay - (10 + 14.7 + 30)) < 0.01, `delay ${delay}`);
  assert.ok(Math.abs(m.heldMs()! - 9.7) < 1e-6);
});

Deno.test("a count that drifts with loss is read from where the buffer was last empty", () => {
  // On a lossy path the count drifted below zero by hundreds of ms (Chromium, bench:network): each read that
  // falls below the anchor is the new empty buffer; a concealment anchors again (the buffer ran dry).
  const m = createAudioDelayMeter();
  const heldReads: number[] = [];
  let drift = 0;
  for (let s = 1; s <= 12; s++) {
    drift -= 37; // unaccounted samples put out
    const r = stats(s, (s % 2 ? 10 : 0) + drift, 20);
    m.update(r.audio, r.playout);
    heldReads.push(m.heldMs()!);
  }
  assert.ok(heldReads.every((h) => h >= 0 && h <= 10), heldReads.join(" "));
  // A count that jumps up with a concealment is not audio held.
  const jump = stats(13, drift + 60, 20);
  jump.audio.concealedSamples = 960;
  m.update(jump.audio, jump.playout);
  assert.equal(m.heldMs(), 0);
  const next = stats(14, drift + 70, 20);
  next.audio.concealedSamples = 960;
  m.update(next.audio, next.playout);
  assert.ok(Math.abs(m.heldMs()! - 10) < 1e-6);
  // ...nor one that jumps past what a sync buffer holds.
  const far = stats(15, drift + 70 + 400, 20);
  far.audio.concealedSamples = 960;
  m.update(far.audio, far.playout);
  assert.equal(m.heldMs(), 0);
  // Nothing read yet: nothing known.
  assert.equal(createAudioDelayMeter().heldMs(), null);
});

Deno.test("a new PeerConnection starts the windows again", () => {
  const m = createAudioDelayMeter();
  for (let s = 1; s <= 3; s++) {
    const r = stats(s, 60, 20);
    m.update(r.audio, r.playout);
  }
  m.reset();
  // The new connection's counters are small again: no window across the two, no held audio of the old one.
  const a = stats(1, 0, 40);
  assert.equal(m.update(a.audio, a.playout), null);
  const b = stats(2, 0, 40);
  const delay = m.update(b.audio, b.playout);
  assert.ok(delay !== null && Math.abs(delay - 70) < 0.01, `delay ${delay}`);
});

Deno.test("the picture is brought back to its sound only when they are far apart", () => {
  const many = (ms: number, n = STEER_MIN_PICTURES) => Array.from({ length: n }, (_, i) => ms + (i % 3) - 1);
  // Within the dead band: the browser's own synchronisation is left alone.
  assert.equal(nextVideoTarget(24, many(STEER_DEADBAND_MS - 2)), 24);
  assert.equal(nextVideoTarget(24, many(-STEER_DEADBAND_MS + 2)), 24);
  // The mouth 60 ms ahead of its sound (a sound server holding the audio): the picture waits half of it more.
  assert.equal(nextVideoTarget(24, many(-60)), 54);
  // ...and a late mouth lowers the target, never below 0 (the browser's own estimate).
  assert.equal(nextVideoTarget(24, many(40)), 4);
  assert.equal(nextVideoTarget(10, many(90)), 0);
  assert.equal(nextVideoTarget(390, many(-100)), 400);
  // Too few pictures since the last step: nothing yet.
  assert.equal(nextVideoTarget(24, many(-60, STEER_MIN_PICTURES - 1)), 24);
  // The median, not the mean: a few stray pictures do not move it.
  assert.equal(nextVideoTarget(24, [...many(0), -500, -500]), 24);
});
