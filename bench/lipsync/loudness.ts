/**
 * The lip sync the service shipped before the viseme engine, kept as the bench's baseline: energy-based,
 * it picks a mouth shape for one video frame (40 ms) from the audio played during it.
 * Loudness opens the mouth (rest → small → open → wide); a high zero-crossing rate (hiss, "ee", "s")
 * flattens it to `ee`; loud but dull sound (strong low frequencies) rounds it to `oo`. A short release
 * keeps the mouth from snapping shut between syllables.
 *
 * @module
 */
import type { Viseme } from "../../src/media/lipsync/visemes.ts";

/** The six mouth shapes the loudness method chose from. */
export type MouthShape = "rest" | "small" | "open" | "wide" | "ee" | "oo";

/**
 * How its shapes are scored: `rest` is the closed mouth (silence, and the closure for /p b m/), `small` a
 * barely open mouth (other consonant), `open`/`wide` open, `ee` spread, `oo` round.
 */
export const LOUDNESS_VISEME: Record<MouthShape, Viseme> = {
  rest: "sil",
  small: "DD",
  open: "aa",
  wide: "aa",
  ee: "E",
  oo: "ou",
};

/** Loudness and brightness of a stretch of audio. */
export interface AudioFeatures {
  /** RMS level in dBFS (−120 for silence). */
  db: number;
  /** Zero crossings per sample (0…1). */
  zcr: number;
  /** Share of the energy below ≈ 500 Hz (0…1). */
  lowShare: number;
}

/** Measures PCM16 audio at `sampleRate`. */
export function analyse(samples: Int16Array, sampleRate: number): AudioFeatures {
  const n = samples.length;
  if (n === 0) return { db: -120, zcr: 0, lowShare: 0 };
  let sum = 0, low = 0, crossings = 0, lp = 0;
  const alpha = 1 - Math.exp(-2 * Math.PI * 500 / sampleRate);
  let prev = samples[0];
  for (let i = 0; i < n; i++) {
    const s = samples[i];
    sum += s * s;
    lp += alpha * (s - lp);
    low += lp * lp;
    if ((s >= 0) !== (prev >= 0)) crossings++;
    prev = s;
  }
  const rms = Math.sqrt(sum / n);
  return {
    db: rms < 1 ? -120 : 20 * Math.log10(rms / 32768),
    zcr: crossings / n,
    lowShare: sum > 0 ? Math.min(1, low / sum) : 0,
  };
}

/** Chooses mouth shapes frame after frame (stateful: attack is immediate, release takes a frame). */
export class LipSync {
  #level = -120;

  /** The shape for a frame with these features. */
  next(f: AudioFeatures): MouthShape {
    // Fast attack, release of 9 dB per frame.
    this.#level = f.db > this.#level ? f.db : Math.max(f.db, this.#level - 9);
    const l = this.#level;
    if (l < -46) return "rest";
    if (f.zcr > 0.22 && l > -40) return "ee";
    if (l < -36) return "small";
    if (f.lowShare > 0.85 && l < -22) return "oo";
    if (l < -26) return "open";
    return "wide";
  }
}
