/**
 * The audio-alone viseme classifier, streaming: PCM at any rate → 16 kHz → log-mel frames every 10 ms →
 * streaming normalisation → a small MLP over a context of frames (past and up to
 * {@link CLASSIFIER_LOOKAHEAD_FRAMES} future frames) → log posteriors of the 15 visemes per frame.
 *
 * The model was trained by `scripts/lipsync/train.py` on espeak-ng speech generated here (many voices,
 * languages, rates, pitches, channels and noises); its weights are in `model_weights.ts`. The
 * normalisation below must stay identical to the training script's.
 *
 * @module
 */
import { HOP, MEL_BANDS, type MelFrame, WINDOW } from "./dsp.ts";
import { type LipSyncFrontEnd, lipSyncFrontEnd } from "./frontend.ts";
import { DENSE_WASM } from "./dense_wasm.ts";
import { MODEL_META, MODEL_TENSORS } from "./model_weights.ts";
import { VISEME_COUNT } from "./visemes.ts";

/** Future frames the classifier looks at. */
export const CLASSIFIER_LOOKAHEAD_FRAMES = Math.max(...MODEL_META.offsets);
/**
 * Audio needed after a frame's start before the classifier can score it, in ms: its look-ahead frames
 * plus the half window after the last one's centre.
 */
export const CLASSIFIER_LATENCY_MS = CLASSIFIER_LOOKAHEAD_FRAMES * 10 + (HOP / 2 + WINDOW / 2) / 16;

/**
 * A frame is quiet when its level is this far below the running peak (the normalised level feature, in
 * units of 4 nepers: −2.5 is about 43 dB down). A context of quiet frames only is a pause.
 */
const QUIET_LEVEL = -2.5;
/** The log posteriors given to a pause: `sil`, all but certainly. */
const SILENT = Float32Array.from(
  { length: VISEME_COUNT },
  (_, v) => v === 0 ? Math.log(0.999) : Math.log(0.001 / 14),
);

function tensor(name: string): Float32Array {
  const b64 = MODEL_TENSORS[name];
  if (!b64) throw new Error(`model tensor ${name} missing`);
  const bin = atob(b64);
  const bytes = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) bytes[i] = bin.charCodeAt(i);
  return new Float32Array(bytes.buffer);
}

/** The trained weights, decoded once per process. */
export interface ClassifierModel {
  offsets: readonly number[];
  inputDim: number;
  proj: number;
  h1: number;
  h2: number;
  mu0: Float32Array;
  logPrior: Float32Array;
  wp: Float32Array;
  bp: Float32Array;
  w1: Float32Array;
  b1: Float32Array;
  w2: Float32Array;
  b2: Float32Array;
  w3: Float32Array;
  b3: Float32Array;
}

let loaded: ClassifierModel | null = null;

/** The committed model (decoded on first use). */
export function classifierModel(): ClassifierModel {
  loaded ??= {
    offsets: MODEL_META.offsets,
    inputDim: MODEL_META.inputDim,
    proj: MODEL_META.proj,
    h1: MODEL_META.h1,
    h2: MODEL_META.h2,
    mu0: tensor("mu0"),
    logPrior: tensor("logPrior"),
    wp: tensor("wp"),
    bp: tensor("bp"),
    w1: tensor("w1"),
    b1: tensor("b1"),
    w2: tensor("w2"),
    b2: tensor("b2"),
    w3: tensor("w3"),
    b3: tensor("b3"),
  };
  return loaded;
}

/**
 * The model's dense layers in WebAssembly with SIMD (`scripts/lipsync/dense.wat`), one instance per model
 * and process: the weights are copied into its memory once, input by input (each input's weights to every
 * output together, the outputs padded to a multiple of four), and the classifiers write each layer's input
 * straight into its scratch (the views below) and read the result from it (the calls are synchronous, so
 * classifiers share it). The JavaScript loops stay as the reference and the fallback (`useJs`). The sums are
 * taken in f32, in another order than in JavaScript: scores differ by ~1e-6.
 */
