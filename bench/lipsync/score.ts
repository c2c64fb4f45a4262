/**
 * Scoring lip sync against a true phoneme timeline, per 10 ms frame in the 7 classes (silence, closed,
 * lip-teeth, open, round, spread, other consonant), plus closures:
 * - closure recall: the share of true /p b m/ segments during which `PP` shows for at least one frame
 *   within ±40 ms of the segment;
 * - closure precision: the share of frames showing `PP` that lie within ±40 ms of a true /p b m/.
 *
 * @module
 */
import { CLASS_OF, VISEMES } from "../../src/media/lipsync/visemes.ts";
import type { Segment } from "./corpus.ts";

/** Scores of one or more utterances (sums, so they add up). */
export interface Tally {
  frames: number;
  correct7: number;
  correct15: number;
  closures: number;
  closuresHit: number;
  ppFrames: number;
  ppNear: number;
}

/** An empty tally. */
export function tally(): Tally {
  return { frames: 0, correct7: 0, correct15: 0, closures: 0, closuresHit: 0, ppFrames: 0, ppNear: 0 };
}

/** Adds `b` into `a`. */
export function add(a: Tally, b: Tally): Tally {
  for (const k of Object.keys(a) as (keyof Tally)[]) a[k] += b[k];
  return a;
}

/** The ratios of a tally. */
export function ratios(t: Tally): { acc7: number; acc15: number; recall: number; precision: number } {
  return {
    acc7: t.frames ? t.correct7 / t.frames : 0,
    acc15: t.frames ? t.correct15 / t.frames : 0,
    recall: t.closures ? t.closuresHit / t.closures : 0,
    precision: t.ppFrames ? t.ppNear / t.ppFrames : 0,
  };
}

const CLASS7 = VISEMES.map((v) => CLASS_OF[v]);
const PP = VISEMES.indexOf("PP");

/**
 * Scores predicted frames (viseme index per 10 ms) against the truth (labels per frame and the segments
 * they come from). `closed` optionally marks frames where the mouth is shut when the method has no `PP`
 * (the loudness baseline's closed mouth).
 */
export function score(
  predicted: Uint8Array,
  truth: Uint8Array,
  segments: readonly Segment[],
  closed?: Uint8Array,
): Tally {
  const n = Math.min(predicted.length, truth.length);
  const t = tally();
  for (let f = 0; f < n; f++) {
    t.frames++;
    if (predicted[f] === truth[f]) t.correct15++;
    if (CLASS7[predicted[f]] === CLASS7[truth[f]]) t.correct7++;
  }
  const isPP = (f: number) => closed ? closed[f] === 1 : predicted[f] === PP;
  const closures = segments.filter((s) => s.parts.some((p) => p.viseme === "PP"));
  for (const s of closures) {
    t.closures++;
    const lo = Math.max(0, Math.floor((s.startMs - 40) / 10)),
      hi = Math.min(n - 1, Math.floor((s.endMs + 40) / 10));
    for (let f = lo; f <= hi; f++) {
      const c = f * 10 + 5;
      if (c >= s.startMs - 40 && c <= s.endMs + 40 && isPP(f)) {
        t.closuresHit++;
        break;
      }
    }
  }
  for (let f = 0; f < n; f++) {
    if (!isPP(f)) continue;
    t.ppFrames++;
    const c = f * 10 + 5;
    if (closures.some((s) => c >= s.startMs - 40 && c <= s.endMs + 40)) t.ppNear++;
  }
  return t;
}
