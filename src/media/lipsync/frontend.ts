/**
 * The lip-sync front end of one audio stream: PCM at any rate → 16 kHz → pre-emphasis → a log-mel frame every
 * 10 ms, what {@link StreamResampler} and {@link MelAnalyser} compute, in WebAssembly with 128-bit SIMD
 * (`scripts/lipsync/frontend.wat`, built into `frontend_wasm.ts`). One instance per process holds the
 * analysis' tables and the resampling filters; a stream keeps only its history between calls (the last
 * input samples the filter still needs, under 400 samples at 16 kHz not yet analysed), copied into the
 * instance's scratch at each call and back (the calls are synchronous, so streams share the scratch; the
 * copies are a few hundred floats, and a stream that is dropped without notice leaves nothing behind).
 *
 * The sums are taken in f32, in another order than the JavaScript's f64: the log-mel bands differ from
 * {@link MelAnalyser}'s by ~1e-5 (a test bounds them). The JavaScript stays the reference (the training
 * script computes its features with it) and the fallback ({@link JsFrontEnd}: a rate whose filter is
 * interpolated, or `useJs`).
 *
 * @module
 */
import {
  ANALYSIS_TABLES,
  FEATURE_RATE,
  HOP,
  MEL_BANDS,
  MelAnalyser,
  type MelFrame,
  resamplingDesign,
  StreamResampler,
  WINDOW,
} from "./dsp.ts";
import { FRONTEND_WASM } from "./frontend_wasm.ts";

/** A stream's front end: push PCM, get the log-mel frames it completes. */
export interface LipSyncFrontEnd {
  /**
   * Adds samples (PCM16 scale, at the stream's rate); calls `onFrame` for every frame completed (the frame
   * object is reused: valid during the call only).
   */
  push(samples: Int16Array | Float32Array, onFrame: (frame: MelFrame) => void): void;
  /** Frames produced so far. */
  readonly frames: number;
  /** Starts over as new (a new stream at the same rate): a response's classifier is reused by the next. */
  reset(): void;
}

/** The JavaScript front end: {@link StreamResampler} then {@link MelAnalyser}. */
export class JsFrontEnd implements LipSyncFrontEnd {
  #resampler: StreamResampler;
  #mel = new MelAnalyser();

  constructor(readonly sampleRate: number) {
    this.#resampler = new StreamResampler(sampleRate);
  }

  get frames(): number {
    return this.#mel.frames;
  }

  push(samples: Int16Array | Float32Array, onFrame: (frame: MelFrame) => void): void {
    this.#mel.push(this.#resampler.process(samples), onFrame);
  }

  reset(): void {
    this.#resampler = new StreamResampler(this.sampleRate);
    this.#mel = new MelAnalyser();
  }
}

/** Output samples (16 kHz) per piece a call is cut into: bounds the scratch. */
const PIECE_OUT = 2048;
/** The highest input rate the WebAssembly resampler takes (above, the JavaScript front end runs). */
const MAX_RATE = 48_000;
/** Floats per analysed frame in the module's output: 26 log band powers, the log energy, a spare. */
const FRAME_FLOATS = MEL_BANDS + 2;
/** Frames a piece can complete at most. */
const MAX_FRAMES = Math.ceil((WINDOW + PIECE_OUT + 1) / HOP);

type ResampleFn = (
  table: number,
  stride: number,
  q: number,
  p: number,
  half: number,
  buf: number,
  len: number,
  out: number,
  maxOut: number,
  ctl: number,
) => number;
type PreemphFn = (src: number, n: number, dst: number, prev: number) => number;
type FramesFn = (buf: number, len: number, dst: number) => number;

/** A resampling filter in the instance's memory: its byte offset and a row's byte length. */
interface WasmFilter {
  ptr: number;
  stride: number;
}

