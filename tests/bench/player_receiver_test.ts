import assert from "node:assert/strict";
import { receiverFigures } from "../../bench/player.ts";

const audio = (at: number, jb: number, concealed: number, events: number, inserted: number) => ({
  at,
  kind: "audio" as const,
  jitterBufferMs: jb,
  targetMs: 20,
  counters: { concealed, events, inserted, removed: 480 },
});

Deno.test("receiverFigures: jitter buffers are the windows' p50, the audio counters the run's differences in ms", () => {
  const f = receiverFigures([
    audio(0, 40, 960, 1, 0),
    { at: 0, kind: "video", jitterBufferMs: 15, targetMs: 34, counters: null },
    audio(250, 30, 960, 1, 0),
    audio(500, 30, 1920, 3, 2400),
    { at: 500, kind: "video", jitterBufferMs: 17, targetMs: 34, counters: null },
  ]);
  assert.equal(f.audio_jitter_buffer_ms, 30);
  assert.equal(f.audio_target_ms, 20);
  assert.equal(f.video_target_ms, 34);
  assert.equal(f.audio_concealed_ms, 20); // 960 samples at 48 kHz
  assert.equal(f.audio_concealment_events, 2);
  assert.equal(f.audio_inserted_ms, 50);
  assert.equal(f.audio_removed_ms, 0);
});

Deno.test("receiverFigures: what a browser does not report stays null", () => {
  const f = receiverFigures([{ at: 0, kind: "audio", jitterBufferMs: 25, targetMs: null, counters: null }]);
  assert.equal(f.audio_jitter_buffer_ms, 25);
  assert.equal(f.audio_target_ms, null);
  assert.equal(f.audio_concealed_ms, null);
  assert.equal(f.video_jitter_buffer_ms, null);
});
