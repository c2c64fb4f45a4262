/**
 * The session's Opus encoder, each backend and complexity side by side (`deno run -A bench/opus_encoders.ts
 * [--repeats 7]`): CPU per 20 ms packet and what the decoded sound loses, on 31 s of speech (espeak-ng, two
 * voices, three sentences, 24 kbit/s, low-delay mode as the service encodes it), by backend, complexity and
 * coded bandwidth. The rows' timings are
 * interleaved (one pass of each, repeated), so a busy machine slows them alike.
 *
 * Quality measures, decoded with `opus-decoder` and aligned on the best delay: SNR over the whole signal,
 * segmental SNR (mean over 20 ms frames with sound) and log-spectral distance (dB, 0–16 kHz, Hann-windowed
 * 20 ms frames with sound; lower is better): together they separate complexity 0 (no transient analysis, no
 * spreading) from the rest, where a listener would hear a difference first.
 *
 * @module
 */
import { parseArgs } from "node:util";
import { OpusDecoder } from "opus-decoder";
import { EspeakLib } from "../src/speech/espeak_lib.ts";
import { StreamResampler } from "../src/media/lipsync/dsp.ts";
import {
  OPUS_FRAME,
  OPUS_PRE_SKIP,
  type OpusBackend,
  opusBackend,
  opusBandwidthFor,
  OpusEncoder,
} from "../src/media/opus_encoder.ts";

const BANDWIDTH_NAMES: Record<number, string> = {
  1101: "narrowband",
  1103: "wideband",
  1104: "superwideband",
  1105: "fullband",
};

const SENTENCES = [
  "Well, the quick brown fox jumps over the lazy dog, and then we should probably talk about your order.",
  "She sells sea shells by the sea shore, and the shells she sells are surely seashells.",
  "Peter Piper picked a peck of pickled peppers; how many pickled peppers did Peter Piper pick?",
];

/** The speech: every sentence in two voices at 48 kHz, 100 ms of silence after each. */
export function benchSpeech(): Int16Array {
  const lib = EspeakLib.open();
  const parts: number[] = [];
  for (const text of SENTENCES) {
    for (const voice of ["en-us", "en-us+f3"]) {
      const s = lib.synthesize(text, { voice });
      for (const x of new StreamResampler(s.sampleRate, 48000).process(s.samples)) {
        parts.push(Math.max(-32768, Math.min(32767, Math.round(x))));
      }
      for (let i = 0; i < 4800; i++) parts.push(0);
    }
  }
  return Int16Array.from(parts.slice(0, Math.floor(parts.length / OPUS_FRAME) * OPUS_FRAME));
}

/** One row of the table. */
export interface EncoderRow {
  backend: "native" | "wasm";
  complexity: number;
  /** The coded bandwidth (fullband 20 kHz, superwideband 12, wideband 8). */
  bandwidth: string;
  us_per_packet_median: number;
  us_per_packet_min: number;
  snr_db: number;
  seg_snr_db: number;
  lsd_db: number;
  bytes_per_packet: number;
}

function encodeAll(
  pcm: Int16Array,
  backend: OpusBackend,
  complexity: number,
  sourceRate: number,
): Uint8Array[] {
  const enc = new OpusEncoder(24000, { backend, complexity, sourceRate });
  const packets: Uint8Array[] = [];
  try {
    enc.encode(pcm, (p) => packets.push(p));
  } finally {
    enc.close();
  }
  return packets;
}

async function decodeAll(packets: Uint8Array[]): Promise<Float32Array> {
  const dec = new OpusDecoder({ channels: 1, sampleRate: 48000, preSkip: 0 });
  await dec.ready;
  const out = new Float32Array(packets.length * OPUS_FRAME);
  packets.forEach((p, i) => out.set(dec.decodeFrame(p).channelData[0], i * OPUS_FRAME));
  dec.free();
  return out;
}

/** Log-spectral distance of one 20 ms frame (dB), 0–16 kHz in 80 bins. */
function frameLsd(ref: Int16Array, dec: Float32Array, at: number, delay: number): number {
  let acc = 0, n = 0;
  for (let k = 2; k < 320; k += 4) {
    let ar = 0, ai = 0, br = 0, bi = 0;
    for (let i = 0; i < OPUS_FRAME; i++) {
      const w = 0.5 - 0.5 * Math.cos(2 * Math.PI * i / OPUS_FRAME);
      const c = Math.cos(2 * Math.PI * k * i / OPUS_FRAME), s = Math.sin(2 * Math.PI * k * i / OPUS_FRAME);
      const x = w * ref[at + i], y = w * dec[at + i + delay] * 32768;
      ar += x * c;
      ai += x * s;
      br += y * c;
      bi += y * s;
    }
    const pa = 10 * Math.log10(ar * ar + ai * ai + 1e3), pb = 10 * Math.log10(br * br + bi * bi + 1e3);
    acc += (pa - pb) ** 2;
    n++;
  }
  return Math.sqrt(acc / n);
}