/** The process's instance: its memory, entry points and the byte offsets of its scratch. */
class FrontEndModule {
  readonly memory: WebAssembly.Memory;
  readonly resample: ResampleFn;
  readonly preemph: PreemphFn;
  readonly analyse: FramesFn;
  /** Scratch (byte offsets): resampler input, its output, the analysis buffer, frames out, ten i32. */
  readonly inBuf: number;
  readonly outBuf: number;
  readonly melBuf: number;
  readonly frameBuf: number;
  readonly ctl: number;
  #top: number;
  #f32: Float32Array;
  #i32: Int32Array;
  readonly #filters = new Map<number, WasmFilter>();

  constructor() {
    const bin = atob(FRONTEND_WASM);
    const bytes = new Uint8Array(bin.length);
    for (let i = 0; i < bin.length; i++) bytes[i] = bin.charCodeAt(i);
    const x = new WebAssembly.Instance(new WebAssembly.Module(bytes)).exports;
    this.memory = x.memory as WebAssembly.Memory;
    this.resample = x.resample as ResampleFn;
    this.preemph = x.preemph as PreemphFn;
    this.analyse = x.frames as FramesFn;
    const at = (name: string) => (x[name] as WebAssembly.Global).value as number;
    this.#f32 = new Float32Array(this.memory.buffer);
    this.#i32 = new Int32Array(this.memory.buffer);
    const t = ANALYSIS_TABLES;
    this.#f32.set(t.window, at("win") / 4);
    const bits = Math.log2(t.fftCos.length * 2);
    for (let i = 0; i < 2 ** bits; i++) {
      let r = 0;
      for (let b = 0; b < bits; b++) r |= ((i >> b) & 1) << (bits - 1 - b);
      this.#i32[at("rev") / 4 + i] = r * 4;
    }
    // Per stage from the third (half-length h = 4 … 128): cos[j·stride], then sin[j·stride], j < h.
    let tw = at("tw") / 4;
    const n = 2 ** bits;
    for (let h = 4; h < n; h *= 2) {
      const stride = n / (2 * h);
      for (let j = 0; j < h; j++) this.#f32[tw + j] = t.fftCos[j * stride];
      for (let j = 0; j < h; j++) this.#f32[tw + h + j] = t.fftSin[j * stride];
      tw += 2 * h;
    }
    this.#f32.set(t.twCos, at("pc") / 4);
    this.#f32.set(t.twSin, at("ps") / 4);
    // The mel filters, each zero-padded to a multiple of four weights; none reaches bin 256 (the module
    // computes bins 0…255 only).
    let top = at("heap");
    const melb = at("melb") / 4;
    t.filters.forEach((f, b) => {
      const len4 = Math.ceil(f.weights.length / 4) * 4;
      if (f.first + len4 > 256) throw new Error("a mel filter reaches bin 256");
      this.#i32[melb + 4 * b] = f.first * 4;
      this.#i32[melb + 4 * b + 1] = len4 * 4;
      this.#i32[melb + 4 * b + 2] = top;
      this.#f32.set(f.weights, top / 4);
      top += len4 * 4;
    });
    const alloc = (floats: number) => {
      const ptr = top;
      top += Math.ceil(floats / 4) * 16;
      return ptr;
    };
    // Input: the filter's history (< 2 × half + 4 ≤ 112 at 48 kHz) and a piece, three zeros past it.
    this.inBuf = alloc(PIECE_OUT * MAX_RATE / FEATURE_RATE + 128);
    this.outBuf = alloc(PIECE_OUT + 8);
    this.melBuf = alloc(WINDOW + PIECE_OUT + 8);
    this.frameBuf = alloc(MAX_FRAMES * FRAME_FLOATS);
    this.ctl = alloc(10); // ipos, iphase, and four (row, input) pairs
    this.#top = top;
    this.#ensure(top);
  }

  /** The memory as floats (a new view after the memory grew). */
  get f32(): Float32Array {
    if (this.#f32.buffer !== this.memory.buffer) {
      this.#f32 = new Float32Array(this.memory.buffer);
      this.#i32 = new Int32Array(this.memory.buffer);
    }
    return this.#f32;
  }

