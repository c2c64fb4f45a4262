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

function gcd(a: number, b: number): number {
  while (b) [a, b] = [b, a % b];
  return a;
}

/**
 * Resampling filter tables by `from/to` rates (see {@link StreamResampler}): the filter depends on the two
 * rates only, so there is one table per pair and process (each response of each session has a resampler of
 * its own, and a table of 2048 phases is 100 KB).
 */
const FILTER_TABLES = new Map<string, Float32Array>();

/** The windowed-sinc filter of every phase (`q + 1` rows of `2 × half` taps, each row summing to 1). */
function filterTable(key: string, q: number, half: number, cutoff: number): Float32Array {
  const cached = FILTER_TABLES.get(key);
  if (cached) return cached;
  const taps = 2 * half;
  const rows = q + 1;
  const table = new Float32Array(rows * taps);
  for (let ph = 0; ph < rows; ph++) {
    const frac = ph / q;
    let sum = 0;
    for (let k = 0; k < taps; k++) {
      const x = k - half + 1 - frac; // distance from the output instant
      const w = 0.5 + 0.5 * Math.cos(Math.PI * x / half);
      const sinc = x === 0 ? 2 * cutoff : Math.sin(2 * Math.PI * cutoff * x) / (Math.PI * x);
      const v = Math.abs(x) >= half ? 0 : sinc * w;
      table[ph * taps + k] = v;
      sum += v;
    }
    for (let k = 0; k < taps; k++) table[ph * taps + k] /= sum || 1;
  }
  FILTER_TABLES.set(key, table);
  return table;
}

/** How {@link StreamResampler} resamples one pair of rates. */
export interface ResamplingDesign {
  /** The two rates are equal: the samples pass as they are. */
  passthrough: boolean;
  /** Each of the `q` output phases has its own filter row (else a 256-phase table is interpolated). */
  exact: boolean;
  /** Output phases, and the input step per output sample as the fraction `p / q`. */
  q: number;
  p: number;
  /** Half the filter's length: each output sample weighs `2 × half` input samples. */
  half: number;
  /** `q + 1` rows of `2 × half` taps. */
  table: Float32Array;
}

/** The design of a rate pair (its table shared by the process). */
export function resamplingDesign(fromRate: number, toRate: number = FEATURE_RATE): ResamplingDesign {
  if (!(fromRate >= 1000 && fromRate <= 384_000) || !Number.isInteger(fromRate)) {
    throw new RangeError(`unsupported sample rate ${fromRate}`);
  }
  const g = gcd(fromRate, toRate);
  const exact = toRate / g <= 2048;
  const q = exact ? toRate / g : 256;
  const p = exact ? fromRate / g : fromRate / toRate * 256;
  const down = Math.min(1, toRate / fromRate);
  const cutoff = 0.45 * down; // cycles per input sample
  const half = Math.ceil(6 / down);
  const table = filterTable(`${fromRate}/${toRate}`, q, half, cutoff);
  return { passthrough: fromRate === toRate, exact, q, p, half, table };
}

/**
 * A streaming resampler to a fixed rate: a windowed-sinc low-pass (cut-off at 0.45 × the lower rate)
 * evaluated at each output instant. When the rates' ratio reduces to at most 2048 output phases (every
 * common rate: 8, 11.025, 16, 22.05, 24, 32, 44.1, 48 kHz → 16 kHz) each phase has its own exact filter;
 * otherwise a 256-phase table is interpolated. It keeps the last few input samples between calls, so a
 * stream fed in chunks gives the same output as the whole stream at once; output sample `n` is centred on
 * input instant `n × fromRate / toRate`.
 */
export class StreamResampler {
  readonly #half: number;
  readonly #taps: number;
  /** Output phases (`q`) and the input step per output sample as a fraction `p / q`. */
  readonly #q: number;
  readonly #p: number;
  readonly #exact: boolean;
  readonly #table: Float32Array;
  /** Input kept between calls (grows when a call brings more: a 20 ms chunk needs a few hundred samples). */
  #buf = new Float32Array(1024);
  #bufLen = 0;
  /** Position of the next output sample: input index `#ipos` (relative to #buf[0]) plus `#iphase / q`. */
  #ipos: number;
  #iphase = 0;
  readonly #passthrough: boolean;

