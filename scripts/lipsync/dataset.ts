/**
 * Builds the audio classifier's training data: random sentences in several languages spoken by espeak-ng
 * voices of one split (`train` or `tune`, see `bench/lipsync/corpus.ts`), with random rate, pitch and
 * range, passed through a random channel (sample rate 8–48 kHz, tilt and peak EQ, gain, white / pink /
 * brown noise at 8–45 dB SNR, leading and trailing silence), then analysed with the service's own
 * streaming front end (`src/media/lipsync/dsp.ts`). Festival's voices are never used here.
 *
 * Writes `<out>/<split>.bin`: a little header, then per utterance its frame count, the raw features
 * (log-mel bands and energy, float32) and the true viseme of each 10 ms frame (uint8).
 *
 *     nice -n 10 deno run -A scripts/lipsync/dataset.ts --split train --count 3000 --out .data/lipsync
 *
 * @module
 */
import { parseArgs } from "node:util";
import { EspeakLib } from "../../src/speech/espeak_lib.ts";
import {
  espeakUtterance,
  frameLabels,
  randomSentence,
  randomVoice,
  rng,
} from "../../bench/lipsync/corpus.ts";
import { MEL_BANDS, MelAnalyser, StreamResampler } from "../../src/media/lipsync/dsp.ts";

const LANG_SHARE: [string, number][] = [["en", 0.42], ["de", 0.2], ["fr", 0.2], ["es", 0.05], ["it", 0.05], [
  "nl",
  0.04,
], ["pt", 0.04]];
const CHANNEL_RATES: [number, number][] = [[8000, 0.1], [11025, 0.05], [16000, 0.2], [22050, 0.2], [
  24000,
  0.25,
], [
  44100,
  0.05,
], [48000, 0.15]];

function weighted<T>(r: () => number, xs: [T, number][]): T {
  let u = r() * xs.reduce((s, x) => s + x[1], 0);
  for (const [v, w] of xs) if ((u -= w) <= 0) return v;
  return xs[xs.length - 1][0];
}

/** A biquad filter applied in place (RBJ cookbook). */
function biquad(x: Float32Array, b0: number, b1: number, b2: number, a1: number, a2: number): void {
  let x1 = 0, x2 = 0, y1 = 0, y2 = 0;
  for (let i = 0; i < x.length; i++) {
    const y = b0 * x[i] + b1 * x1 + b2 * x2 - a1 * y1 - a2 * y2;
    x2 = x1;
    x1 = x[i];
    y2 = y1;
    y1 = y;
    x[i] = y;
  }
}

function peaking(x: Float32Array, rate: number, f0: number, gainDb: number, q: number): void {
  const A = 10 ** (gainDb / 40), w = 2 * Math.PI * f0 / rate, alpha = Math.sin(w) / (2 * q);
  const a0 = 1 + alpha / A;
  biquad(
    x,
    (1 + alpha * A) / a0,
    -2 * Math.cos(w) / a0,
    (1 - alpha * A) / a0,
    -2 * Math.cos(w) / a0,
    (1 - alpha / A) / a0,
  );
}

function shelf(x: Float32Array, rate: number, f0: number, gainDb: number, high: boolean): void {
  const A = 10 ** (gainDb / 40), w = 2 * Math.PI * f0 / rate, c = Math.cos(w), s = Math.sin(w);
  const alpha = s / 2 * Math.SQRT2, sq = 2 * Math.sqrt(A) * alpha;
  let b0, b1, b2, a0, a1, a2;
  if (high) {
    b0 = A * ((A + 1) + (A - 1) * c + sq);
    b1 = -2 * A * ((A - 1) + (A + 1) * c);
    b2 = A * ((A + 1) + (A - 1) * c - sq);
    a0 = (A + 1) - (A - 1) * c + sq;
    a1 = 2 * ((A - 1) - (A + 1) * c);
    a2 = (A + 1) - (A - 1) * c - sq;
  } else {
    b0 = A * ((A + 1) - (A - 1) * c + sq);
    b1 = 2 * A * ((A - 1) - (A + 1) * c);
    b2 = A * ((A + 1) - (A - 1) * c - sq);
    a0 = (A + 1) + (A - 1) * c + sq;
    a1 = -2 * ((A - 1) + (A + 1) * c);
    a2 = (A + 1) + (A - 1) * c - sq;
  }
  biquad(x, b0 / a0, b1 / a0, b2 / a0, a1 / a0, a2 / a0);
}

/** Noise of a colour: white, pink (Paul Kellet's filter) or brown. */
function noise(n: number, colour: string, r: () => number): Float32Array {
  const out = new Float32Array(n);
  let b0 = 0, b1 = 0, b2 = 0, brown = 0;
  for (let i = 0; i < n; i++) {
    const w = (r() + r() + r() - 1.5) * 2;
    if (colour === "pink") {
      b0 = 0.99765 * b0 + w * 0.0990460;
      b1 = 0.96300 * b1 + w * 0.2965164;
      b2 = 0.57000 * b2 + w * 1.0526913;
      out[i] = b0 + b1 + b2 + w * 0.1848;
    } else if (colour === "brown") {
      brown = 0.98 * brown + w * 0.2;
      out[i] = brown;
    } else out[i] = w;
  }
  return out;
}

