/**
 * Text with or without timing: a streaming forced alignment of the known phoneme sequence to the audio.
 *
 * The words of the response become a left-to-right chain of viseme units (each phoneme's visemes, an
 * optional pause between words) that grows as text arrives. A fixed-lag Viterbi search places the chain
 * on the classifier's per-frame scores, deciding each frame a fixed number of frames (the lag) after it
 * is scored. Each unit has a minimum duration and a geometric tail around its expected duration.
 *
 * - Transcript without timing: expected durations come from a speaking-rate prior; the audio decides.
 * - Word timings: each word's units must lie within its span (± a small tolerance), and their expected
 *   durations share the span in proportion to the phonemes' typical lengths.
 *
 * Between batches of text (and before the first) sits a free "gap" state that follows the audio-alone
 * decoder: when the audio runs ahead of the text, the mouth follows the audio until the text catches up,
 * and the chain may then skip a few units to rejoin the speech.
 *
 * @module
 */
import { DECODER_LAG_FRAMES } from "./decoder.ts";
import { VISEME_COUNT, VISEME_INDEX } from "./visemes.ts";

/** One word of the chain, with its phonemes' visemes and weights. */
export interface ChainWord {
  /** Visemes (indexes) of the word's units and their relative durations. */
  units: { viseme: number; weight: number }[];
  /** Span in frames (word timings), or null. */
  span: { start: number; end: number } | null;
  /** Whether punctuation follows the word (a pause is likely). */
  pauseAfter: boolean;
}

/** Settings of the aligner (chosen on the tune voices). */
export interface AlignerSettings {
  /** Expected frames per unit of phoneme weight without timing. */
  framesPerWeight: number;
  /** Score per frame a free gap state pays below the best viseme's. */
  gapPenalty: number;
  /** Cost of skipping a unit from a gap. */
  skipPenalty: number;
  /** Cost of a pause between words with no punctuation. */
  pausePenalty: number;
  /** Frames a timed word's units may stray outside its span. */
  spanTolerance: number;
  /** Minimum duration as a share of the expected one (timed words). */
  minShare: number;
  /**
   * Timed words: score per frame a unit pays outside its expected stretch of the word's span (its share
   * of the span, ± `scheduleSlack` frames), so the search keeps to the timing and the audio only moves
   * boundaries.
   */
  schedulePenalty: number;
  scheduleSlack: number;
}

/** Default aligner settings. */
export function defaultAlignerSettings(): AlignerSettings {
  return {
    framesPerWeight: 8,
    gapPenalty: 1.5,
    skipPenalty: 4,
    pausePenalty: 2,
    spanTolerance: 4,
    minShare: 0.4,
    schedulePenalty: 0.6,
    scheduleSlack: 2,
  };
}

const NEG = -1e9;
/** Units a gap may skip into. */
const MAX_SKIP = 6;
/** States beyond the last live one that may become live in one frame (gap entries jump ahead). */
const REACH = 96;

const enum Kind {
  Unit = 0,
  Gap = 1,
}

/** The result for one decided frame: the chain's viseme, or -1 where the audio-alone decision applies. */
export type ChainDecision = number;

/** The streaming aligner of one response. */
export class ChainAligner {
  readonly #s: AlignerSettings;
  readonly #lag: number;
  // Flattened states (growable).
  #kind: number[] = [];
  #viseme: number[] = [];
  /** Allowed frames [lo, hi] of each state (timed words); lo > hi means never. */
  #lo: number[] = [];
  #hi: number[] = [];
  /** Self-loop log-probability (NEG for a state without one). */
  #loop: number[] = [];
  /** Expected frames [from, to] of each state's unit (timed words), or ±∞. */
  #expFrom: number[] = [];
  #expTo: number[] = [];
  /** Predecessors and the log-probability of each transition. */
  #preds: number[][] = [];
  #costs: number[][] = [];
  #score = new Float64Array(0);
  #next = new Float64Array(0);
  /** Back-pointers of the last lag + 1 frames. */
  #back: Int32Array[] = [];
  /** Index of the trailing gap (always the last state). */
  #gap = -1;
  /** First state still alive (states before it can no longer be on a path). */
  #lo0 = 0;
  #t = 0;
  #decided = 0;
  /** Units pending: the last word's final state, for linking the next word. */
  #tails: { state: number; cost: number }[] = [];
  #words = 0;

