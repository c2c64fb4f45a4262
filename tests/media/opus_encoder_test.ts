/**
 * The in-process Opus encoder, both backends (the system's libopus through FFI, libopus in WebAssembly): 20 ms
 * packets that decode back to the sound (2.5 ms pre-skip), and digital silence repeated as one settled 3-byte
 * packet instead of being encoded again (the sound after it decodes as well as before) — or sent as Opus DTX
 * frames in its place, which decode as silence too.
 */
import assert from "node:assert/strict";
import { OpusDecoder } from "opus-decoder";
import {
  dtxFrame,
  OPUS_FRAME,
  OPUS_PRE_SKIP,
  type OpusBackend,
  opusBackend,
  opusBandwidthFor,
  OpusEncoder,
  SILENCE_SETTLE,
} from "../../src/media/opus_encoder.ts";

Deno.test("opus encoder: the system's libopus loads through FFI here (Linux with ffmpeg's libopus0)", () => {
  const b = opusBackend("auto");
  assert.equal(b.backend, "native", b.why);
  assert.match(b.version, /^libopus \d+\.\d+/);
  const enc = new OpusEncoder(24000);
  assert.equal(enc.backend, "native");
  enc.close();
  assert.equal(opusBackend("wasm").backend, "wasm");
  const wasm = new OpusEncoder(24000, { backend: "wasm" });
  assert.equal(wasm.backend, "wasm");
  wasm.close();
});

for (const backend of ["native", "wasm"] as OpusBackend[]) {
  Deno.test(`opus encoder (${backend}): 20 ms packets decode back to the sound; settled silence is repeated, not re-encoded`, async () => {
    await roundTrip(backend);
  });
}

async function roundTrip(backend: OpusBackend): Promise<void> {
  const enc = new OpusEncoder(24000, { backend });
  assert.equal(enc.backend, backend);
  // 1 s of tone, 1 s of digital silence, 1 s of tone (written in odd-sized pieces).
  const pcm = new Int16Array(48000 * 3);
  for (let j = 0; j < pcm.length; j++) {
    if (j < 48000 || j >= 96000) pcm[j] = Math.round(8000 * Math.sin(j * 2 * Math.PI * 300 / 48000));
  }
  const packets: Uint8Array[] = [];
  const repeats: number[] = [];
  for (let at = 0; at < pcm.length; at += 1000) {
    enc.encode(pcm.subarray(at, Math.min(pcm.length, at + 1000)), (p, n, repeat) => {
      assert.equal(n, OPUS_FRAME);
      if (repeat) repeats.push(packets.length);
      packets.push(p);
    });
  }
  // Marked as repeats: the silence's packets after its first (coded) one, and nothing else.
  assert.deepEqual(repeats, Array.from({ length: 50 - SILENCE_SETTLE }, (_, k) => 50 + SILENCE_SETTLE + k));
  assert.equal(packets.length, pcm.length / OPUS_FRAME);
  // The silence: its first frame encoded (after the reset: a 3-byte silent frame), then that packet repeated.
  assert.equal(enc.stats.repeated, 50 - SILENCE_SETTLE, JSON.stringify(enc.stats));
  assert.equal(enc.stats.encoded + enc.stats.repeated, packets.length);
  const silent = packets.slice(50, 100);
  assert.ok(silent.every((p) => p.length <= 8), silent.map((p) => p.length).join(" "));
  // The settings outlive the reset: the tone after the silence is still coded superwideband (a 24 kHz source).
  const after = new OpusEncoder(24000, { backend, sourceRate: 24000 });
  const tocs: number[] = [];
  after.encode(pcm, (p) => tocs.push(p[0] >> 3));
  after.close();
  assert.ok(tocs.slice(102).every((c) => c >= 24 && c <= 27), `after the silence: ${tocs.slice(102)}`);
  enc.close();

  // Decoded as sent over the WebSocket (the repeats themselves), and over the SFU (DTX frames in their place).
  for (const dtx of [false, true]) {
    await decodes(
      pcm,
      dtx ? packets.map((p, i) => repeats.includes(i) ? dtxFrame(p) : p) : packets,
    );
  }
}

async function decodes(pcm: Int16Array, packets: Uint8Array[]): Promise<void> {
  const dec = new OpusDecoder({ channels: 1, sampleRate: 48000, preSkip: 0 });
  await dec.ready;
  const out = new Float32Array(pcm.length + OPUS_FRAME);
  packets.forEach((p, i) => {
    const d = dec.decodeFrame(p);
    assert.equal(d.samplesDecoded, OPUS_FRAME, `packet ${i} (${p.length} bytes) decodes to 20 ms`);
    out.set(d.channelData[0], i * OPUS_FRAME);
  });
  dec.free();
  const dtx = packets.filter((p) => p.length === 1).length;
  const snr = (from: number, to: number) => {
    let e = 0, s = 0;
    for (let j = from; j < to; j++) {
      const x = pcm[j] / 32768;
      e += (x - out[j + OPUS_PRE_SKIP]) ** 2;
      s += x * x;
    }
    return 10 * Math.log10(s / e);
  };
  assert.ok(snr(2000, 46000) > 15, `the first tone: ${snr(2000, 46000).toFixed(1)} dB`);
  assert.ok(snr(98000, 142000) > 15, `the tone after the silence: ${snr(98000, 142000).toFixed(1)} dB`);
  // The silence decodes silent from the sound's end on (no coded tail of the encoder's filters, ≈ −45 dBFS,
  // as without the reset).
  let loud = 0;
  for (let j = 48000 + 2 * OPUS_PRE_SKIP; j < 96000; j++) loud = Math.max(loud, Math.abs(out[j]));
  assert.ok(loud < 1e-4, `the silence decodes silent (${loud}; ${dtx} DTX frames)`);
  // The tone's first 20 ms after the silence decode as well as the rest (the encoder starts clean, as the
  // decoder does).
  assert.ok(
    snr(96000, 96960) > 15,
    `the tone's first frame after the silence: ${snr(96000, 96960).toFixed(1)} dB (${dtx} DTX frames)`,
  );
}

