/**
 * Life in the idle avatar: blinks at random intervals and a slow head bob, deterministic for a seed.
 *
 * @module
 */
import type { EyeState } from "./art/avatars.ts";

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
}

/** Vertical head offset in pixels at `ms`: a slow bob, a little livelier while speaking. */
export function headOffset(ms: number, amplitude: number, speaking: boolean, phase: number): number {
  const slow = Math.sin(2 * Math.PI * ms / 3700 + phase);
  const nod = speaking ? 0.5 * Math.sin(2 * Math.PI * ms / 900 + phase) : 0;
  return Math.round(amplitude * Math.max(-1, Math.min(1, slow * 0.8 + nod)));
}
