/**
 * The viseme engine: one per session (or per CLI run), streaming. It takes each response's audio as the
 * conversation engine sends it, plus whatever knowledge comes with it, and emits one viseme per 10 ms of
 * the response's audio, each decided at most {@link LOOKAHEAD_MS} of audio after the frame starts — or, in a
 * live session, at the frame's deadline (when the video frame showing it is rendered) with the look-ahead
 * audio that has arrived by then ({@link VisemeEngine.decideUntil}).
 *
 * Three sources, chosen per response by what arrives:
 * - `audio`: the streaming classifier and the audio-alone decoder (`classifier.ts`, `decoder.ts`);
 * - `text`: a transcript without timing (deltas), its phonemes (`g2p.ts`) aligned to the audio as it
 *   streams (`aligner.ts`);
 * - `words`: word timings (V0 `response.words`, or character alignment folded into words), the words'
 *   phonemes placed inside their spans, refined by the audio.
 * Words win over text; both fall back to the audio where the text has not arrived yet.
 *
 * Frames are numbered from each response's first sample: frame `k` is `[10k, 10k + 10)` ms of that
 * response's audio. Mapping them to the session's media timeline is {@link VisemeTimeline}'s job.
 *
 * @module
 */
import {
  type AlignerSettings,
  ChainAligner,
  type ChainWord,
  defaultAlignerSettings,
  unitsOf,
} from "./aligner.ts";
import {
  CLASSIFIER_LATENCY_MS,
  type ClassifierModel,
  classifierModel,
  FrameNormaliser,
  StreamingClassifier,
} from "./classifier.ts";
import { acousticScores, type AcousticSettings, defaultAcoustics, LoopDecoder } from "./decoder.ts";
import { defaultG2p, type G2p, guessLanguage } from "./g2p.ts";
import { type Viseme, VISEME_COUNT, VISEMES } from "./visemes.ts";

/** The live look-ahead bound: audio held back so the engine can look ahead, at most. */
export const LOOKAHEAD_MS = 80;
/** Audio is fed in chunks of this much (20 ms, two frames), from the start of each response. */
export const CHUNK_MS = 20;
/**
 * Frames both decoders wait before deciding a frame. A frame is decided with the first chunk that brings
 * the audio it needs ({@link DECISION_DELAY_MS}); chunks end on even frames, so the audio pushed by then
 * reaches at most `DECISION_DELAY_MS` rounded up to the chunk grid past the frame's start, which must
 * stay within {@link LOOKAHEAD_MS}.
 */
export const DECODER_LAG = Math.max(
  0,
  Math.floor((LOOKAHEAD_MS - CHUNK_MS + 10 - CLASSIFIER_LATENCY_MS) / 10),
);
/** Audio the engine needs after a frame's start to decide it (classifier context + decoder lag). */
export const DECISION_DELAY_MS = CLASSIFIER_LATENCY_MS + DECODER_LAG * 10;
if (DECISION_DELAY_MS + CHUNK_MS - 10 > LOOKAHEAD_MS) {
  throw new Error("lip sync look-ahead exceeds its bound");
}

/** Where a frame's viseme came from. */
export type LipSyncSource = "audio" | "text" | "words";

/** One decided frame. */
export interface VisemeFrame {
  responseId: string;
  /** Frame index in the response (10 ms each). */
  frame: number;
  viseme: Viseme;
  /** Index of `viseme` in `VISEMES`. */
  index: number;
  source: LipSyncSource;
}

/** A word with its span, in ms from the response's first sample. */
export interface WordTiming {
  word: string;
  start_ms: number;
  end_ms: number;
}

/** Character alignment of one audio chunk (ElevenLabs' `alignment`), times from the chunk's start. */
export interface CharAlignment {
  chars: readonly string[];
  charStartMs: readonly number[];
  charDurationMs: readonly number[];
}