/** The random channel: returns PCM16 at a random rate. */
export function channel(
  samples: Int16Array,
  rate: number,
  r: () => number,
): { pcm: Int16Array; rate: number; lead: number } {
  const toRate = weighted(r, CHANNEL_RATES);
  const lead = Math.round(r() * 0.4 * rate), tail = Math.round(r() * 0.4 * rate);
  const x = new Float32Array(lead + samples.length + tail);
  x.set(samples, lead);
  if (r() < 0.6) shelf(x, rate, 300 + r() * 500, (r() - 0.5) * 16, false);
  if (r() < 0.6) shelf(x, rate, 2500 + r() * 3000, (r() - 0.5) * 18, true);
  if (r() < 0.5) peaking(x, rate, 400 + r() * 3500, (r() - 0.5) * 16, 0.7 + r() * 2);
  let speech = 0, count = 0;
  for (let i = 0; i < x.length; i++) {
    if (Math.abs(x[i]) > 100) {
      speech += x[i] * x[i];
      count++;
    }
  }
  const speechRms = Math.sqrt(speech / Math.max(1, count)) || 1;
  if (r() < 0.7) {
    const colour = ["white", "pink", "pink", "brown"][Math.floor(r() * 4)];
    const nz = noise(x.length, colour, r);
    let e = 0;
    for (const v of nz) e += v * v;
    const snrDb = 8 + r() * 37;
    const k = speechRms / (10 ** (snrDb / 20)) / (Math.sqrt(e / nz.length) || 1);
    for (let i = 0; i < x.length; i++) x[i] += k * nz[i];
  }
  let peak = 1;
  for (const v of x) peak = Math.max(peak, Math.abs(v));
  const gain = Math.min(30000 / peak, 10 ** (-(r() * 30) / 20) * 20000 / speechRms);
  for (let i = 0; i < x.length; i++) x[i] *= gain;
  const resampled = rate === toRate ? x : new StreamResampler(rate, toRate).process(x);
  const pcm = new Int16Array(resampled.length);
  for (let i = 0; i < pcm.length; i++) pcm[i] = Math.max(-32768, Math.min(32767, Math.round(resampled[i])));
  return { pcm, rate: toRate, lead };
}

/** Raw features of PCM16 at any rate, through the service's streaming front end in 20 ms chunks. */
export function rawFeatures(pcm: Int16Array, rate: number): Float32Array[] {
  const res = new StreamResampler(rate);
  const mel = new MelAnalyser();
  const frames: Float32Array[] = [];
  const chunk = Math.round(rate / 50);
  const take = (f: { bands: Float32Array; energy: number }) => {
    const v = new Float32Array(MEL_BANDS + 1);
    v.set(f.bands);
    v[MEL_BANDS] = f.energy;
    frames.push(v);
  };
  for (let i = 0; i < pcm.length; i += chunk) mel.push(res.process(pcm.subarray(i, i + chunk)), take);
  // Flush: half a window of zeros completes the last frames.
  mel.push(res.process(new Int16Array(Math.round(rate * 0.05))), take);
  return frames;
}

if (import.meta.main) {
  const { values } = parseArgs({
    args: Deno.args,
    options: {
      split: { type: "string", default: "train" },
      count: { type: "string", default: "3000" },
      out: { type: "string", default: ".data/lipsync" },
      seed: { type: "string" },
    },
  });
  const split = values.split as "train" | "tune";
  if (split !== "train" && split !== "tune") throw new Error("--split must be train or tune");
  const count = Number(values.count);
  const r = rng(Number(values.seed ?? (split === "train" ? 1 : 2)));
  const lib = EspeakLib.open();
  await Deno.mkdir(values.out!, { recursive: true });
  const file = await Deno.open(`${values.out}/${split}.bin`, { write: true, create: true, truncate: true });
  const dim = MEL_BANDS + 1;
  await file.write(new Uint8Array(new Uint32Array([0x4c495053, dim, count]).buffer));
  let frames = 0;
  const t0 = performance.now();
  for (let i = 0; i < count; i++) {
    const lang = weighted(r, LANG_SHARE);
    const text = randomSentence(lang, r) + (r() < 0.3 ? " " + randomSentence(lang, r) : "");
    const voice = randomVoice(split, lang, r);
    if (Deno.env.get("LIPSYNC_DEBUG")) console.error(i, JSON.stringify(voice), text);
    const u = espeakUtterance(lib, `${split}-${i}`, text, voice, lang);
    const ch = channel(u.samples, u.sampleRate, r);
    const leadMs = ch.lead * 1000 / u.sampleRate;
    const shifted = u.segments.map((s) => ({ ...s, startMs: s.startMs + leadMs, endMs: s.endMs + leadMs }));
    const feats = rawFeatures(ch.pcm, ch.rate);
    const labels = frameLabels(shifted, feats.length * 10);
    const block = new Float32Array(feats.length * dim);
    feats.forEach((f, k) => block.set(f, k * dim));
    await file.write(new Uint8Array(new Uint32Array([feats.length]).buffer));
    await file.write(new Uint8Array(block.buffer));
    await file.write(labels.subarray(0, feats.length));
    frames += feats.length;
    if ((i + 1) % 100 === 0) {
      console.error(
        `${split}: ${i + 1}/${count} utterances, ${frames} frames, ${
          ((performance.now() - t0) / 1000).toFixed(0)
        } s`,
      );
    }
  }
  file.close();
  console.error(`${split}: wrote ${frames} frames to ${values.out}/${split}.bin`);
}
