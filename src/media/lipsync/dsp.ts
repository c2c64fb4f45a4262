/**
 * Streaming signal processing for lip sync: any rate → 16 kHz (windowed-sinc resampler), and 16 kHz →
 * log-mel frames every 10 ms (25 ms Hann window, 512-point FFT). Pure TypeScript, no allocation per
 * sample; the training script computes its features with this same code.
 *
 * @module
 */

/** The analysis rate. */
export const FEATURE_RATE = 16000;
/** Hop between frames: 10 ms at 16 kHz. */
export const HOP = 160;
/** Analysis window: 25 ms at 16 kHz. */
export const WINDOW = 400;
const FFT_SIZE = 512;
/** Mel bands per frame. */
export const MEL_BANDS = 26;
const MEL_LOW_HZ = 80;
const MEL_HIGH_HZ = 7600;

/**
 * A streaming resampler to a fixed rate: a windowed-sinc low-pass (cut-off at 0.45 × the lower rate)
 * evaluated at each output instant from a precomputed table. It keeps the last few input samples between
 * calls, so a stream fed in chunks gives the same output as the whole stream at once (delayed by
 * {@link StreamResampler.delay} input samples).
 */
export class StreamResampler {
  readonly #step: number;
  readonly #half: number;
  readonly #phases = 256;
  readonly #table: Float32Array;
  /** Input history (the last 2×half samples) followed by new input. */
  #buf = new Float32Array(0);
  #bufLen = 0;
  /** Position of the next output sample, in input samples relative to #buf[0]. */
  #pos: number;
  readonly #passthrough: boolean;

