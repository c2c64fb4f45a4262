/**
 * Co-articulation: from a track of target visemes (one per 10 ms) to the weights a mouth shows at an
 * instant. Every target around the instant contributes, fading with its distance (faster ahead than
 * behind: the mouth anticipates the next sound a little and lets go of the last one more slowly), scaled
 * by its viseme's dominance: closures (p b m, f v) and th are reached fully even when short, vowels and
 * pauses give way. Based on the Cohen-Massaro dominance model, simplified.
 *
 * Pure functions (no Deno API): the server renderer and a browser drawing the avatar use the same code.
 *
 * @module
 */
import { type Viseme, VISEME_COUNT, VISEME_INDEX } from "./visemes.ts";

/** How strongly each viseme holds the mouth. */
export const DOMINANCE: Readonly<Record<Viseme, number>> = {
  sil: 0.8,
  PP: 5,
  FF: 3.5,
  TH: 2.5,
  DD: 1.2,
  kk: 0.9,
  CH: 1.8,
  SS: 1.6,
  nn: 1,
  RR: 1.2,
  aa: 1,
  E: 1,
  ih: 1,
  oh: 1.2,
  ou: 1.6,
};

const DOM = new Float32Array(VISEME_COUNT);
for (const [v, d] of Object.entries(DOMINANCE)) DOM[VISEME_INDEX[v as Viseme]] = d;

/** Time constants (ms) of the fade behind and ahead of an instant, and the window considered. */
export const COARTICULATION = { behindMs: 32, aheadMs: 22, windowBehindMs: 90, windowAheadMs: 50 } as const;

/**
 * The weights (summing to 1) at time `t` (ms) of a target track read through `targetAt(ms)` (a viseme
 * index, or -1 where unknown: unknown targets do not contribute).
 */
export function coarticulate(t: number, targetAt: (ms: number) => number, out: Float32Array): Float32Array {
  out.fill(0);
  const { behindMs, aheadMs, windowBehindMs, windowAheadMs } = COARTICULATION;
  let total = 0;
  for (let dt = -windowBehindMs; dt <= windowAheadMs; dt += 10) {
    const v = targetAt(t + dt);
    if (v < 0) continue;
    const w = DOM[v] * Math.exp(dt < 0 ? dt / behindMs : -dt / aheadMs);
    out[v] += w;
    total += w;
  }
  if (total <= 0) {
    out[VISEME_INDEX.sil] = 1;
    return out;
  }
  // The viseme of the instant itself keeps at least half of the mouth.
  const own = targetAt(t);
  for (let v = 0; v < VISEME_COUNT; v++) out[v] /= total;
  if (own >= 0 && out[own] < 0.5) {
    const scale = 0.5 / (1 - out[own]);
    for (let v = 0; v < VISEME_COUNT; v++) out[v] = v === own ? 0.5 : out[v] * scale;
  }
  return out;
}

/** The viseme with the largest weight. */
export function dominant(weights: ArrayLike<number>): number {
  let best = 0;
  for (let v = 1; v < VISEME_COUNT; v++) if (weights[v] > weights[best]) best = v;
  return best;
}
