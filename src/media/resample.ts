/**
 * A streaming linear-interpolation resampler for mono PCM16 (the engine's audio to the encoder's 48 kHz).
 * State carries across chunks, so chunk boundaries leave no clicks.
 *
 * Why not one resampler for the service's three uses: they differ in what they must keep. This one upsamples
 * (24 → 48 kHz, where linear interpolation folds nothing back into speech) with no delay and next to no cost,
 * on the speech path. `src/providers/audio/resampler.ts` (`SincResampler`) downsamples the microphone for a
 * vendor (24 → 16 or 8 kHz): it must be band-limited, and lags 2 ms. `lipsync/dsp.ts` (`StreamResampler`)
 * feeds lip sync's features at 16 kHz as floats, the very filter the classifier was trained with and its
 * WebAssembly twin repeats: changing it changes the model's input. One filter for all three would cost the
 * speech path a delay, or change the microphone's or the model's samples.
 *
 * @module
 */

/** Resamples a continuous mono stream chunk by chunk. */
export class LinearResampler {
  readonly #step: number;
  /** The output rate is twice the input's (24 → 48 kHz, the engines' usual rate): the integer path. */
  readonly #double: boolean;
  /** Position of the next output sample, in input samples relative to the current chunk (-1 = previous last). */
  #t = 0;
  #last = 0;
  #primed = false;

  /**
   * @param options.generic interpolate with the general loop even when the output rate is twice the input's
   *   (the tests compare the two paths)
   */
  constructor(readonly inRate: number, readonly outRate: number, options: { generic?: boolean } = {}) {
    if (!(inRate > 0 && outRate > 0)) throw new RangeError("sample rates must be positive");
    this.#step = inRate / outRate;
    this.#double = outRate === 2 * inRate && !options.generic;
  }

  /** Resamples one chunk; the output length varies by at most one sample from `len × outRate / inRate`. */
  process(input: Int16Array): Int16Array {
    const out = new Int16Array(this.maxOutput(input.length));
    return out.subarray(0, this.into(input, out));
  }

  /** The most samples {@link into} can write for a next chunk of `len` samples (exact when doubling). */
  maxOutput(len: number): number {
    if (this.inRate === this.outRate) return len;
    if (this.#double) return len === 0 ? 0 : Math.max(0, 2 * (len - 1 - this.#t));
    return Math.ceil((len + 1) / this.#step) + 1;
  }

  /**
   * Resamples one chunk into `out` (at least {@link maxOutput} long), from its start; returns how many
   * samples it wrote. The same samples as {@link process}, without an array per chunk.
   */
  into(input: Int16Array, out: Int16Array): number {
    if (this.inRate === this.outRate) {
      out.set(input);
      return input.length;
    }
    if (input.length === 0) return 0;
    if (!this.#primed) {
      this.#last = input[0];
      this.#primed = true;
    }
    const len = input.length;
    if (this.#double) return this.#doubled(input, out);
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
    return n;
  }

  /**
   * The general loop's result when the step is exactly ½ (every position a multiple of ½, exact in floating
   * point): on an input sample the sample itself; halfway, `Math.round((a + b) / 2)` (halves up), which is
   * `(a + b + 1) >> 1` in integers. Same samples, no floating point per sample.
   */
  #doubled(input: Int16Array, out: Int16Array): number {
    const len = input.length;
    let t = this.#t; // −1, −½ or 0
    // Positions t, t + ½, … below len − 1.
    const count = Math.max(0, 2 * (len - 1 - t));
    let i = Math.floor(t), k = 0;
    if (t !== i && k < count) {
      // Halfway past input sample i (i = −1: the previous chunk's last sample).
      out[k++] = ((i < 0 ? this.#last : input[i]) + input[i + 1] + 1) >> 1;
      i++;
    }
    if (i < 0 && k < count) {
      out[k++] = this.#last;
      if (k < count) out[k++] = (this.#last + input[0] + 1) >> 1;
      i = 0;
    }
    for (; k + 1 < count; i++) {
      const a = input[i];
      out[k++] = a;
      out[k++] = (a + input[i + 1] + 1) >> 1;
    }
    if (k < count) out[k++] = input[i];
    t += count / 2;
    this.#t = t - len;
    this.#last = input[len - 1];
    return count;
  }
}