/** SNR, segmental SNR and log-spectral distance of `dec` against `ref` (delay: the pre-skip). */
export function quality(ref: Int16Array, dec: Float32Array): { snr: number; seg: number; lsd: number } {
  const delay = OPUS_PRE_SKIP;
  let sig = 0, noise = 0;
  const seg: number[] = [], lsd: number[] = [];
  const frames = Math.floor(ref.length / OPUS_FRAME);
  for (let f = 1; f < frames - 1; f++) {
    let s = 0, e = 0;
    for (let i = f * OPUS_FRAME; i < (f + 1) * OPUS_FRAME; i++) {
      const d = dec[i + delay] * 32768 - ref[i];
      s += ref[i] * ref[i];
      e += d * d;
    }
    sig += s;
    noise += e;
    if (s / OPUS_FRAME > 100 * 100) {
      seg.push(10 * Math.log10(s / Math.max(e, 1)));
      lsd.push(frameLsd(ref, dec, f * OPUS_FRAME, delay));
    }
  }
  const mean = (a: number[]) => a.reduce((x, y) => x + y, 0) / a.length;
  return { snr: 10 * Math.log10(sig / noise), seg: mean(seg), lsd: mean(lsd) };
}

/** Runs the comparison. */
export async function benchOpusEncoders(repeats: number): Promise<EncoderRow[]> {
  const pcm = benchSpeech();
  const frames = pcm.length / OPUS_FRAME;
  const native = opusBackend("auto").backend === "native";
  // [backend, complexity, the source rate the coded bandwidth is chosen for]: the speech is espeak-ng's
  // (22.05 kHz: nothing above 11 kHz), so 24 kHz (superwideband, 12 kHz) loses nothing of it, 48 kHz codes
  // up to 20 kHz (fullband) and 16 kHz (wideband, 8 kHz) cuts it.
  const variants: [OpusBackend, number, number][] = [
    ["wasm", 3, 48000],
    ["wasm", 3, 24000],
    ...(native
      ? [[0, 24000], [1, 24000], [2, 24000], [3, 24000], [2, 48000], [3, 48000], [2, 16000]].map(([c, r]) =>
        ["native", c, r] as [OpusBackend, number, number]
      )
      : []),
  ];
  const times = variants.map(() => [] as number[]);
  for (let r = 0; r < repeats; r++) {
    variants.forEach(([backend, cx, rate], i) => {
      const t = performance.now();
      encodeAll(pcm, backend, cx, rate);
      times[i].push((performance.now() - t) / frames * 1000);
    });
  }
  const rows: EncoderRow[] = [];
  for (const [i, [backend, cx, rate]] of variants.entries()) {
    const packets = encodeAll(pcm, backend, cx, rate);
    const q = quality(pcm, await decodeAll(packets));
    const t = [...times[i]].sort((a, b) => a - b);
    rows.push({
      backend: backend as "native" | "wasm",
      complexity: cx,
      bandwidth: BANDWIDTH_NAMES[opusBandwidthFor(rate)],
      us_per_packet_median: Math.round(t[t.length >> 1] * 10) / 10,
      us_per_packet_min: Math.round(t[0] * 10) / 10,
      snr_db: Math.round(q.snr * 100) / 100,
      seg_snr_db: Math.round(q.seg * 100) / 100,
      lsd_db: Math.round(q.lsd * 1000) / 1000,
      bytes_per_packet: Math.round(packets.reduce((n, p) => n + p.length, 0) / frames * 10) / 10,
    });
  }
  return rows;
}

if (import.meta.main) {
  const { values } = parseArgs({ args: Deno.args, options: { repeats: { type: "string", default: "7" } } });
  const b = opusBackend("auto");
  console.log(`native: ${b.backend === "native" ? b.version : `not loaded (${b.why})`}`);
  const rows = await benchOpusEncoders(Number(values.repeats));
  console.log(
    "| backend | complexity | bandwidth | µs/packet median | min | SNR dB | segSNR dB | LSD dB | bytes/packet |",
  );
  console.log("| --- | --- | --- | --- | --- | --- | --- | --- | --- |");
  for (const r of rows) {
    console.log(
      `| ${r.backend} | ${r.complexity} | ${r.bandwidth} | ${r.us_per_packet_median} | ${r.us_per_packet_min} | ${r.snr_db} | ${r.seg_snr_db} | ${r.lsd_db} | ${r.bytes_per_packet} |`,
    );
  }
  console.log(`load ${(await Deno.readTextFile("/proc/loadavg")).split(" ").slice(0, 3).join(" ")}`);
  console.log(JSON.stringify(rows));
}
