/**
 * A streaming linear-interpolation resampler for mono PCM16 (the engine's audio to the encoder's 48 kHz).
 * State carries across chunks, so chunk boundaries leave no clicks.
 *
 * @module
 */

/** Resamples a continuous mono stream chunk by chunk. */
export class LinearResampler {
  readonly #step: number;
  /** Position of the next output sample, in input samples relative to the current chunk (-1 = previous last). */
  #t = 0;
  #last = 0;
  #primed = false;

  constructor(readonly inRate: number, readonly outRate: number) {
    if (!(inRate > 0 && outRate > 0)) throw new RangeError("sample rates must be positive");
    this.#step = inRate / outRate;
  }

  /** Resamples one chunk; the output length varies by at most one sample from `len × outRate / inRate`. */
  process(input: Int16Array): Int16Array {
    if (this.inRate === this.outRate) return input.slice();
    if (input.length === 0) return new Int16Array(0);
    if (!this.#primed) {
      this.#last = input[0];
      this.#primed = true;
    }
    const len = input.length;
    const out = new Int16Array(Math.ceil((len + 1) / this.#step) + 1);
    let n = 0;
    let t = this.#t;
    while (t < len - 1) {
      const i = Math.floor(t);
      const frac = t - i;
      const a = i < 0 ? this.#last : input[i];
      const b = input[i + 1];
      out[n++] = Math.round(a + (b - a) * frac);
      t += this.#step;
    }
    this.#t = t - len;
    this.#last = input[len - 1];
    return out.subarray(0, n);
  }
}