Deno.test("opus encoder: hundreds at once (one per session, each backend) all encode, the first ones too after the memory grew", () => {
  const pcm = new Int16Array(OPUS_FRAME);
  for (let j = 0; j < pcm.length; j++) pcm[j] = Math.round(8000 * Math.sin(j / 5));
  const encoders: OpusEncoder[] = [];
  try {
    // (opusscript's own wrapper failed at the 79th: "offset is out of bounds")
    for (let i = 0; i < 400; i++) {
      encoders.push(new OpusEncoder(24000, { backend: i % 2 ? "native" : "wasm" }));
    }
    for (const e of [encoders[0], encoders[1], encoders[198], encoders[199], encoders[398], encoders[399]]) {
      let bytes = 0;
      e.encode(pcm, (p) => bytes = p.length);
      assert.ok(bytes > 8, `a packet of ${bytes} bytes`);
    }
  } finally {
    for (const e of encoders) e.close();
  }
});

Deno.test("opus encoder: the coded bandwidth is the source's (an engine at 24 kHz: superwideband, nothing coded past 12 kHz)", () => {
  assert.deepEqual([8000, 11025, 16000, 22050, 24000, 32000, 44100, 48000].map(opusBandwidthFor), [
    1101,
    1103,
    1103,
    1104,
    1104,
    1105,
    1105,
    1105,
  ]);
  const pcm = new Int16Array(OPUS_FRAME * 10);
  for (let j = 0; j < pcm.length; j++) pcm[j] = Math.round(8000 * Math.sin(j * 2 * Math.PI * 440 / 48000));
  for (const backend of ["native", "wasm"] as OpusBackend[]) {
    for (const [sourceRate, configs] of [[24000, [24, 27]], [16000, [20, 23]], [48000, [28, 31]]] as const) {
      const enc = new OpusEncoder(24000, { backend, sourceRate });
      const tocs: number[] = [];
      enc.encode(pcm, (p) => tocs.push(p[0] >> 3));
      enc.close();
      // The TOC's configuration: CELT-only 16–19 narrowband, 20–23 wideband, 24–27 superwideband, 28–31 fullband.
      assert.ok(
        tocs.slice(2).every((c) => c >= configs[0] && c <= configs[1]),
        `${backend} ${sourceRate}: ${tocs}`,
      );
    }
  }
});

for (const backend of ["native", "wasm"] as OpusBackend[]) {
  Deno.test(`opus encoder (${backend}): repeated silent packets taken back leave the stream exactly as if never made; coded ones cannot be`, () => {
    const tone = (n: number, phase: number) =>
      Int16Array.from(
        { length: n },
        (_, i) => Math.round(8000 * Math.sin((phase + i) * 2 * Math.PI * 220 / 48000)),
      );
    const packets = (enc: OpusEncoder, pcm: Int16Array) => {
      const out: Uint8Array[] = [];
      enc.encode(pcm, (p) => out.push(p.slice()));
      return out;
    };
    const speech = tone(OPUS_FRAME * 6, 0);
    const after = tone(OPUS_FRAME * 4, 12345);
    // A: 0.2 s of speech, 3 silent packets, then speech. B: the same with 9 silent packets, 6 taken back.
    const a = new OpusEncoder(24000, { backend });
    const b = new OpusEncoder(24000, { backend });
    try {
      for (const enc of [a, b]) packets(enc, speech);
      packets(a, new Int16Array(OPUS_FRAME * 3));
      packets(b, new Int16Array(OPUS_FRAME * 9));
      assert.equal(a.repeatRun, 3 - SILENCE_SETTLE);
      assert.equal(b.repeatRun, 9 - SILENCE_SETTLE);
      assert.equal(b.retract(9), false, "the first silent packet was coded: it cannot be taken back");
      assert.equal(b.repeatRun, 9 - SILENCE_SETTLE, "a refused retract takes back nothing");
      assert.equal(b.retract(6), true);
      assert.equal(b.repeatRun, a.repeatRun);
      // More silence after the retract is still the repeated packet; then the speech is byte for byte A's.
      const sa = [...packets(a, new Int16Array(OPUS_FRAME)), ...packets(a, after)];
      const sb = [...packets(b, new Int16Array(OPUS_FRAME)), ...packets(b, after)];
      assert.equal(sa.length, sb.length);
      sa.forEach((p, i) => assert.deepEqual(sb[i], p, `packet ${i} after the silence`));
      assert.ok(sa.at(-1)!.length > 8, "speech packets, not silent ones, were compared");
      // The speech's packets are coded (not repeats): nothing of them can be taken back.
      assert.equal(a.repeatRun, 0);
      assert.equal(a.retract(1), false);
      assert.equal(a.retract(0), true);
    } finally {
      a.close();
      b.close();
    }
  });
}
