/**
 * Visemes on the session's media timeline. The viseme engine decides frames per response (10 ms of the
 * response's own audio each); the playout places the responses' samples on the timeline (with silence
 * between responses, after an underrun, after a barge-in). This joins the two: the target viseme and the
 * co-articulated weights at any timeline instant, and a stream of timeline-stamped viseme changes for
 * clients that draw the avatar themselves.
 *
 * @module
 */
import { coarticulate } from "./coarticulation.ts";
import type { VisemeFrame } from "./viseme_engine.ts";
import { type Viseme, VISEME_COUNT, VISEME_INDEX, VISEMES } from "./visemes.ts";

/** A viseme change on the timeline (for clients that draw the avatar). */
export interface TimelineViseme {
  /** Media-timeline time, ms (the session audio's presentation time). */
  t_ms: number;
  viseme: Viseme;
  /** Co-articulated weights at `t_ms` (15, `VISEMES` order), with what was known then. */
  weights: number[];
}

/** Samples of a response on the timeline. */
export interface Placement {
  responseId: string;
  /** First response sample (timeline rate) of the placement. */
  from: number;
  /** Timeline sample where it plays. */
  at: number;
  n: number;
}

interface ResponseFrames {
  frames: Uint8Array;
  /** Frames decided. */
  count: number;
}

const UNDECIDED = 255;
/** Placements older than this behind the newest are forgotten (ms). */
const KEEP_MS = 3000;
/**
 * The change stream waits at most this long (ms of written timeline) for a step's decision; past it the step
 * is passed over as held (a response whose frames never come must not stop the stream).
 */
const EMIT_WAIT_MS = 300;

/** Counters of a timeline. */
export interface TimelineStats {
  /** Frames shown with a decision (rendered or queried). */
  onTime: number;
  /** Queries for speech whose viseme was not decided yet, its audio there (the last decision was held). */
  late: number;
  /**
   * Queries for speech still on its way (a response's next chunk, its silence not due yet: see
   * {@link VisemeTimeline.queued}): nothing to decide from; the last decision was held.
   */
  awaited: number;
}

/** The visemes of one session's timeline. */
export class VisemeTimeline {
  readonly #rate: number;
  readonly #responses = new Map<string, ResponseFrames>();
  /** Responses whose frames were dropped (barge-in, or forgotten as old): their placed speech is silent. */
  readonly #gone = new Set<string>();
  #placements: Placement[] = [];
  /** Queued speech not written yet, where it will play (see {@link VisemeTimeline.queued}). */
  #queued: Placement | null = null;
  /** The queued placement is speech still on its way (no audio of it yet). */
  #awaited = false;
  /**
   * The response playing goes on past what is written and queued (its end not announced): the timeline
   * beyond is its speech to come, not silence.
   */
  #continues = false;
  readonly #listeners = new Set<(v: TimelineViseme) => void>();
  #lastEmitted = -1;
  /** Timeline sample up to which changes were emitted. */
  #emittedUntil = 0;
  #writtenUntil = 0;
  readonly stats: TimelineStats = { onTime: 0, late: 0, awaited: 0 };
  readonly #weights = new Float32Array(VISEME_COUNT);

  /** @param sampleRate the timeline's sample rate (48 kHz in the media plane) */
  constructor(sampleRate: number) {
    this.#rate = sampleRate;
  }