/** Options of a {@link VisemeEngine}. */
export interface VisemeEngineOptions {
  /** Sample rate of the audio pushed (8–48 kHz). */
  sampleRate: number;
  /** Language of the speech (`en`, `de`, `fr`, …); default: guessed from the transcript, else `en`. */
  lang?: string;
  /** Text to phonemes; default libespeak-ng in process (null: audio alone for every response). */
  g2p?: G2p | null;
  /** Called for every decided frame, in order. */
  onFrame(frame: VisemeFrame): void;
  model?: ClassifierModel;
  acoustics?: AcousticSettings;
  aligner?: AlignerSettings;
  /**
   * Live sessions: decide frames only when {@link VisemeEngine.releaseUntil} says they are needed (their
   * audio reaches the timeline), so a transcript that arrives after its audio (engines send audio ahead
   * of playout) still shapes them. The look-ahead of each decision is the same; only the text known then
   * differs. Default false: decide as soon as the audio allows (the CLI, the bench).
   */
  deferred?: boolean;
}

/** Per-response counters. */
export interface ResponseLipSyncStats {
  responseId: string;
  frames: Record<LipSyncSource, number>;
  /**
   * Frames decided at their deadline ({@link VisemeEngine.decideUntil}: needed on screen before the
   * look-ahead audio had arrived), and the median look-ahead they had (ms of audio past the frame's start;
   * null when none was).
   */
  deadline: { frames: number; lookaheadMs: number | null };
  /** The source of most frames. */
  source: LipSyncSource;
  words: number;
  lang: string;
  interrupted: boolean;
}

interface ResponseState {
  id: string;
  classifier: StreamingClassifier;
  loop: LoopDecoder;
  aligner: ChainAligner | null;
  mode: "audio" | "text" | "words";
  /** Audio samples pushed. */
  samples: number;
  /** Frames fed to the decoders (the classifier may have scored more, waiting in `pending`). */
  processed: number;
  /** Scored frames not yet fed to the decoders (deferred mode) from index `pendingHead`, and how far they may be fed. */
  pending: Float32Array[];
  pendingHead: number;
  releaseTo: number;
  /** Next frame to emit. */
  next: number;
  /** Audio-alone decisions from frame `next` on. */
  loopQ: number[];
  /** First frame the aligner covers, and its decisions from frame `next` (or its start) on. */
  chainStart: number;
  chainQ: number[];
  /** Transcript text not yet turned into words (the last, possibly partial word). */
  pendingText: string;
  textFinal: boolean;
  /** A word of a character alignment not finished yet. */
  partial: { word: string; start: number; end: number };
  lang: string;
  ended: boolean;
  /** Frames decided at a deadline, by their look-ahead in 5 ms steps. */
  deadlineLookahead: Uint32Array;
  stats: ResponseLipSyncStats;
}

/** Scored frames that may wait for a release (30 s); beyond, the oldest are decided anyway. */
const MAX_PENDING_FRAMES = 3000;

const WORD_RE = /[\p{L}\p{N}'’]+(?:[-‐][\p{L}\p{N}'’]+)*/gu;

/** The streaming viseme engine of one session. */
export class VisemeEngine {
  readonly #o: VisemeEngineOptions;
  readonly #model: ClassifierModel;
  readonly #acoustics: AcousticSettings;
  readonly #alignerSettings: AlignerSettings;
  readonly #g2p: G2p | null;
  readonly #scores = new Float32Array(VISEME_COUNT);
  #r: ResponseState | null = null;
  #classifier: StreamingClassifier | null = null;
  #lang: string | null;
  /** Counters of the responses so far (the last 32). */
  readonly history: ResponseLipSyncStats[] = [];

  constructor(options: VisemeEngineOptions) {
    if (!(options.sampleRate >= 8000 && options.sampleRate <= 48000)) {
      throw new RangeError(`lip sync sample rate must be 8000-48000 Hz, not ${options.sampleRate}`);
    }
    this.#o = options;
    this.#model = options.model ?? classifierModel();
    this.#acoustics = options.acoustics ?? defaultAcoustics();
    this.#alignerSettings = options.aligner ?? defaultAlignerSettings();
    this.#g2p = options.g2p === undefined ? defaultG2p() : options.g2p;
    this.#lang = options.lang ?? null;
  }

  /** The response being processed, if any. */
  get responseId(): string | null {
    return this.#r?.id ?? null;
  }

  /** Whether text knowledge can be used (a G2P is available). */
  get hasG2p(): boolean {
    return this.#g2p !== null;
  }

