/**
 * A streaming band-limited resampler for mono PCM16: windowed-sinc interpolation (Blackman window, 12 zero
 * crossings each side) with its cut-off at the lower of the two Nyquist frequencies, so downsampling the
 * microphone for a vendor (24 kHz → 16 kHz or 8 kHz) does not fold the upper band back into speech, as plain
 * linear interpolation would. State carries across chunks; the output lags the input by half the kernel
 * (under 2 ms), and the last samples of a chunk come out with the next one.
 *
 * @module
 */

/** Zero crossings of the kernel on each side. */
const ZERO_CROSSINGS = 12;
/** Kernel table resolution: entries per input sample. */
const PHASES = 64;
/** Cut-off as a fraction of the lower Nyquist frequency (a little room for the window's transition). */
const ROLL_OFF = 0.94;

/** Resamples a continuous mono PCM16 stream chunk by chunk. */
export class SincResampler {
  readonly #step: number;
  readonly #half: number;
  readonly #table: Float32Array;
  /** Input not yet consumed, with the history the kernel needs. */
  #buf: Float32Array;
  /** Position of the next output sample, in input samples from `#buf[0]`. */
  #t: number;

  constructor(readonly inRate: number, readonly outRate: number) {
    if (!(inRate > 0 && outRate > 0)) throw new RangeError("sample rates must be positive");
    this.#step = inRate / outRate;
    const cutoff = Math.min(1, outRate / inRate) * ROLL_OFF;
    this.#half = ZERO_CROSSINGS / cutoff;
    const n = Math.ceil(this.#half * PHASES) + 2;
    this.#table = new Float32Array(n);
    for (let i = 0; i < n; i++) {
      const x = i / PHASES;
      if (x >= this.#half) continue;
      const y = Math.PI * cutoff * x;
      const sinc = x === 0 ? 1 : Math.sin(y) / y;
      const u = x / this.#half;
      const window = 0.42 + 0.5 * Math.cos(Math.PI * u) + 0.08 * Math.cos(2 * Math.PI * u);
      this.#table[i] = cutoff * sinc * window;
    }
    // Zero history, so the first real sample sits at the kernel's centre.
    const lead = Math.ceil(this.#half);
    this.#buf = new Float32Array(lead);
    this.#t = lead;
  }

  #kernel(x: number): number {
    const p = Math.abs(x) * PHASES;
    const i = Math.floor(p);
    const f = p - i;
    const t = this.#table;
    return i + 1 < t.length ? t[i] + (t[i + 1] - t[i]) * f : 0;
  }

  /** Resamples one chunk (the output length follows the rate ratio, give or take a sample per chunk). */
  process(input: Int16Array): Int16Array {
    if (this.inRate === this.outRate) return input.slice();
    const prev = this.#buf;
    const buf = new Float32Array(prev.length + input.length);
    buf.set(prev);
    for (let i = 0; i < input.length; i++) buf[prev.length + i] = input[i];
    const half = this.#half;
    const out = new Int16Array(Math.ceil(input.length / this.#step) + 2);
    let n = 0;
    let t = this.#t;
    while (Math.floor(t + half) < buf.length && n < out.length) {
      const lo = Math.max(0, Math.ceil(t - half));
      const hi = Math.floor(t + half);
      let sum = 0;
      for (let i = lo; i <= hi; i++) sum += buf[i] * this.#kernel(t - i);
      out[n++] = sum > 32767 ? 32767 : sum < -32768 ? -32768 : Math.round(sum);
      t += this.#step;
    }
    const keep = Math.max(0, Math.floor(t - half));
    this.#buf = buf.slice(keep);
    this.#t = t - keep;
    return out.subarray(0, n);
  }
}