  constructor(settings: AlignerSettings, startFrame = 0, lag = DECODER_LAG_FRAMES) {
    this.#s = settings;
    this.#lag = lag;
    this.#t = startFrame;
    this.#decided = startFrame;
    this.#back = Array.from({ length: lag + 1 }, () => new Int32Array(0));
    this.#gap = this.#addState(Kind.Gap, -1, 0, 1e9, 0);
    this.#ensure();
    this.#score[this.#gap] = 0;
    this.#tails = [];
  }

  /** Words appended so far. */
  get words(): number {
    return this.#words;
  }

  #addState(kind: Kind, viseme: number, lo: number, hi: number, loop: number): number {
    this.#kind.push(kind);
    this.#viseme.push(viseme);
    this.#lo.push(lo);
    this.#hi.push(hi);
    this.#loop.push(loop);
    this.#expFrom.push(-1e9);
    this.#expTo.push(1e9);
    this.#preds.push([]);
    this.#costs.push([]);
    return this.#kind.length - 1;
  }

  #ensure(): void {
    const n = this.#kind.length;
    if (this.#score.length >= n) return;
    const cap = Math.max(64, n * 2);
    const grow = (a: Float64Array, fill: number) => {
      const b = new Float64Array(cap).fill(fill);
      b.set(a);
      return b;
    };
    this.#score = grow(this.#score, NEG);
    this.#next = grow(this.#next, NEG);
    this.#back = this.#back.map((b) => {
      const c = new Int32Array(cap).fill(-1);
      c.set(b);
      return c;
    });
  }

  /**
   * Appends words. Their units join the chain after the words already there (or after the trailing gap,
   * from which the search may enter any of the first few units).
   */
  append(words: readonly ChainWord[]): void {
    const s = this.#s;
    const gap = this.#gap;
    // The trailing gap becomes an inner gap; a new trailing gap is added after the new words.
    const entries: { state: number; cost: number }[] = [];
    // Links into the first unit: from the previous word's end (no cost) and from the gap.
    let prevTails = [...this.#tails];
    let skipBudget = 0;
    // Timed words already over cannot be placed any more.
    words = words.filter((w) => w.units.length > 0 && (!w.span || w.span.end + s.spanTolerance >= this.#t));
    for (const w of words) {
      const total = w.units.reduce((a, u) => a + u.weight, 0) || 1;
      const spanFrames = w.span ? Math.max(1, w.span.end - w.span.start) : 0;
      let first = -1;
      let last = -1;
      let prev = -1;
      let acc = 0;
      for (const u of w.units) {
        const expFrom = w.span ? w.span.start + spanFrames * acc / total - s.scheduleSlack : -1e9;
        acc += u.weight;
        const expTo = w.span ? w.span.start + spanFrames * acc / total + s.scheduleSlack : 1e9;
        const exp = w.span
          ? Math.max(1, spanFrames * u.weight / total)
          : Math.max(1, u.weight * s.framesPerWeight);
        const min = w.span
          ? Math.max(1, Math.min(6, Math.floor(exp * s.minShare)))
          : (u.weight >= 0.9 ? 2 : 1);
        const tail = Math.max(1, exp - min + 1);
        const loop = Math.log(1 - 1 / tail);
        const exit = Math.log(1 / tail);
        const lo = w.span ? w.span.start - s.spanTolerance : -1e9;
        const hi = w.span ? w.span.end + s.spanTolerance : 1e9;
        // `min` chained states, the last with the self-loop.
        for (let k = 0; k < min; k++) {
          const st = this.#addState(Kind.Unit, u.viseme, lo, hi, k === min - 1 ? loop : NEG);
          this.#expFrom[st] = expFrom;
          this.#expTo[st] = expTo;
          if (prev >= 0) {
            this.#preds[st].push(prev);
            // Leaving a unit's last state pays its exit probability.
            this.#costs[st].push(
              this.#kind[prev] === Kind.Unit && this.#loop[prev] > NEG ? this.#exitOf(prev) : 0,
            );
          }
          if (first < 0) first = st;
          prev = st;
        }
        this.#exit.set(prev, exit);
      }
      last = prev;
      // Link the word's first state to the tails of the previous word (and its optional pause, which
      // may last until this word starts when it is timed).
      for (const t of prevTails) {
        if (w.span && this.#kind[t.state] === Kind.Unit && this.#viseme[t.state] === VISEME_INDEX.sil) {
          this.#hi[t.state] = w.span.start + s.spanTolerance;
          this.#expTo[t.state] = w.span.start + s.scheduleSlack;
        }
        this.#preds[first].push(t.state);
        this.#costs[first].push(t.cost + (this.#exit.get(t.state) ?? 0));
      }
      if (skipBudget < MAX_SKIP) entries.push({ state: first, cost: -s.skipPenalty * skipBudget });
      skipBudget += w.units.length;
      // An optional pause after the word.
      const pause = this.#addState(
        Kind.Unit,
        VISEME_INDEX.sil,
        w.span ? w.span.end - s.spanTolerance : -1e9,
        1e9,
        Math.log(1 - 1 / 10),
      );
      if (w.span) this.#expFrom[pause] = w.span.end - s.scheduleSlack;
      this.#preds[pause].push(last);
      this.#costs[pause].push((this.#exit.get(last) ?? 0) - (w.pauseAfter ? 0 : s.pausePenalty));
      this.#exit.set(pause, Math.log(1 / 10));
      prevTails = [{ state: last, cost: 0 }, { state: pause, cost: 0 }];
      this.#words++;
    }
    if (entries.length === 0) return;
    // The gap enters the new words. Before timed words it may last only until the first one starts.
    for (const e of entries) {
      this.#preds[e.state].push(gap);
      this.#costs[e.state].push(e.cost);
    }
    const firstSpan = words.find((w) => w.units.length > 0)?.span;
    if (firstSpan) this.#hi[gap] = Math.max(this.#t + 1, firstSpan.start + s.spanTolerance);
    // A new trailing gap after the new words (after timed words, from the end of the last one).
    const lastSpan = [...words].reverse().find((w) => w.units.length > 0)?.span;
    const newGap = this.#addState(Kind.Gap, -1, lastSpan ? lastSpan.end - s.spanTolerance : -1e9, 1e9, 0);
    for (const t of prevTails) {
      this.#preds[newGap].push(t.state);
      this.#costs[newGap].push(this.#exit.get(t.state) ?? 0);
    }
    this.#tails = prevTails;
    this.#gap = newGap;
    this.#ensure();
  }

  readonly #exit = new Map<number, number>();

  #exitOf(state: number): number {
    return this.#exit.get(state) ?? 0;
  }

  /**
   * Adds one frame's acoustic scores (per viseme) and the best of them; returns the decision for frame
   * `t − lag`: a viseme index, -1 for "follow the audio-alone decoder", or null while nothing is decided.
   */
  push(scores: Float32Array, bestScore: number): ChainDecision | null {
    const n = this.#kind.length;
    const t = this.#t;
    const back = this.#back[t % this.#back.length];
    const score = this.#score, next = this.#next;
    const gapEmit = bestScore - this.#s.gapPenalty;
    let top = -1;
    let topScore = NEG;
    // Only states reachable from a live one can become live: a chain moves one state per frame, a gap
    // jumps a few units ahead.
    const end = Math.min(n, this.#hiLive + 1 + REACH);
    let hiLive = this.#lo0;
    for (let st = this.#lo0; st < end; st++) {
      // Best predecessor (self-loop or chain links).
      let best = this.#loop[st] > NEG && score[st] > NEG / 2 ? score[st] + this.#loop[st] : NEG;
      let arg = best > NEG ? st : -1;
      const preds = this.#preds[st], costs = this.#costs[st];
      for (let i = 0; i < preds.length; i++) {
        const p = preds[i];
        if (p < this.#lo0) continue;
        const v = score[p] + costs[i];
        if (v > best) {
          best = v;
          arg = p;
        }
      }
      if (arg < 0 || best <= NEG / 2 || t < this.#lo[st] || t > this.#hi[st]) {
        next[st] = NEG;
        back[st] = -1;
        continue;
      }
      let emit = this.#kind[st] === Kind.Gap ? gapEmit : scores[this.#viseme[st]];
      if (t < this.#expFrom[st]) emit -= this.#s.schedulePenalty * (this.#expFrom[st] - t);
      else if (t > this.#expTo[st]) emit -= this.#s.schedulePenalty * (t - this.#expTo[st]);
      next[st] = best + emit;
      back[st] = arg;
      hiLive = st;
      if (next[st] > topScore) {
        topScore = next[st];
        top = st;
      }
    }
    if (top < 0) {
      // Every path died (timed words all in the past): restart from the trailing gap.
      score.fill(NEG, 0, n);
      score[this.#gap] = 0;
      back[this.#gap] = this.#gap;
      top = this.#gap;
      this.#hiLive = this.#gap;
      this.#lo0 = Math.min(this.#lo0, this.#gap);
    } else {
      for (let st = this.#lo0; st < end; st++) score[st] = next[st] > NEG / 2 ? next[st] - topScore : NEG;
      this.#hiLive = hiLive;
    }
    // States far behind the best can no longer matter.
    while (this.#lo0 < top - 80) {
      score[this.#lo0] = NEG;
      this.#lo0++;
    }
    this.#top = top;
    this.#t++;
    if (this.#t - this.#decided <= this.#lag) return null;
    this.#decided++;
    return this.#decision(this.#trace(top, this.#lag));
  }

  #top = 0;
  #hiLive = 0;

  /**
   * The deadline: decides the frames before `until` still pending, now, from the frames pushed so far (less
   * than the lag after the last ones); returns them in order. The frames after them are decided as usual.
   */
  decideUntil(until: number): ChainDecision[] {
    const n = Math.min(until, this.#t);
    const out: ChainDecision[] = [];
    for (let f = this.#decided; f < n; f++) out.push(this.#decision(this.#trace(this.#top, this.#t - 1 - f)));
    this.#decided = Math.max(this.#decided, n);
    return out;
  }

  /** Decides every frame still pending (end of the response), in order. */
  flush(): ChainDecision[] {
    const pending = this.#t - this.#decided;
    const out: ChainDecision[] = [];
    for (let k = pending - 1; k >= 0; k--) out.push(this.#decision(this.#trace(this.#top, k)));
    this.#decided = this.#t;
    return out;
  }

  #decision(state: number): ChainDecision {
    if (state < 0 || this.#kind[state] === Kind.Gap) return -1;
    return this.#viseme[state];
  }

  #trace(state: number, steps: number): number {
    let s = state;
    for (let i = 0; i < steps && s >= 0; i++) s = this.#back[(this.#t - 1 - i) % this.#back.length][s];
    return s;
  }
}

/** Turns a phoneme weight list into chain units, merging nothing (the viseme index per part). */
export function unitsOf(
  phonemes: readonly { parts: readonly { viseme: string; share: number }[]; weight: number }[],
): ChainWord["units"] {
  const out: ChainWord["units"] = [];
  for (const p of phonemes) {
    for (const part of p.parts) {
      const v = VISEME_INDEX[part.viseme as keyof typeof VISEME_INDEX];
      if (v === undefined || v < 0 || v >= VISEME_COUNT) continue;
      out.push({ viseme: v, weight: p.weight * part.share });
    }
  }
  return out;
}