  /** A frame decided by the engine. */
  frame(f: VisemeFrame): void {
    let r = this.#responses.get(f.responseId);
    if (!r) {
      r = { frames: new Uint8Array(1024).fill(UNDECIDED), count: 0 };
      this.#responses.set(f.responseId, r);
      // Responses are few; keep the recent ones.
      if (this.#responses.size > 16) this.#forget(this.#responses.keys().next().value!);
    }
    if (f.frame >= r.frames.length) {
      const grown = new Uint8Array(Math.max(r.frames.length * 2, f.frame + 1)).fill(UNDECIDED);
      grown.set(r.frames);
      r.frames = grown;
    }
    r.frames[f.frame] = f.index;
    r.count = Math.max(r.count, f.frame + 1);
    if (this.#listeners.size) this.#emit();
  }

  /** `n` samples of a response, from its sample `from`, were placed on the timeline at sample `at`. */
  placed(responseId: string, from: number, at: number, n: number): void {
    if (n <= 0) return;
    const last = this.#placements.at(-1);
    if (last && last.responseId === responseId && last.from + last.n === from && last.at + last.n === at) {
      last.n += n;
    } else this.#placements.push({ responseId, from, at, n });
    const horizon = at - KEEP_MS * this.#rate / 1000;
    while (this.#placements.length > 1 && this.#placements[0].at + this.#placements[0].n < horizon) {
      this.#placements.shift();
    }
    if (this.#listeners.size) this.#emit();
  }

  /** The timeline is written (speech or silence) up to sample `s`: changes up to there can be emitted. */
  written(s: number): void {
    if (s <= this.#writtenUntil) return;
    this.#writtenUntil = s;
    if (this.#listeners.size) this.#emit();
  }

  /**
   * Silence written from sample `s` on was taken back (never sent; speech goes there instead). No change was
   * emitted for it (silence after silence changes nothing), so the change stream resumes from `s`.
   */
  rewind(s: number): void {
    if (s >= this.#writtenUntil) return;
    this.#writtenUntil = s;
    this.#emittedUntil = Math.min(this.#emittedUntil, s);
  }

  /** Barge-in: the response's frames are dropped (what was placed of it has played or is cut). */
  interrupt(responseId: string): void {
    this.#forget(responseId);
  }

  #forget(responseId: string): void {
    this.#responses.delete(responseId);
    this.#gone.add(responseId);
    if (this.#gone.size > 64) this.#gone.delete(this.#gone.values().next().value!);
  }

  /**
   * Speech queued for playout and not written yet, and where it will play: `n` samples of a response from
   * its sample `from`, at timeline sample `at` (the playout writes queued speech contiguously from its write
   * position); null when none. Replaced at each call. A frame is shown from it until its real placement
   * ({@link placed}) comes, so a mouth is drawn for speech that arrived just before its frame. `awaited`:
   * the speech has not arrived yet (a response still speaking, its next chunk on the way): a frame shown from
   * it holds the last mouth decided. `continues`: the response playing speaks on past what is written and
   * queued (an engine speaking in real time: its next chunks are on their way), so the timeline beyond is not
   * silence to anticipate (see {@link weightsAt}); true whenever `awaited` is.
   */
  queued(p: Placement | null, awaited = false, continues = awaited): void {
    this.#queued = p && p.n > 0 ? { ...p } : null;
    this.#awaited = this.#queued !== null && awaited;
    this.#continues = continues || this.#awaited;
  }

  /** The placement (written, else queued) covering timeline sample `s`. */
  #placementAt(s: number): Placement | null {
    for (let i = this.#placements.length - 1; i >= 0; i--) {
      const p = this.#placements[i];
      if (s < p.at) continue;
      if (s >= p.at + p.n) break;
      return p;
    }
    const q = this.#queued;
    return q && s >= q.at && s < q.at + q.n ? q : null;
  }

  /** The response and its frame (10 ms of its audio) placed at timeline time `ms`, or null (silence there). */
  responseFrameAt(ms: number): { responseId: string; frame: number } | null {
    const s = Math.floor(ms * this.#rate / 1000);
    const p = this.#placementAt(s);
    return p ? { responseId: p.responseId, frame: Math.floor((p.from + s - p.at) * 100 / this.#rate) } : null;
  }

  /** The target viseme at timeline time `ms`: -1 where nothing is known yet, `sil` where nobody speaks. */
  targetAt(ms: number): number {
    return this.#targetAtSample(Math.floor(ms * this.#rate / 1000));
  }

  /** {@link targetAt} at timeline sample `s`. */
  #targetAtSample(s: number): number {
    const p = this.#placementAt(s);
    if (!p) return VISEME_INDEX.sil;
    const r = this.#responses.get(p.responseId);
    // No frame of it decided yet: unknown (its speech is placed); dropped: silent.
    if (!r) return this.#gone.has(p.responseId) ? VISEME_INDEX.sil : -1;
    const frame = Math.floor((p.from + s - p.at) * 100 / this.#rate);
    const v = frame < r.frames.length ? r.frames[frame] : UNDECIDED;
    return v === UNDECIDED ? -1 : v;
  }

  /**
   * The co-articulated weights at timeline time `ms` (a shared buffer, valid until the next call). Where
   * the engine has not decided the instant yet, its last decision for that response is held. Ahead of the
   * instant, what is not known yet — speech placed but not decided, or the speech still to come of a
   * response that goes on past what is written and queued — is taken to continue the instant's mouth: a
   * frame rendered at a real-time engine's speech onset, with only its first 10–30 ms in, opens the mouth
   * as a frame with the whole look-ahead would (dropping the unknown left the silence before the onset half
   * of it, and counting the speech to come as silence closed it further: the onset's frame half open, read
   * as closed, one frame late).
   */
  weightsAt(ms: number): Float32Array {
    const own = this.targetAt(ms);
    let held = -1;
    if (own === -1) {
      const q = this.#queued;
      const s = Math.floor(ms * this.#rate / 1000);
      if (this.#awaited && q && s >= q.at && s < q.at + q.n && this.#placementAt(s) === q) {
        this.stats.awaited++;
      } else this.stats.late++;
      for (let back = 10; back <= 200 && held < 0; back += 10) held = this.targetAt(ms - back);
    } else this.stats.onTime++;
    const instant = own >= 0 ? own : held;
    const q = this.#queued;
    /** Timeline sample from which nothing is written or queued yet. */
    const known = Math.max(this.#writtenUntil, q ? q.at + q.n : 0);
    return coarticulate(ms, (t) => {
      if (t <= ms) {
        const v = this.targetAt(t);
        return v === -1 && held >= 0 ? held : v;
      }
      if (this.#continues && Math.floor(t * this.#rate / 1000) >= known) return instant;
      const v = this.targetAt(t);
      return v === -1 ? instant : v;
    }, this.#weights);
  }

  /** Whether speech is placed (or queued to play) at timeline time `ms`. */
  speakingAt(ms: number): boolean {
    const p = this.#placementAt(Math.floor(ms * this.#rate / 1000));
    return p !== null && this.#responses.has(p.responseId);
  }

  /** Listens to viseme changes stamped on the timeline; returns the unsubscribe function. */
  subscribe(listener: (v: TimelineViseme) => void): () => void {
    if (this.#listeners.size === 0) this.#emittedUntil = Math.max(this.#emittedUntil, this.#writtenUntil);
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /**
   * Where in (s − step, s] the target became `v` (timeline sample): the start of the response frame or of the
   * placement that brought it. The emitting steps start wherever a listener came; a response's frames start
   * wherever the playout placed it — stamped at the step, a response whose frames began 2 samples after the
   * steps had every change stamped 10 ms late.
   */
  #changedAt(s: number, step: number, v: number): number {
    // The target is `v` at `hi` and not at `lo`: bisect for the first sample where it is.
    let lo = Math.max(0, s - step), hi = s;
    if (this.#targetAtSample(lo) === v) return s; // (no change inside the step)
    while (hi - lo > 1) {
      const mid = (lo + hi) >> 1;
      if (this.#targetAtSample(mid) === v) hi = mid;
      else lo = mid;
    }
    return hi;
  }

  /** Emits the changes of every 10 ms step whose viseme is known, in timeline order. */
  #emit(): void {
    const end = this.#placements.at(-1);
    const step = this.#rate / 100;
    let s = this.#emittedUntil;
    const until = Math.max(end ? end.at + end.n : 0, this.#writtenUntil);
    for (; s + step <= until; s += step) {
      const ms = s * 1000 / this.#rate;
      const v = this.targetAt(ms);
      if (v === -1) {
        // Not decided yet: resume from here — unless the timeline is written far past it (passed over).
        if ((this.#writtenUntil - s) * 1000 / this.#rate < EMIT_WAIT_MS) break;
        continue;
      }
      if (v !== this.#lastEmitted) {
        this.#lastEmitted = v;
        // Stamped where it changed, not on this grid (its steps fall anywhere on a response's 10 ms frames).
        const at = this.#changedAt(s, step, v) * 1000 / this.#rate;
        const w = coarticulate(at, (t) => this.targetAt(t), new Float32Array(VISEME_COUNT));
        const event = {
          t_ms: Math.round(at),
          viseme: VISEMES[v],
          weights: [...w].map((x) => Math.round(x * 1000) / 1000),
        };
        for (const l of this.#listeners) l(event);
      }
    }
    this.#emittedUntil = s;
  }
}
