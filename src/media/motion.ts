/**
 * Life in the avatar: blinks at random intervals, small head motion, and the face's state (speaking,
 * listening while the user talks, thinking between the user's last word and the agent's first sound),
 * deterministic for a seed. {@link FaceAnimator} turns a frame's inputs into a {@link FaceState}: what the
 * renderer draws, and what a client that draws the avatar itself would receive.
 *
 * Pure code (no Deno API).
 *
 * @module
 */
import type { EyeState, Look } from "./art/avatars.ts";
import { VISEME_COUNT, VISEME_INDEX } from "./lipsync/visemes.ts";

/** A small deterministic PRNG (mulberry32). */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Blink timing: the eye state at a time, with blinks every 2–6 s lasting 160 ms. */
export class Blinker {
  readonly #rand: () => number;
  #next: number;

  constructor(seed: number) {
    this.#rand = prng(seed);
    this.#next = 800 + this.#rand() * 2500;
  }

  /** Eye state at `ms` (call with non-decreasing times). */
  at(ms: number): EyeState {
    while (ms >= this.#next + 160) this.#next += 2000 + this.#rand() * 4000;
    const t = ms - this.#next;
    if (t < 0) return "open";
    if (t < 40 || t >= 120) return "half";
    return "closed";
  }

  /** Blinks soon (within 60 ms of `ms`) unless a blink is under way or due within 600 ms. */
  soon(ms: number): void {
    if (this.#next > ms + 600) this.#next = ms + 60;
  }
}

/** Vertical head offset in pixels at `ms`: a slow bob, a little livelier while speaking. */
export function headOffset(ms: number, amplitude: number, speaking: boolean, phase: number): number {
  const slow = Math.sin(2 * Math.PI * ms / 3700 + phase);
  const nod = speaking ? 0.5 * Math.sin(2 * Math.PI * ms / 900 + phase) : 0;
  return Math.round(amplitude * Math.max(-1, Math.min(1, slow * 0.8 + nod)));
}

/** What the face is doing. */
export type FaceMode = "idle" | "speaking" | "listening" | "thinking";

/** The face to draw at one instant. */
export interface FaceState {
  /** Weights of the 15 visemes (`VISEMES` order), summing to 1. */
  visemes: Float32Array;
  eyes: EyeState;
  look: Look;
  /** Head offset on the 512×512 view box, px. */
  headDx: number;
  headDy: number;
  mode: FaceMode;
}

/** What a frame's face is made from. */
export interface FaceInput {
  /** Co-articulated viseme weights (all `sil` when nobody speaks). */
  visemes: Float32Array;
  mode: FaceMode;
}

/**
 * Blinks, head motion and looks for one session. Head motion (on the 512 view box): a slow sway of
 * ±1.5 px and bob of ±2 px, small nods while speaking, a slow nod while listening, the head a little to
 * the side while thinking. Looks: neutral (idle, speaking), listening, thinking; a look change brings a
 * blink with it.
 */
export class FaceAnimator {
  readonly #blinker: Blinker;
  readonly #phase: number;
  #mode: FaceMode = "idle";
  #side = 0;

  constructor(seed: number) {
    this.#blinker = new Blinker(seed);
    this.#phase = (seed % 628) / 100;
  }

  /** The face at `ms` (non-decreasing). */
  at(ms: number, input: FaceInput): FaceState {
    if (input.mode !== this.#mode) {
      if (input.mode === "thinking" || this.#mode === "thinking") this.#blinker.soon(ms);
      this.#mode = input.mode;
    }
    const ph = this.#phase;
    const speaking = input.mode === "speaking";
    // Eased side offset: thinking leans the head a little.
    const sideTarget = input.mode === "thinking" ? 2.5 : 0;
    this.#side += (sideTarget - this.#side) * 0.12;
    const sway = 1.5 * Math.sin(2 * Math.PI * ms / 5300 + ph * 1.7);
    const bob = 2 * (0.8 * Math.sin(2 * Math.PI * ms / 3700 + ph));
    const nod = speaking
      ? 0.9 * Math.sin(2 * Math.PI * ms / 900 + ph)
      : input.mode === "listening"
      ? 1.2 * Math.max(0, Math.sin(2 * Math.PI * ms / 1800 + ph))
      : 0;
    return {
      visemes: input.visemes,
      eyes: this.#blinker.at(ms),
      look: input.mode === "listening" ? "listening" : input.mode === "thinking" ? "thinking" : "neutral",
      headDx: round1(sway + this.#side),
      headDy: round1(bob + nod),
      mode: input.mode,
    };
  }
}

/** Weights of the closed, silent mouth. */
export function silentVisemes(): Float32Array {
  const w = new Float32Array(VISEME_COUNT);
  w[VISEME_INDEX.sil] = 1;
  return w;
}

function round1(v: number): number {
  return Math.round(v * 10) / 10;
}
