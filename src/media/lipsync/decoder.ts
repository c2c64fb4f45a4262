/**
 * Audio alone: turns the classifier's per-frame viseme scores into a viseme track with a fixed-lag
 * Viterbi decoder over the 15 visemes (a "viseme loop": changing viseme costs a penalty, so one-frame
 * flickers are removed), deciding each frame a fixed number of frames (the lag) after it was scored.
 *
 * @module
 */
import { VISEME_COUNT, VISEME_INDEX } from "./visemes.ts";

/** Frames the decoders wait before deciding a frame. */
export const DECODER_LAG_FRAMES = 2;

/** Settings of the acoustic scores (chosen on the tune voices, see docs/lipsync.md). */
export interface AcousticSettings {
  /** Weight of the log prior subtracted from the log posterior (0 = posteriors, 1 = likelihoods). */
  priorWeight: number;
  /** Extra score per viseme (e.g. favouring or disfavouring closures). */
  bias: Float32Array;
  /** Cost of changing viseme in the audio-alone decoder. */
  switchPenalty: number;
}

/** Default acoustic settings. */
export function defaultAcoustics(): AcousticSettings {
  const bias = new Float32Array(VISEME_COUNT);
  bias[VISEME_INDEX.PP] = 0.3;
  return { priorWeight: 0.3, bias, switchPenalty: 2.5 };
}

/** Scores of one frame: `κ·(log posterior − w·log prior) + bias`. */
export function acousticScores(
  logPost: Float32Array,
  logPrior: Float32Array,
  s: AcousticSettings,
  out: Float32Array,
): Float32Array {
  for (let v = 0; v < VISEME_COUNT; v++) out[v] = logPost[v] - s.priorWeight * logPrior[v] + s.bias[v];
  return out;
}

/** Fixed-lag Viterbi over the viseme loop. */
export class LoopDecoder {
  readonly #score = new Float64Array(VISEME_COUNT);
  readonly #next = new Float64Array(VISEME_COUNT);
  /** Back-pointers of the last lag + 1 frames. */
  readonly #back: Uint8Array[];
  /** Frames pushed. */
  #t = 0;
  #decided = 0;

  constructor(readonly settings: AcousticSettings, readonly lag = DECODER_LAG_FRAMES) {
    this.#back = Array.from({ length: lag + 1 }, () => new Uint8Array(VISEME_COUNT));
    this.reset();
  }

  /** Starts over (a new response). Frame numbering restarts at 0. */
  reset(): void {
    this.#score.fill(-1e9);
    this.#score[VISEME_INDEX.sil] = 0;
    this.#t = 0;
    this.#decided = 0;
  }

  /** Frames decided so far. */
  get decided(): number {
    return this.#decided;
  }

  /**
   * Adds the next frame's scores; returns the viseme decided for frame `t − lag` (or -1 while fewer
   * than lag + 1 frames were pushed).
   */
  push(scores: Float32Array): number {
    const pen = this.settings.switchPenalty;
    let best = 0;
    for (let v = 1; v < VISEME_COUNT; v++) if (this.#score[v] > this.#score[best]) best = v;
    const back = this.#back[this.#t % this.#back.length];
    const bestSwitch = this.#score[best] - pen;
    for (let v = 0; v < VISEME_COUNT; v++) {
      const stay = this.#score[v];
      if (stay >= bestSwitch) {
        this.#next[v] = stay + scores[v];
        back[v] = v;
      } else {
        this.#next[v] = bestSwitch + scores[v];
        back[v] = best;
      }
    }
    let top = 0;
    for (let v = 0; v < VISEME_COUNT; v++) {
      this.#score[v] = this.#next[v];
      if (this.#next[v] > this.#next[top]) top = v;
    }
    // Keep scores bounded.
    const norm = this.#score[top];
    for (let v = 0; v < VISEME_COUNT; v++) this.#score[v] -= norm;
    this.#t++;
    // Frame `t − 1 − lag` is decided now, unless a deadline decided it already (see {@link decideUntil}).
    if (this.#t - this.#decided <= this.lag) return -1;
    this.#decided++;
    return this.#trace(top, this.lag);
  }

  /**
   * The deadline: decides the frames before `until` still pending, now, from the frames pushed so far (less
   * than the lag after the last ones); returns them in order. The frames after them are decided as usual.
   */
  decideUntil(until: number): number[] {
    const n = Math.min(until, this.#t);
    if (n <= this.#decided) return [];
    let top = 0;
    for (let v = 0; v < VISEME_COUNT; v++) if (this.#score[v] > this.#score[top]) top = v;
    const out: number[] = [];
    for (let f = this.#decided; f < n; f++) out.push(this.#trace(top, this.#t - 1 - f));
    this.#decided = n;
    return out;
  }

  /** Decides the frames still pending (end of the stream); returns them in order. */
  flush(): number[] {
    let top = 0;
    for (let v = 0; v < VISEME_COUNT; v++) if (this.#score[v] > this.#score[top]) top = v;
    const pending = this.#t - this.#decided;
    const out: number[] = [];
    for (let k = pending - 1; k >= 0; k--) out.push(this.#trace(top, k));
    this.#decided = this.#t;
    return out;
  }

  /** The state `steps` frames before the last one on the best path ending in `state`. */
  #trace(state: number, steps: number): number {
    let s = state;
    for (let i = 0; i < steps; i++) s = this.#back[(this.#t - 1 - i) % this.#back.length][s];
    return s;
  }
}