  constructor(readonly fromRate: number, readonly toRate: number = FEATURE_RATE) {
    if (!(fromRate >= 1000 && fromRate <= 384_000)) {
      throw new RangeError(`unsupported sample rate ${fromRate}`);
    }
    this.#passthrough = fromRate === toRate;
    this.#step = fromRate / toRate;
    const cutoff = 0.45 * Math.min(1, toRate / fromRate); // cycles per input sample
    this.#half = Math.ceil(6 / Math.min(1, toRate / fromRate));
    const taps = 2 * this.#half;
    this.#table = new Float32Array((this.#phases + 1) * taps);
    for (let ph = 0; ph <= this.#phases; ph++) {
      const frac = ph / this.#phases;
      let sum = 0;
      for (let k = 0; k < taps; k++) {
        const x = k - this.#half + 1 - frac; // distance from the output instant
        const w = 0.5 + 0.5 * Math.cos(Math.PI * x / this.#half);
        const s = x === 0 ? 2 * cutoff : Math.sin(2 * Math.PI * cutoff * x) / (Math.PI * x);
        const v = Math.abs(x) >= this.#half ? 0 : s * w;
        this.#table[ph * taps + k] = v;
        sum += v;
      }
      for (let k = 0; k < taps; k++) this.#table[ph * taps + k] /= sum || 1;
    }
    // Start with `half` zeros of history so the first output sample is centred on input sample 0.
    this.#buf = new Float32Array(4096);
    this.#bufLen = this.#half - 1;
    this.#pos = this.#half - 1;
  }

  /** Input samples of delay between input and output (0 when the rates are equal). */
  get delay(): number {
    return 0;
  }

  /** Resamples a chunk of PCM16 (or float) input; returns float output samples (PCM16 scale). */
  process(input: Int16Array | Float32Array): Float32Array {
    if (this.#passthrough) return Float32Array.from(input);
    const need = this.#bufLen + input.length;
    if (need > this.#buf.length) {
      const grown = new Float32Array(Math.max(need, this.#buf.length * 2));
      grown.set(this.#buf.subarray(0, this.#bufLen));
      this.#buf = grown;
    }
    this.#buf.set(input, this.#bufLen);
    this.#bufLen = need;
    const taps = 2 * this.#half;
    const maxOut = Math.max(0, Math.floor((this.#bufLen - this.#half - this.#pos) / this.#step) + 1);
    const out = new Float32Array(maxOut);
    let n = 0;
    const buf = this.#buf;
    const table = this.#table;
    while (n < maxOut) {
      const base = Math.floor(this.#pos);
      if (base + this.#half >= this.#bufLen) break;
      const frac = this.#pos - base;
      const fp = frac * this.#phases;
      const p0 = Math.floor(fp);
      const t = fp - p0;
      const r0 = p0 * taps;
      const r1 = r0 + taps;
      let acc = 0;
      const start = base - this.#half + 1;
      for (let k = 0; k < taps; k++) {
        const c = table[r0 + k] + t * (table[r1 + k] - table[r0 + k]);
        acc += c * buf[start + k];
      }
      out[n++] = acc;
      this.#pos += this.#step;
    }
    // Drop input no longer needed (keep `taps` samples of history before the next output instant).
    const keepFrom = Math.max(0, Math.floor(this.#pos) - this.#half + 1);
    if (keepFrom > 0) {
      buf.copyWithin(0, keepFrom, this.#bufLen);
      this.#bufLen -= keepFrom;
      this.#pos -= keepFrom;
    }
    return n === maxOut ? out : out.subarray(0, n);
  }
}

/** A radix-2 complex FFT of a fixed size (in place, on separate real and imaginary arrays). */
class Fft {
  readonly #cos: Float32Array;
  readonly #sin: Float32Array;
  readonly #rev: Uint32Array;

  constructor(readonly size: number) {
    this.#cos = new Float32Array(size / 2);
    this.#sin = new Float32Array(size / 2);
    for (let i = 0; i < size / 2; i++) {
      this.#cos[i] = Math.cos(-2 * Math.PI * i / size);
      this.#sin[i] = Math.sin(-2 * Math.PI * i / size);
    }
    const bits = Math.log2(size);
    this.#rev = new Uint32Array(size);
    for (let i = 0; i < size; i++) {
      let r = 0;
      for (let b = 0; b < bits; b++) r |= ((i >> b) & 1) << (bits - 1 - b);
      this.#rev[i] = r;
    }
  }

  transform(re: Float32Array, im: Float32Array): void {
    const n = this.size;
    const rev = this.#rev;
    for (let i = 0; i < n; i++) {
      const j = rev[i];
      if (j > i) {
        let t = re[i];
        re[i] = re[j];
        re[j] = t;
        t = im[i];
        im[i] = im[j];
        im[j] = t;
      }
    }
    for (let len = 2; len <= n; len <<= 1) {
      const half = len >> 1;
      const stride = n / len;
      for (let i = 0; i < n; i += len) {
        for (let j = 0; j < half; j++) {
          const wr = this.#cos[j * stride], wi = this.#sin[j * stride];
          const a = i + j, b = a + half;
          const xr = re[b] * wr - im[b] * wi;
          const xi = re[b] * wi + im[b] * wr;
          re[b] = re[a] - xr;
          im[b] = im[a] - xi;
          re[a] += xr;
          im[a] += xi;
        }
      }
    }
  }
}

/** Mel scale. */
const mel = (hz: number) => 2595 * Math.log10(1 + hz / 700);
const melInv = (m: number) => 700 * (10 ** (m / 2595) - 1);

/** Triangular mel filters over the bins of a 512-point FFT at 16 kHz: [firstBin, weights…] per band. */
function melFilters(): { first: number; weights: Float32Array }[] {
  const bins = FFT_SIZE / 2 + 1;
  const lo = mel(MEL_LOW_HZ), hi = mel(MEL_HIGH_HZ);
  const edges = Array.from({ length: MEL_BANDS + 2 }, (_, i) => melInv(lo + (hi - lo) * i / (MEL_BANDS + 1)));
  const hzPerBin = FEATURE_RATE / FFT_SIZE;
  const out = [];
  for (let b = 0; b < MEL_BANDS; b++) {
    const [l, c, r] = [edges[b], edges[b + 1], edges[b + 2]];
    const first = Math.max(0, Math.ceil(l / hzPerBin));
    const last = Math.min(bins - 1, Math.floor(r / hzPerBin));
    const w = new Float32Array(Math.max(1, last - first + 1));
    for (let k = first; k <= last; k++) {
      const f = k * hzPerBin;
      w[k - first] = f <= c ? (f - l) / (c - l) : (r - f) / (r - c);
    }
    // Each filter has unit area so band levels do not depend on the band's width.
    const s = w.reduce((a, x) => a + Math.max(0, x), 0) || 1;
    for (let k = 0; k < w.length; k++) w[k] = Math.max(0, w[k]) / s;
    out.push({ first, weights: w });
  }
  return out;
}

/** One analysis frame. */
export interface MelFrame {
  /** Natural log of each mel band's mean power (PCM16 scale), floored at ln(1e-2). */
  bands: Float32Array;
  /** Natural log of the frame's mean power over the (pre-emphasised, windowed) frame. */
  energy: number;
}

/**
 * 16 kHz samples → a log-mel frame every {@link HOP} samples. Frame `k` is centred on sample
 * `k × HOP + HOP / 2`, so frame `k` describes the 10 ms from `10k` ms; it is complete once the samples up
 * to `k × HOP + HOP/2 + WINDOW/2` have arrived (17.5 ms after the frame's start time).
 */
export class MelAnalyser {
  readonly #fft = new Fft(FFT_SIZE);
  readonly #filters = melFilters();
  readonly #window = new Float32Array(WINDOW);
  readonly #re = new Float32Array(FFT_SIZE);
  readonly #im = new Float32Array(FFT_SIZE);
  readonly #power = new Float32Array(FFT_SIZE / 2 + 1);
  /** Samples not yet consumed; starts with WINDOW/2 − HOP/2 zeros so frame 0 is centred on 5 ms. */
  #buf = new Float32Array(8192);
  #len = (WINDOW - HOP) / 2;
  #prev = 0;
  /** Frames produced so far. */
  frames = 0;

  constructor() {
    for (let i = 0; i < WINDOW; i++) this.#window[i] = 0.5 - 0.5 * Math.cos(2 * Math.PI * (i + 0.5) / WINDOW);
  }

  /** Adds 16 kHz samples; calls `onFrame` for every frame completed. */
  push(samples: Float32Array, onFrame: (frame: MelFrame) => void): void {
    if (this.#len + samples.length > this.#buf.length) {
      const grown = new Float32Array(Math.max(this.#buf.length * 2, this.#len + samples.length));
      grown.set(this.#buf.subarray(0, this.#len));
      this.#buf = grown;
    }
    // Pre-emphasis (0.97) as the samples arrive.
    const buf = this.#buf;
    let prev = this.#prev;
    for (let i = 0; i < samples.length; i++) {
      const x = samples[i];
      buf[this.#len + i] = x - 0.97 * prev;
      prev = x;
    }
    this.#prev = prev;
    this.#len += samples.length;
    let start = 0;
    while (start + WINDOW <= this.#len) {
      onFrame(this.#analyse(start));
      this.frames++;
      start += HOP;
    }
    if (start > 0) {
      this.#buf.copyWithin(0, start, this.#len);
      this.#len -= start;
    }
  }

  #analyse(start: number): MelFrame {
    const re = this.#re, im = this.#im, buf = this.#buf, win = this.#window;
    let energy = 0;
    for (let i = 0; i < WINDOW; i++) {
      const x = buf[start + i] * win[i];
      energy += x * x;
      re[i] = x;
      im[i] = 0;
    }
    re.fill(0, WINDOW);
    im.fill(0, WINDOW);
    this.#fft.transform(re, im);
    const power = this.#power;
    for (let k = 0; k <= FFT_SIZE / 2; k++) power[k] = (re[k] * re[k] + im[k] * im[k]) / FFT_SIZE;
    const bands = new Float32Array(MEL_BANDS);
    for (let b = 0; b < MEL_BANDS; b++) {
      const f = this.#filters[b];
      let s = 0;
      for (let k = 0; k < f.weights.length; k++) s += f.weights[k] * power[f.first + k];
      bands[b] = Math.log(s + 1e-2);
    }
    return { bands, energy: Math.log(energy / WINDOW + 1e-2) };
  }
}