  get i32(): Int32Array {
    void this.f32;
    return this.#i32;
  }

  #ensure(bytes: number): void {
    const have = this.memory.buffer.byteLength;
    if (bytes > have) this.memory.grow(Math.ceil((bytes - have) / 65536));
  }

  /** The filter of a rate (copied into the memory on first use, its rows padded to a multiple of four). */
  filter(rate: number): WasmFilter {
    let f = this.#filters.get(rate);
    if (f) return f;
    const d = resamplingDesign(rate);
    const taps = 2 * d.half, taps4 = Math.ceil(taps / 4) * 4;
    const rows = d.q + 1;
    const ptr = this.#top;
    this.#top += rows * taps4 * 4;
    this.#ensure(this.#top);
    const mem = this.f32;
    for (let r = 0; r < rows; r++) {
      mem.set(d.table.subarray(r * taps, (r + 1) * taps), ptr / 4 + r * taps4); // padded with zeros
      mem.fill(0, ptr / 4 + r * taps4 + taps, ptr / 4 + (r + 1) * taps4);
    }
    f = { ptr, stride: taps4 * 4 };
    this.#filters.set(rate, f);
    return f;
  }
}

let instance: FrontEndModule | null = null;

/** The WebAssembly front end of one stream (see the module's doc). */
export class WasmFrontEnd implements LipSyncFrontEnd {
  readonly #m: FrontEndModule;
  /** The JavaScript resampler of a rate whose filter is interpolated, or null. */
  #jsResampler: StreamResampler | null;
  readonly #passthrough: boolean;
  readonly #filter: WasmFilter | null;
  readonly #q: number;
  readonly #p: number;
  readonly #half: number;
  /** Input samples per piece. */
  readonly #piece: number;
  /** The resampler's input kept between calls, and the next output's position (as in StreamResampler). */
  readonly #hist: Float32Array;
  #histLen: number;
  #ipos: number;
  #iphase = 0;
  /** The last 16 kHz sample (the pre-emphasis' memory). */
  #prev = 0;
  /** Pre-emphasised samples not yet analysed: WINDOW/2 − HOP/2 zeros first (frame 0 centred on 5 ms). */
  readonly #mel = new Float32Array(WINDOW);
  #melLen = (WINDOW - HOP) / 2;
  /** The frames of one piece, copied out of the memory before the callbacks run (they may re-enter). */
  readonly #out = new Float32Array(MAX_FRAMES * FRAME_FLOATS);
  readonly #frame: MelFrame = { bands: new Float32Array(MEL_BANDS), energy: 0 };
  frames = 0;

  constructor(readonly sampleRate: number) {
    const d = resamplingDesign(sampleRate);
    this.#m = instance ??= new FrontEndModule();
    this.#passthrough = d.passthrough;
    const wasm = !d.passthrough && d.exact && sampleRate <= MAX_RATE;
    this.#jsResampler = d.passthrough || wasm ? null : new StreamResampler(sampleRate);
    this.#filter = wasm ? this.#m.filter(sampleRate) : null;
    this.#q = d.q;
    this.#p = d.p;
    this.#half = d.half;
    this.#piece = Math.max(1, Math.floor(PIECE_OUT * Math.min(sampleRate, MAX_RATE) / FEATURE_RATE) - 1);
    this.#hist = new Float32Array(wasm ? 2 * d.half + 8 : 0);
    this.#histLen = d.half - 1;
    this.#ipos = d.half - 1;
  }