type DenseFn = (w: number, b: number, x: number, y: number, n: number, m: number, relu: number) => void;

/** One layer in the kernel's memory: transposed weights, bias, widths (`m4`: outputs padded). */
interface KernelLayer {
  w: number;
  b: number;
  n: number;
  m4: number;
}

class DenseKernel {
  readonly #dense: DenseFn;
  readonly #proj: KernelLayer;
  readonly #l1: KernelLayer;
  readonly #l2: KernelLayer;
  readonly #l3: KernelLayer;
  /** Byte offsets of the scratch vectors. */
  readonly #at: { x: number; p: number; ctx: number; a1: number; a2: number; out: number };
  /** The projection's input (a normalised frame), written by the caller. */
  readonly x: Float32Array;
  /** The projection's output (before its tanh), after {@link project}. */
  readonly p: Float32Array;
  /** The MLP's input (a context of projected frames), written by the caller. */
  readonly ctx: Float32Array;
  /** The logits of the visemes, after {@link mlp}. */
  readonly out: Float32Array;

  constructor(m: ClassifierModel) {
    const bin = atob(DENSE_WASM);
    const bytes = new Uint8Array(bin.length);
    for (let i = 0; i < bin.length; i++) bytes[i] = bin.charCodeAt(i);
    const instance = new WebAssembly.Instance(new WebAssembly.Module(bytes));
    const memory = instance.exports.memory as WebAssembly.Memory;
    this.#dense = instance.exports.dense as DenseFn;
    const ctxLen = m.offsets.length * m.proj;
    let top = 0;
    const alloc = (floats: number) => {
      const at = top;
      top += Math.ceil(floats / 4) * 16; // 16-byte aligned
      return at;
    };
    const pad4 = (n: number) => Math.ceil(n / 4) * 4;
    const specs = [
      [m.wp, m.bp, m.inputDim, m.proj],
      [m.w1, m.b1, ctxLen, m.h1],
      [m.w2, m.b2, m.h1, m.h2],
      [m.w3, m.b3, m.h2, VISEME_COUNT],
    ] as const;
    const layers = specs.map(([, , n, m]) => ({ w: alloc(n * pad4(m)), b: alloc(pad4(m)), n, m4: pad4(m) }));
    const at = {
      x: alloc(m.inputDim),
      p: alloc(pad4(m.proj)),
      ctx: alloc(ctxLen),
      a1: alloc(pad4(m.h1)),
      a2: alloc(pad4(m.h2)),
      out: alloc(pad4(VISEME_COUNT)),
    };
    const pages = Math.ceil(top / 65536);
    if (memory.buffer.byteLength < top) memory.grow(pages - memory.buffer.byteLength / 65536);
    const f32 = new Float32Array(memory.buffer);
    specs.forEach(([w, b, n, outs], l) => {
      const { w: wAt, b: bAt, m4 } = layers[l];
      // Row o of the model's weights holds output o's weight of each input: stored here input by input.
      for (let o = 0; o < outs; o++) {
        for (let i = 0; i < n; i++) f32[wAt / 4 + i * m4 + o] = w[o * n + i];
      }
      f32.set(b, bAt / 4);
    });
    [this.#proj, this.#l1, this.#l2, this.#l3] = layers;
    this.#at = at;
    this.x = f32.subarray(at.x / 4, at.x / 4 + m.inputDim);
    this.p = f32.subarray(at.p / 4, at.p / 4 + m.proj);
    this.ctx = f32.subarray(at.ctx / 4, at.ctx / 4 + ctxLen);
    this.out = f32.subarray(at.out / 4, at.out / 4 + VISEME_COUNT);
  }

  #run(l: KernelLayer, x: number, y: number, relu: number): void {
    this.#dense(l.w, l.b, x, y, l.n, l.m4, relu);
  }

  /** The projection of the frame in {@link x} into {@link p} (before its tanh). */
  project(): void {
    this.#run(this.#proj, this.#at.x, this.#at.p, 0);
  }