  constructor(readonly fromRate: number, readonly toRate: number = FEATURE_RATE) {
    const d = resamplingDesign(fromRate, toRate);
    this.#passthrough = d.passthrough;
    this.#exact = d.exact;
    this.#q = d.q;
    this.#p = d.p;
    this.#half = d.half;
    this.#taps = 2 * d.half;
    this.#table = d.table;
    // Start with half a filter of zeros so the first output sample is centred on input sample 0.
    this.#bufLen = this.#half - 1;
    this.#ipos = this.#half - 1;
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
    const taps = this.#taps, half = this.#half, q = this.#q, p = this.#p;
    const avail = this.#bufLen - half - this.#ipos; // input samples past the next output instant
    const maxOut = avail < 0 ? 0 : Math.floor((avail * q - this.#iphase) / p) + 1;
    const out = new Float32Array(Math.max(0, maxOut));
    const buf = this.#buf, table = this.#table;
    let n = 0;
    let ipos = this.#ipos, iphase = this.#iphase;
    while (n < maxOut && ipos + half < this.#bufLen) {
      const start = ipos - half + 1;
      let acc = 0;
      if (this.#exact) {
        const r0 = iphase * taps;
        for (let k = 0; k < taps; k++) acc += table[r0 + k] * buf[start + k];
      } else {
        const p0 = Math.floor(iphase);
        const t = iphase - p0;
        const r0 = p0 * taps, r1 = r0 + taps;
        for (let k = 0; k < taps; k++) {
          acc += (table[r0 + k] + t * (table[r1 + k] - table[r0 + k])) * buf[start + k];
        }
      }
      out[n++] = acc;
      iphase += p;
      if (iphase >= q) {
        const whole = Math.floor(iphase / q);
        ipos += whole;
        iphase -= whole * q;
      }
    }
    // Drop input no longer needed (keep the filter's history before the next output instant).
    const keepFrom = Math.max(0, ipos - half + 1);
    if (keepFrom > 0) {
      buf.copyWithin(0, keepFrom, this.#bufLen);
      this.#bufLen -= keepFrom;
      ipos -= keepFrom;
    }
    this.#ipos = ipos;
    this.#iphase = iphase;
    return n === out.length ? out : out.subarray(0, n);
  }
}

/** A radix-2 complex FFT of a fixed size (in place, on separate real and imaginary arrays). */
class Fft {
  /** The twiddles e^(−2πi·j/size), j < size/2. */
  readonly cos: Float32Array;
  readonly sin: Float32Array;
  readonly #rev: Uint32Array;

  constructor(readonly size: number) {
    this.cos = new Float32Array(size / 2);
    this.sin = new Float32Array(size / 2);
    for (let i = 0; i < size / 2; i++) {
      this.cos[i] = Math.cos(-2 * Math.PI * i / size);
      this.sin[i] = Math.sin(-2 * Math.PI * i / size);
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
          const wr = this.cos[j * stride], wi = this.sin[j * stride];
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

/** The analysis' tables (and its scratch arrays), built once per process. */
const MEL = {
  fft: new Fft(FFT_SIZE / 2),
  twCos: Float32Array.from({ length: FFT_SIZE / 2 + 1 }, (_, k) => Math.cos(-2 * Math.PI * k / FFT_SIZE)),
  twSin: Float32Array.from({ length: FFT_SIZE / 2 + 1 }, (_, k) => Math.sin(-2 * Math.PI * k / FFT_SIZE)),
  filters: melFilters(),
  window: Float32Array.from(
    { length: WINDOW },
    (_, i) => 0.5 - 0.5 * Math.cos(2 * Math.PI * (i + 0.5) / WINDOW),
  ),
  re: new Float32Array(FFT_SIZE / 2),
  im: new Float32Array(FFT_SIZE / 2),
  power: new Float32Array(FFT_SIZE / 2 + 1),
};

/** The analysis' tables, read-only (the WebAssembly front end, `frontend.ts`, copies them). */
export const ANALYSIS_TABLES: {
  /** The 256-point complex FFT's twiddles (cos, sin of −2πj/256). */
  readonly fftCos: Float32Array;
  readonly fftSin: Float32Array;
  /** cos and sin of −2πk/512, k ≤ 256: the split of the packed real FFT. */
  readonly twCos: Float32Array;
  readonly twSin: Float32Array;
  /** The mel filters: first FFT bin and weights. */
  readonly filters: readonly { first: number; weights: Float32Array }[];
  /** The Hann window ({@link WINDOW} samples). */
  readonly window: Float32Array;
} = {
  fftCos: MEL.fft.cos,
  fftSin: MEL.fft.sin,
  twCos: MEL.twCos,
  twSin: MEL.twSin,
  filters: MEL.filters,
  window: MEL.window,
};

/**
 * 16 kHz samples → a log-mel frame every {@link HOP} samples. Frame `k` is centred on sample
 * `k × HOP + HOP / 2`, so frame `k` describes the 10 ms from `10k` ms; it is complete once the samples up
 * to `k × HOP + HOP/2 + WINDOW/2` have arrived (17.5 ms after the frame's start time).
 */
export class MelAnalyser {
  // The tables and the scratch of the analysis are the same for every analyser (the analysis runs
  // synchronously, one frame at a time): shared by the process, an analyser is only its input buffer.
  readonly #fft = MEL.fft;
  readonly #twCos = MEL.twCos;
  readonly #twSin = MEL.twSin;
  readonly #filters = MEL.filters;
  readonly #window = MEL.window;
  readonly #re = MEL.re;
  readonly #im = MEL.im;
  readonly #power = MEL.power;
  /** Samples not yet consumed; starts with WINDOW/2 − HOP/2 zeros so frame 0 is centred on 5 ms. */
  #buf = new Float32Array(1024);
  #len = (WINDOW - HOP) / 2;
  #prev = 0;
  /** Frames produced so far. */
  frames = 0;

  /** The frame handed to `onFrame`, reused: valid during the call only (copy what must be kept). */
  readonly #frame: MelFrame = { bands: new Float32Array(MEL_BANDS), energy: 0 };

  /**
   * Adds 16 kHz samples; calls `onFrame` for every frame completed (the frame object and its bands are
   * reused for the next frame: valid during the call only).
   */
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
    // A 512-point real FFT as a 256-point complex one: z[n] = x[2n] + i·x[2n+1] (zero-padded window).
    const re = this.#re, im = this.#im, buf = this.#buf, win = this.#window;
    const half = FFT_SIZE / 2;
    let energy = 0;
    for (let n = 0; n < half; n++) {
      const i0 = 2 * n, i1 = i0 + 1;
      const a = i0 < WINDOW ? buf[start + i0] * win[i0] : 0;
      const b = i1 < WINDOW ? buf[start + i1] * win[i1] : 0;
      energy += a * a + b * b;
      re[n] = a;
      im[n] = b;
    }
    this.#fft.transform(re, im);
    const power = this.#power;
    const cos = this.#twCos, sin = this.#twSin;
    for (let k = 0; k <= half; k++) {
      const k1 = k % half, k2 = (half - k) % half;
      // Even and odd parts of the real sequence's spectrum.
      const er = (re[k1] + re[k2]) / 2, ei = (im[k1] - im[k2]) / 2;
      const or = (im[k1] + im[k2]) / 2, oi = -(re[k1] - re[k2]) / 2;
      // X[k] = E[k] + W^k · O[k], W = e^(−2πi/512).
      const xr = er + cos[k] * or - sin[k] * oi;
      const xi = ei + cos[k] * oi + sin[k] * or;
      power[k] = (xr * xr + xi * xi) / FFT_SIZE;
    }
    const bands = this.#frame.bands;
    for (let b = 0; b < MEL_BANDS; b++) {
      const f = this.#filters[b];
      let s = 0;
      for (let k = 0; k < f.weights.length; k++) s += f.weights[k] * power[f.first + k];
      bands[b] = Math.log(s + 1e-2);
    }
    this.#frame.energy = Math.log(energy / WINDOW + 1e-2);
    return this.#frame;
  }
}