  /**
   * The session's one classifier, started over for a response (a new one the first time): the responses
   * never overlap (one is finished, or cut, before the next starts), and a classifier per response was
   * middle-aged garbage for the old generation.
   */
  #freshClassifier(): StreamingClassifier {
    if (this.#classifier) this.#classifier.reset();
    else {
      this.#classifier = new StreamingClassifier(
        this.#o.sampleRate,
        this.#model,
        new FrameNormaliser(this.#model.mu0),
      );
    }
    return this.#classifier;
  }

  /** A response begins: the previous one, if still open, is finished first. */
  startResponse(responseId: string, options: { lang?: string } = {}): void {
    if (this.#r) this.endResponse();
    const lang = options.lang ?? this.#lang ?? "en";
    this.#r = {
      id: responseId,
      // Each response is normalised from the model's own starting point, as every training utterance was:
      // carried over a session, the running means drift to that session's speech (to one sound, when
      // responses start alike) and the first sounds of later responses were taken for pauses.
      classifier: this.#freshClassifier(),
      loop: new LoopDecoder(this.#acoustics, DECODER_LAG),
      aligner: null,
      mode: "audio",
      samples: 0,
      processed: 0,
      pending: [],
      pendingHead: 0,
      releaseTo: this.#o.deferred ? 0 : Infinity,
      next: 0,
      loopQ: [],
      chainStart: 0,
      chainQ: [],
      pendingText: "",
      textFinal: false,
      partial: { word: "", start: 0, end: 0 },
      lang,
      ended: false,
      deadlineLookahead: new Uint32Array(LOOKAHEAD_MS / 5 + 1),
      stats: {
        responseId,
        frames: { audio: 0, text: 0, words: 0 },
        deadline: { frames: 0, lookaheadMs: null },
        source: "audio",
        words: 0,
        lang,
        interrupted: false,
      },
    };
  }

  /** Audio of the current response (PCM16 mono at the engine's rate). */
  audio(pcm: Int16Array): void {
    const r = this.#r;
    if (!r || r.ended || pcm.length === 0) return;
    r.samples += pcm.length;
    r.classifier.push(pcm, (k, logPost) => this.#onScored(r, k, logPost));
  }

  /**
   * Transcript text of the current response without timing: a delta appended to what came before, or
   * (with `replace`) the whole text so far. `final` says no more text follows.
   */
  text(text: string, options: { final?: boolean; replace?: boolean } = {}): void {
    const r = this.#r;
    if (!r || r.ended || !this.#g2p || r.mode === "words") return;
    if (options.replace) {
      // Only what extends the text already taken is new.
      const taken = r.stats.words;
      const words = [...text.matchAll(WORD_RE)];
      if (words.length < taken) return;
      const from = taken > 0 ? words[taken - 1].index! + words[taken - 1][0].length : 0;
      r.pendingText = text.slice(from);
    } else r.pendingText += text;
    if (options.final) r.textFinal = true;
    this.#takeText(r);
  }

  /** Word timings of the current response (ms from its first sample), in order. */
  words(words: readonly WordTiming[]): void {
    const r = this.#r;
    if (!r || r.ended || !this.#g2p || words.length === 0) return;
    if (r.mode !== "words") {
      // Timing beats text: the chain starts over from here with the timed words.
      r.mode = "words";
      this.#newAligner(r);
      r.pendingText = "";
    }
    const chain: ChainWord[] = [];
    for (const w of words) {
      if (!(w.end_ms > w.start_ms) || typeof w.word !== "string") continue;
      const phonemes = this.#phonemes(w.word, r.lang);
      if (phonemes.length === 0) continue;
      chain.push({
        units: unitsOf(phonemes),
        span: { start: Math.floor(w.start_ms / 10), end: Math.ceil(w.end_ms / 10) },
        pauseAfter: /[.,;:!?…]\s*$/.test(w.word),
      });
    }
    r.stats.words += chain.length;
    r.aligner!.append(chain);
  }

  /**
   * Character alignment of an audio chunk (ElevenLabs' `alignment`: times from the chunk's start), for the
   * chunk starting `chunkStartMs` into the response (default: the audio pushed so far, i.e. the chunk
   * pushed next). Characters are gathered into words; a word cut at a chunk's end waits for the rest.
   */
  alignment(a: CharAlignment, chunkStartMs = this.responseMs): void {
    const r = this.#r;
    if (!r || r.ended) return;
    const words: WordTiming[] = [];
    const p = r.partial;
    for (let i = 0; i < a.chars.length; i++) {
      const c = a.chars[i] ?? "";
      const s = chunkStartMs + (Number(a.charStartMs[i]) || 0);
      const e = s + (Number(a.charDurationMs[i]) || 0);
      if (/^\s*$/.test(c)) {
        if (p.word) words.push({ word: p.word, start_ms: p.start, end_ms: p.end });
        p.word = "";
        continue;
      }
      if (!p.word) p.start = s;
      p.word += c;
      p.end = Math.max(p.end, e);
    }
    if (words.length) this.words(words);
  }

  /** Audio of the current response pushed so far, ms. */
  get responseMs(): number {
    return this.#r ? this.#r.samples * 1000 / this.#o.sampleRate : 0;
  }

  /** The engine sent all audio of the current response: the remaining frames are decided now. */
  endResponse(): void {
    const r = this.#r;
    if (!r) return;
    this.#r = null;
    if (r.ended) return;
    if (r.partial.word) {
      this.#r = r;
      this.words([{ word: r.partial.word, start_ms: r.partial.start, end_ms: r.partial.end }]);
      this.#r = null;
    }
    r.textFinal = true;
    this.#takeText(r);
    r.releaseTo = Infinity;
    this.#release(r);
    r.classifier.end((k, logPost) => this.#onScored(r, k, logPost));
    r.loopQ.push(...r.loop.flush());
    if (r.aligner) r.chainQ.push(...r.aligner.flush());
    this.#drain(r);
    r.ended = true;
    this.#finish(r);
  }

  /** Barge-in: the current response stops at once; nothing more is emitted for it. */
  interrupt(): void {
    const r = this.#r;
    if (!r) return;
    this.#r = null;
    r.ended = true;
    r.stats.interrupted = true;
    this.#finish(r);
  }

  #finish(r: ResponseState): void {
    const d = r.deadlineLookahead;
    const total = r.stats.deadline.frames;
    if (total > 0) {
      let seen = 0, b = 0;
      for (; b < d.length && (seen += d[b]) < total / 2; b++);
      r.stats.deadline.lookaheadMs = b * 5;
    }
    const f = r.stats.frames;
    r.stats.source = f.words >= f.text && f.words >= f.audio && f.words > 0
      ? "words"
      : f.text >= f.audio && f.text > 0
      ? "text"
      : "audio";
    this.history.push(r.stats);
    if (this.history.length > 32) this.history.shift();
  }

  #phonemes(word: string, lang: string) {
    try {
      return this.#g2p!.word(word, lang);
    } catch {
      return [];
    }
  }

  #takeText(r: ResponseState): void {
    if (!this.#g2p) return;
    const text = r.pendingText;
    // Complete words: those followed by something; the last one only once the text is final.
    const matches = [...text.matchAll(WORD_RE)];
    let take = matches.length;
    if (!r.textFinal && take > 0) {
      const last = matches[take - 1];
      if (last.index! + last[0].length === text.length) take--;
    }
    if (take === 0) return;
    if (!this.#lang && !this.#o.lang && r.stats.words === 0) {
      const guess = guessLanguage(text);
      if (guess) {
        r.lang = guess;
        r.stats.lang = guess;
      }
    }
    const chain: ChainWord[] = [];
    for (let i = 0; i < take; i++) {
      const m = matches[i];
      const after = text.slice(
        m.index! + m[0].length,
        i + 1 < matches.length ? matches[i + 1].index : undefined,
      );
      const phonemes = this.#phonemes(m[0], r.lang);
      r.stats.words++;
      if (phonemes.length === 0) continue;
      chain.push({ units: unitsOf(phonemes), span: null, pauseAfter: /[.,;:!?…]/.test(after) });
    }
    const last = matches[take - 1];
    r.pendingText = text.slice(last.index! + last[0].length);
    if (chain.length === 0) return;
    if (!r.aligner) {
      r.mode = "text";
      this.#newAligner(r);
    }
    r.aligner!.append(chain);
  }

  #newAligner(r: ResponseState): void {
    // Chain decisions start with the first frame not yet fed to the decoders; earlier ones are the audio's.
    r.aligner = new ChainAligner(this.#alignerSettings, r.processed, DECODER_LAG);
    r.chainStart = r.processed;
    r.chainQ = [];
  }

  #onScored(r: ResponseState, _k: number, logPost: Float32Array): void {
    if (r.pendingHead === r.pending.length && r.processed < r.releaseTo) this.#process(r, logPost);
    else {
      r.pending.push(logPost.slice());
      this.#release(r);
    }
  }

  /** Feeds pending frames to the decoders as far as released (or when too many wait). */
  #release(r: ResponseState): void {
    while (
      r.pendingHead < r.pending.length &&
      (r.processed < r.releaseTo || r.pending.length - r.pendingHead > MAX_PENDING_FRAMES)
    ) {
      this.#process(r, r.pending[r.pendingHead++]);
    }
    if (r.pendingHead === r.pending.length) {
      r.pending.length = 0;
      r.pendingHead = 0;
    } else if (r.pendingHead > 512) {
      r.pending.splice(0, r.pendingHead);
      r.pendingHead = 0;
    }
  }

  /**
   * Deferred mode: frames of the current response up to `frame` (exclusive) are needed soon (their audio
   * is being placed on the media timeline), so they are decided now with whatever text has arrived.
   */
  releaseUntil(responseId: string, frame: number): void {
    const r = this.#r;
    if (!r || r.id !== responseId || frame <= r.releaseTo) return;
    r.releaseTo = frame;
    this.#release(r);
  }

  /**
   * The deadline: frames of the current response up to `frame` (exclusive) must be shown now (their audio
   * is on the media timeline and the video frame that shows it is being rendered). Those not decided yet
   * are decided at once with the audio that has arrived — less look-ahead than {@link LOOKAHEAD_MS}, never
   * a wait: the classifier scores them with the context it has, the decoders decide them from the frames
   * pushed so far. An engine that sends its audio ahead of real time has sent the look-ahead already, and
   * nothing is decided early. Returns how many frames were.
   */
  decideUntil(responseId: string, frame: number): number {
    const r = this.#r;
    if (!r || r.id !== responseId || r.ended || r.next >= frame) return 0;
    this.releaseUntil(responseId, frame);
    const first = r.next;
    r.classifier.scoreUntil(frame, (k, logPost) => this.#onScored(r, k, logPost));
    if (r.next < frame) {
      r.loopQ.push(...r.loop.decideUntil(frame));
      if (r.aligner) r.chainQ.push(...r.aligner.decideUntil(frame));
      this.#drain(r);
    }
    const pushedMs = r.samples * 1000 / this.#o.sampleRate;
    for (let f = first; f < r.next; f++) {
      const ahead = Math.max(0, Math.min(LOOKAHEAD_MS, pushedMs - f * 10));
      r.deadlineLookahead[Math.round(ahead / 5)]++;
    }
    r.stats.deadline.frames += r.next - first;
    return r.next - first;
  }

  #process(r: ResponseState, logPost: Float32Array): void {
    const scores = acousticScores(logPost, this.#model.logPrior, this.#acoustics, this.#scores);
    r.processed++;
    const loopDecision = r.loop.push(scores);
    if (loopDecision >= 0) r.loopQ.push(loopDecision);
    if (r.aligner) {
      let best = scores[0];
      for (let v = 1; v < VISEME_COUNT; v++) if (scores[v] > best) best = scores[v];
      const d = r.aligner.push(scores, best);
      if (d !== null) r.chainQ.push(d);
    }
    this.#drain(r);
  }

  /** Emits every frame both decoders have decided, in order. */
  #drain(r: ResponseState): void {
    while (r.loopQ.length > 0) {
      const f = r.next;
      let d = -1;
      if (r.aligner && f >= r.chainStart) {
        if (r.chainQ.length === 0) return;
        d = r.chainQ.shift()!;
      }
      const loopV = r.loopQ.shift()!;
      r.next++;
      const fromChain = d >= 0;
      const index = fromChain ? d : loopV;
      const source: LipSyncSource = fromChain ? (r.mode === "words" ? "words" : "text") : "audio";
      r.stats.frames[source]++;
      this.#o.onFrame({ responseId: r.id, frame: f, viseme: VISEMES[index], index, source });
    }
  }
}