  reset(): void {
    if (this.#jsResampler) this.#jsResampler = new StreamResampler(this.sampleRate);
    this.#hist.fill(0);
    this.#histLen = this.#half - 1;
    this.#ipos = this.#half - 1;
    this.#iphase = 0;
    this.#prev = 0;
    this.#mel.fill(0);
    this.#melLen = (WINDOW - HOP) / 2;
    this.frames = 0;
  }

  /** Whether this rate runs in WebAssembly end to end (else its resampler is JavaScript's). */
  get wasmResampler(): boolean {
    return this.#filter !== null || this.#passthrough;
  }

  push(samples: Int16Array | Float32Array, onFrame: (frame: MelFrame) => void): void {
    if (samples.length <= this.#piece) this.#pushPiece(samples, onFrame);
    else {
      for (let at = 0; at < samples.length; at += this.#piece) {
        this.#pushPiece(samples.subarray(at, at + this.#piece), onFrame);
      }
    }
  }

  #pushPiece(piece: Int16Array | Float32Array, onFrame: (frame: MelFrame) => void): void {
    const m = this.#m;
    let mem = m.f32;
    // 1. To 16 kHz, at outBuf.
    let n: number;
    if (this.#filter) {
      // (Copies without views: a call allocates nothing. The whole history array goes in: what lies past
      // its length is overwritten by the piece or never read.)
      const base = m.inBuf / 4;
      mem.set(this.#hist, base);
      mem.set(piece, base + this.#histLen);
      const len = this.#histLen + piece.length;
      mem.fill(0, base + len, base + len + 4);
      const avail = len - this.#half - this.#ipos;
      const maxOut = avail < 0 ? 0 : Math.floor((avail * this.#q - this.#iphase) / this.#p) + 1;
      const i32 = m.i32;
      i32[m.ctl / 4] = this.#ipos;
      i32[m.ctl / 4 + 1] = this.#iphase;
      n = m.resample(
        this.#filter.ptr,
        this.#filter.stride,
        this.#q,
        this.#p,
        this.#half,
        m.inBuf,
        len,
        m.outBuf,
        Math.min(maxOut, PIECE_OUT + 4),
        m.ctl,
      );
      let ipos = i32[m.ctl / 4];
      this.#iphase = i32[m.ctl / 4 + 1];
      // Keep the filter's history before the next output instant.
      const keepFrom = Math.max(0, ipos - this.#half + 1);
      this.#histLen = len - keepFrom;
      for (let i = 0; i < this.#histLen; i++) this.#hist[i] = mem[base + keepFrom + i];
      ipos -= keepFrom;
      this.#ipos = ipos;
    } else {
      const out = this.#jsResampler ? this.#jsResampler.process(piece) : piece;
      mem.set(out, m.outBuf / 4);
      n = out.length;
    }
    // 2. Pre-emphasis, after the samples not yet analysed; 3. the frames.
    mem.set(this.#mel, m.melBuf / 4);
    this.#prev = m.preemph(m.outBuf, n, m.melBuf + this.#melLen * 4, this.#prev);
    const len = this.#melLen + n;
    const count = m.analyse(m.melBuf, len, m.frameBuf);
    mem = m.f32;
    const used = count * HOP;
    this.#melLen = len - used;
    const mel = this.#mel, from = m.melBuf / 4 + used;
    for (let i = 0; i < this.#melLen; i++) mel[i] = mem[from + i];
    const out = this.#out, frames = m.frameBuf / 4;
    for (let i = 0; i < count * FRAME_FLOATS; i++) out[i] = mem[frames + i];
    // 4. The callbacks.
    const frame = this.#frame, bands = frame.bands;
    for (let f = 0; f < count; f++) {
      const o = f * FRAME_FLOATS;
      for (let b = 0; b < MEL_BANDS; b++) bands[b] = out[o + b];
      frame.energy = out[o + MEL_BANDS];
      this.frames++;
      onFrame(frame);
    }
  }
}

/**
 * The front end of a stream at `sampleRate`: WebAssembly (its resampler too where the rate's filter is
 * exact, every common rate up to 48 kHz), or the JavaScript reference with `useJs`.
 */
export function lipSyncFrontEnd(sampleRate: number, useJs = false): LipSyncFrontEnd {
  return useJs ? new JsFrontEnd(sampleRate) : new WasmFrontEnd(sampleRate);
}
