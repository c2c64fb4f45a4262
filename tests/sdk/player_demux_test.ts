/**
 * The WebCodecs player's demuxer (`sdk/player_demux.js`) reads exactly what the service writes: the init
 * segment and media segments of `src/media/transports/ws_fmp4/fmp4.ts`, and the lighter framing.
 */
import assert from "node:assert/strict";
import {
  AUDIO_TRACK_ID,
  initSegment,
  mediaSegment,
  VIDEO_TRACK_ID,
} from "../../src/media/transports/ws_fmp4/fmp4.ts";
import { encodeFrame } from "../../src/media/transports/ws_fmp4/frames.ts";
import { avcCodecString, parseFrame, parseInitSegment, parseMediaSegment } from "../../sdk/player_demux.js";

const AVCC = Uint8Array.of(
  1,
  0x42,
  0xc0,
  0x1e,
  0xff,
  0xe1,
  0,
  4,
  0x67,
  0x42,
  0xc0,
  0x1e,
  1,
  0,
  2,
  0x68,
  0xce,
);
const OPUS = { channels: 1, preSkip: 312, inputSampleRate: 48000, outputGain: 0 };

Deno.test("player demux: the init segment gives the decoders' configuration", () => {
  const init = parseInitSegment(initSegment({ width: 512, height: 384, avcC: AVCC, opus: OPUS }));
  assert.equal(init.video.id, VIDEO_TRACK_ID);
  assert.equal(init.video.codec, "avc1.42c01e");
  assert.equal(avcCodecString(AVCC), "avc1.42c01e");
  assert.deepEqual(init.video.description, AVCC);
  assert.equal(init.video.width, 512);
  assert.equal(init.video.height, 384);
  assert.equal(init.video.timescale, 90000);
  assert.deepEqual(init.audio, {
    id: AUDIO_TRACK_ID,
    timescale: 48000,
    channels: 1,
    preSkip: 312,
    sampleRate: 48000,
  });
});

Deno.test("player demux: media segments give samples on the session's timeline (ms), keyframes marked, pre-skip removed", () => {
  const init = parseInitSegment(initSegment({ width: 256, height: 256, avcC: AVCC, opus: OPUS }));
  const key = new Uint8Array(3000).fill(5);
  const v = parseMediaSegment(
    mediaSegment(7, VIDEO_TRACK_ID, 90 * 1040, [{ data: key, duration: 3600, key: true }]),
    init,
  );
  assert.equal(v.kind, "video");
  assert.equal(v.samples.length, 1);
  assert.equal(v.samples[0].time, 1040);
  assert.equal(v.samples[0].duration, 40);
  assert.equal(v.samples[0].key, true);
  assert.deepEqual(v.samples[0].data, key);
  const delta = parseMediaSegment(
    mediaSegment(8, VIDEO_TRACK_ID, 90 * 1080, [{
      data: Uint8Array.of(1, 2, 3),
      duration: 3600,
      key: false,
    }]),
    init,
  );
  assert.equal(delta.samples[0].key, false);
  const a = parseMediaSegment(
    mediaSegment(9, AUDIO_TRACK_ID, 312 + 4800, [
      { data: Uint8Array.of(9, 9), duration: 480, key: true },
      { data: Uint8Array.of(8, 8, 8), duration: 480, key: true },
    ]),
    init,
  );
  assert.equal(a.kind, "audio");
  assert.deepEqual(a.samples.map((s) => [s.time, s.duration, s.data.length]), [[100, 10, 2], [110, 10, 3]]);
});

Deno.test("player demux: the lighter framing carries the same units with a 16-byte header", () => {
  const au = new Uint8Array(100).fill(3);
  const v = parseFrame(encodeFrame("video", 1040.5, 40, true, au));
  assert.deepEqual(
    { kind: v.kind, time: v.samples[0].time, duration: v.samples[0].duration, key: v.samples[0].key },
    { kind: "video", time: 1040.5, duration: 40, key: true },
  );
  assert.deepEqual(v.samples[0].data, au);
  const a = parseFrame(encodeFrame("audio", -2.5, 10, false, Uint8Array.of(1)));
  assert.equal(a.kind, "audio");
  assert.equal(a.samples[0].time, -2.5);
  assert.equal(a.samples[0].key, true);
  assert.throws(() => parseFrame(new Uint8Array(4)), /shorter than its header/);
});
