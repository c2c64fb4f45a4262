import assert from "node:assert/strict";
import {
  concatPcm,
  framePcm,
  pcm16FromBytes,
  pcm16ToBytes,
  resampleLinear,
  rms,
} from "../../src/speech/pcm.ts";
import { encodeWav, parseWav } from "../../engine/wav.ts";
import { tone } from "./_helpers.ts";

function zeroCrossings(samples: Int16Array): number {
  let n = 0;
  for (let i = 1; i < samples.length; i++) if ((samples[i - 1] < 0) !== (samples[i] < 0)) n++;
  return n;
}

Deno.test("wav: encode/parse round trip", () => {
  const samples = tone(100, 22050);
  const parsed = parseWav(encodeWav(samples, 22050));
  assert.equal(parsed.sampleRate, 22050);
  assert.equal(parsed.channels, 1);
  assert.deepEqual(parsed.samples, samples);
});

Deno.test("wav: streaming placeholder sizes are clamped to the data present", () => {
  const samples = tone(50, 22050);
  const wav = encodeWav(samples, 22050);
  const view = new DataView(wav.buffer);
  view.setUint32(4, 0x7ffff024, true); // what espeak-ng --stdout writes
  view.setUint32(40, 0x7ffff000, true);
  assert.deepEqual(parseWav(wav).samples, samples);
});

Deno.test("wav: the data chunk is found after other chunks, stereo is mixed down", () => {
  const frames = 4;
  const list = new TextEncoder().encode("LIST\x05\x00\x00\x00INFOx\x00"); // odd size + pad byte
  const fmt = new Uint8Array(24);
  const fv = new DataView(fmt.buffer);
  fmt.set(new TextEncoder().encode("fmt "), 0);
  fv.setUint32(4, 16, true);
  fv.setUint16(8, 1, true);
  fv.setUint16(10, 2, true);
  fv.setUint32(12, 8000, true);
  fv.setUint32(16, 8000 * 4, true);
  fv.setUint16(20, 4, true);
  fv.setUint16(22, 16, true);
  const data = new Uint8Array(8 + frames * 4);
  const dv = new DataView(data.buffer);
  data.set(new TextEncoder().encode("data"), 0);
  dv.setUint32(4, frames * 4, true);
  for (let i = 0; i < frames; i++) {
    dv.setInt16(8 + i * 4, 1000 * i, true);
    dv.setInt16(8 + i * 4 + 2, -200, true);
  }
  const header = new Uint8Array(12);
  header.set(new TextEncoder().encode("RIFF"), 0);
  new DataView(header.buffer).setUint32(4, 4 + list.length + fmt.length + data.length, true);
  header.set(new TextEncoder().encode("WAVE"), 8);
  const file = new Uint8Array([...header, ...list, ...fmt, ...data]);
  const parsed = parseWav(file);
  assert.equal(parsed.channels, 2);
  assert.equal(parsed.sampleRate, 8000);
  assert.deepEqual([...parsed.samples], [-100, 400, 900, 1400]);
});

Deno.test("wav: non-WAV and non-16-bit input is rejected", () => {
  assert.throws(() => parseWav(new TextEncoder().encode("hello world, not a wav")), /RIFF/);
  const wav = encodeWav(tone(10, 8000), 8000);
  new DataView(wav.buffer).setUint16(34, 8, true);
  assert.throws(() => parseWav(wav), /unsupported WAV encoding/);
});

Deno.test("pcm: bytes round trip is little-endian", () => {
  const samples = new Int16Array([0, 1, -1, 32767, -32768, 258]);
  const bytes = pcm16ToBytes(samples);
  assert.deepEqual([...bytes.subarray(0, 6)], [0, 0, 1, 0, 0xff, 0xff]);
  assert.deepEqual(pcm16FromBytes(bytes), samples);
  assert.equal(pcm16FromBytes(new Uint8Array([1, 0, 9])).length, 1); // odd byte ignored
});

Deno.test("pcm: linear resampling keeps duration and pitch", () => {
  const src = tone(500, 22050, 8000, 440);
  for (const rate of [8000, 16000, 24000, 48000]) {
    const out = resampleLinear(src, 22050, rate);
    assert.equal(out.length, Math.round(src.length * rate / 22050));
    // 440 Hz for 0.5 s = 440 zero crossings (±2)
    assert.ok(Math.abs(zeroCrossings(out) - 440) <= 2, `rate ${rate}: ${zeroCrossings(out)}`);
    assert.ok(Math.abs(rms(out) - rms(src)) < 150, `rate ${rate}: rms ${rms(out)} vs ${rms(src)}`);
  }
  assert.deepEqual(resampleLinear(new Int16Array([0, 100]), 1, 2), new Int16Array([0, 50, 100, 100]));
  assert.deepEqual(resampleLinear(src, 22050, 22050), src);
  assert.equal(resampleLinear(new Int16Array(0), 8000, 24000).length, 0);
});

Deno.test("pcm: frames of 20 ms, the last one shorter", () => {
  const frames = framePcm(new Int16Array(1000), 480);
  assert.deepEqual(frames.map((f) => f.byteLength), [960, 960, 80]);
  assert.equal(concatPcm([new Int16Array([1]), new Int16Array([2, 3])]).join(","), "1,2,3");
});