  /** The three layers over the context in {@link ctx}: the logits of the visemes in {@link out}. */
  mlp(): void {
    const at = this.#at;
    this.#run(this.#l1, at.ctx, at.a1, 1);
    this.#run(this.#l2, at.a1, at.a2, 1);
    this.#run(this.#l3, at.a2, at.out, 0);
  }
}

const kernels = new WeakMap<ClassifierModel, DenseKernel>();

/** The WebAssembly kernel of a model. */
function kernelOf(m: ClassifierModel): DenseKernel {
  let k = kernels.get(m);
  if (k === undefined) {
    k = new DenseKernel(m);
    kernels.set(m, k);
  }
  return k;
}

/** Streaming normalisation of raw mel frames (mirrors `normalise` in the training script). */
export class FrameNormaliser {
  readonly #mu: Float64Array;
  #peak: number = MODEL_META.peakFloor;

  constructor(mu0: Float32Array) {
    this.#mu = Float64Array.from(mu0);
  }

  /** Starts over from the means `mu0` (as a new normaliser). */
  reset(mu0: Float32Array): void {
    this.#mu.set(mu0);
    this.#peak = MODEL_META.peakFloor;
  }

  /** The model input of one frame: bands minus their running means, level below the peak, level. */
  normalise(bands: Float32Array, energy: number, out: Float32Array): void {
    const m = MODEL_META;
    this.#peak = Math.max(energy, this.#peak - m.peakDecay, m.peakFloor);
    const mu = this.#mu;
    if (energy > this.#peak - m.speechBelowPeak) {
      for (let b = 0; b < MEL_BANDS; b++) mu[b] += m.alpha * (bands[b] - mu[b]);
    }
    for (let b = 0; b < MEL_BANDS; b++) out[b] = (bands[b] - mu[b]) / 3;
    out[MEL_BANDS] = Math.min(Math.max((energy - this.#peak) / 4, -3), 0.5);
    out[MEL_BANDS + 1] = Math.min(Math.max((energy - 14) / 4, -3), 3);
  }
}

/**
 * The streaming classifier of one audio stream. Feed PCM with {@link push}; each scored frame comes out
 * through the callback as (frame index, log posteriors). Frame `k` covers `[10k, 10k + 10)` ms of the
 * stream and is scored once the audio up to `10k + CLASSIFIER_LATENCY_MS` has been pushed.
 */
export class StreamingClassifier {
  readonly #m: ClassifierModel;
  /** The dense layers' WebAssembly kernel (null: JavaScript). */
  readonly #kernel: DenseKernel | null;
  /** Resampling and log-mel analysis (WebAssembly, or JavaScript with `useJs`). */
  readonly #front: LipSyncFrontEnd;
  readonly #norm: FrameNormaliser;
  /** Projected frames (tanh(Wp·x + bp)), a ring of the last `span` frames. */
  readonly #ring: Float32Array;
  /** Whether each frame of the ring is far below the speech's level. */
  readonly #quiet: Uint8Array;
  /** Frames scored as a pause without running the model. */
  skipped = 0;
  readonly #span: number;
  readonly #minOff: number;
  readonly #maxOff: number;
  readonly #x: Float32Array;
  readonly #ctx: Float32Array;
  readonly #a1: Float32Array;
  readonly #proj: Float32Array;
  readonly #a2: Float32Array;
  readonly #out = new Float32Array(VISEME_COUNT);
  /** Frames projected so far. */
  #frames = 0;
  /** Samples pushed so far (at the input rate). */
  #pushed = 0;
  /** Next frame to score. */
  #next = 0;
  #ended = false;

  /**
   * @param normaliser the running normalisation (default: a new one from the model's means, as each
   *   training utterance started; the viseme engine gives every response a new one)
   */
  constructor(
    readonly sampleRate: number,
    model: ClassifierModel = classifierModel(),
    normaliser: FrameNormaliser = new FrameNormaliser(model.mu0),
    /** Run the front end and the dense layers in JavaScript instead of WebAssembly (the tests compare the two). */
    useJs = false,
  ) {
    this.#m = model;
    this.#kernel = useJs ? null : kernelOf(model);
    this.#front = lipSyncFrontEnd(sampleRate, useJs);
    this.#norm = normaliser;
    this.#minOff = Math.min(...model.offsets);
    this.#maxOff = Math.max(...model.offsets);
    this.#span = this.#maxOff - this.#minOff + 1;
    this.#ring = new Float32Array(this.#span * model.proj);
    this.#quiet = new Uint8Array(this.#span);
    this.#x = new Float32Array(model.inputDim);
    this.#ctx = new Float32Array(model.offsets.length * model.proj);
    this.#a1 = new Float32Array(model.h1);
    this.#proj = new Float32Array(model.proj);
    this.#a2 = new Float32Array(model.h2);
  }

  /** Frames scored so far. */
  get scored(): number {
    return this.#next;
  }

  /**
   * Starts over as a new classifier of the same rate and model, normalised from the model's means: the
   * viseme engine reuses one per session instead of making one (≈ 10 KB, most of it typed arrays outside
   * the JavaScript heap) per response. A test checks that a reset classifier scores as a new one.
   */
  reset(): void {
    this.#front.reset();
    this.#norm.reset(this.#m.mu0);
    this.#ring.fill(0);
    this.#quiet.fill(0);
    this.skipped = 0;
    this.#frames = 0;
    this.#pushed = 0;
    this.#next = 0;
    this.#ended = false;
    this.#sink = null;
  }

  /** Adds audio; `onFrame(k, logPosteriors)` is called for every frame that becomes scorable. */
  push(pcm: Int16Array | Float32Array, onFrame: (k: number, logPost: Float32Array) => void): void {
    if (this.#ended) return;
    this.#pushed += pcm.length;
    // Each analysed frame is scored before the next is projected: the ring holds the context of one
    // frame, so a push that completes several frames must not project them all first (the oldest context
    // would be overwritten, and the result would depend on how the audio is chunked).
    const outer = this.#sink;
    this.#sink = onFrame;
    try {
      this.#front.push(pcm, this.#onMelFrame);
    } finally {
      this.#sink = outer;
    }
  }

  /** The callback of the push under way (a field, so that a push allocates no closure). */
  #sink: ((k: number, logPost: Float32Array) => void) | null = null;
  readonly #onMelFrame = (f: MelFrame): void => {
    this.#project(f);
    this.#score(this.#sink!, false);
  };

  /**
   * The deadline: scores now the frames before `until` that are not scored yet, with the audio pushed so
   * far — the future past the last analysed frame (and a frame whose window is not complete yet) repeats
   * the last analysed frame, as at the stream's end. Only frames that start within the audio pushed are
   * scored, and only once a frame was analysed. Later frames are scored as usual, with their full context.
   */
  scoreUntil(until: number, onFrame: (k: number, logPost: Float32Array) => void): void {
    if (this.#ended || this.#frames === 0) return;
    const started = Math.ceil(this.#pushed * 100 / this.sampleRate);
    this.#score(onFrame, false, Math.min(until, started));
  }

  /** Adds one analysed frame directly (tests compare the model with the training script this way). */
  pushFrame(frame: MelFrame, onFrame: (k: number, logPost: Float32Array) => void): void {
    if (this.#ended) return;
    this.#project(frame);
    this.#score(onFrame, false);
  }

  /** Ends a stream fed with {@link pushFrame}. */
  endFrames(onFrame: (k: number, logPost: Float32Array) => void): void {
    this.#ended = true;
    this.#score(onFrame, true);
  }

  /** Ends the stream: scores the remaining frames (the future beyond the end repeats the last frame). */
  end(onFrame: (k: number, logPost: Float32Array) => void): void {
    if (this.#ended) return;
    // Half a window of silence completes the frames whose window reaches past the end.
    this.#front.push(new Float32Array(Math.round(this.sampleRate * 0.03)), (f) => this.#project(f));
    this.#ended = true;
    this.#score(onFrame, true);
  }

  #project(f: MelFrame): void {
    const m = this.#m, kernel = this.#kernel;
    // With the kernel, the frame is normalised straight into its memory, and projected there.
    const x = kernel ? kernel.x : this.#x;
    this.#norm.normalise(f.bands, f.energy, x);
    const slot = (this.#frames % this.#span) * m.proj;
    this.#quiet[this.#frames % this.#span] = x[MEL_BANDS] <= QUIET_LEVEL ? 1 : 0;
    let proj = this.#proj;
    if (kernel) {
      kernel.project();
      proj = kernel.p;
    } else dense(m.wp, m.bp, x, proj, false);
    for (let o = 0; o < m.proj; o++) this.#ring[slot + o] = Math.tanh(proj[o]);
    this.#frames++;
  }

  #score(onFrame: (k: number, logPost: Float32Array) => void, final: boolean, until = 0): void {
    const m = this.#m;
    const last = this.#frames - 1;
    while (
      this.#next < until || (this.#next <= last && (final || this.#next + this.#maxOff <= last))
    ) {
      const k = this.#next;
      // Gather the context (clamped to the frames that exist; the ring holds the last `span` frames), with
      // the kernel straight into its memory.
      const ctx = this.#kernel ? this.#kernel.ctx : this.#ctx;
      let quiet = true;
      for (let j = 0; j < m.offsets.length; j++) {
        const f = Math.min(last, Math.max(0, k + m.offsets[j], last - this.#span + 1));
        // Copied value by value: a view per context frame (twelve a frame, a hundred frames a second per
        // talking session) is garbage the young generation has to sweep.
        const src = (f % this.#span) * m.proj, dst = j * m.proj;
        for (let o = 0; o < m.proj; o++) ctx[dst + o] = this.#ring[src + o];
        if (!this.#quiet[f % this.#span]) quiet = false;
      }
      if (quiet) {
        // A pause: every frame of the context is far below the speech's level. No need for the model.
        this.skipped++;
        onFrame(k, SILENT);
        this.#next++;
        continue;
      }
      if (this.#kernel) {
        this.#kernel.mlp();
        this.#out.set(this.#kernel.out);
      } else {
        dense(m.w1, m.b1, ctx, this.#a1, true);
        dense(m.w2, m.b2, this.#a1, this.#a2, true);
        dense(m.w3, m.b3, this.#a2, this.#out, false);
      }
      logSoftmax(this.#out);
      onFrame(k, this.#out);
      this.#next++;
    }
  }
}

function dense(w: Float32Array, b: Float32Array, x: Float32Array, y: Float32Array, relu: boolean): void {
  const n = x.length;
  const n4 = n - (n % 4);
  for (let o = 0; o < y.length; o++) {
    // Four independent sums: the additions do not wait on one another.
    let s0 = b[o], s1 = 0, s2 = 0, s3 = 0;
    const row = o * n;
    let i = 0;
    for (; i < n4; i += 4) {
      s0 += w[row + i] * x[i];
      s1 += w[row + i + 1] * x[i + 1];
      s2 += w[row + i + 2] * x[i + 2];
      s3 += w[row + i + 3] * x[i + 3];
    }
    for (; i < n; i++) s0 += w[row + i] * x[i];
    const s = s0 + s1 + s2 + s3;
    y[o] = relu && s < 0 ? 0 : s;
  }
}

function logSoftmax(z: Float32Array): void {
  let max = -Infinity;
  for (let i = 0; i < z.length; i++) if (z[i] > max) max = z[i];
  let sum = 0;
  for (let i = 0; i < z.length; i++) sum += Math.exp(z[i] - max);
  const lse = max + Math.log(sum);
  for (let i = 0; i < z.length; i++) z[i] -= lse;
}
