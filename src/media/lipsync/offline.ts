/**
 * Lip sync of a whole recording through the live streaming engine, exactly as a session runs it: the
 * audio is fed in 20 ms chunks, timed words are handed over no later than their audio (just before the
 * chunk where each word starts), a transcript is handed over before the audio, and frames are decided
 * with the live look-ahead of an engine that sends ahead of real time: the full look-ahead, at most
 * {@link LOOKAHEAD_MS} (what the vendors and the reference engine get in a session). With `lookaheadMs`, a
 * deadline bounds it, as a session's does for an engine whose audio arrives later. Used by
 * `deno task lipsync`, the bench and the tests.
 *
 * @module
 */
import {
  type LipSyncSource,
  LOOKAHEAD_MS,
  VisemeEngine,
  type VisemeEngineOptions,
  type WordTiming,
} from "./viseme_engine.ts";
import type { G2p } from "./g2p.ts";
import { type Viseme, VISEMES } from "./visemes.ts";

/** One stretch of the output: a viseme from `start_ms` to `end_ms`. */
export interface VisemeSpan {
  start_ms: number;
  end_ms: number;
  viseme: Viseme;
}

/** Input of {@link lipSyncRecording}. */
export interface RecordingInput {
  samples: Int16Array;
  sampleRate: number;
  /** Transcript without timing (handed over in one piece before the audio, or in `textDeltas`). */
  text?: string;
  /** The transcript in pieces, each handed over at a time (ms of audio pushed before it). */
  textDeltas?: { atMs: number; text: string }[];
  /** Word timings (ms from the start). */
  words?: readonly WordTiming[];
  /** Language (`en`, `de`, `fr`, …). */
  lang?: string;
  g2p?: G2p | null;
  /** Engine settings (the bench tries others). */
  engine?: Partial<Pick<VisemeEngineOptions, "acoustics" | "aligner" | "model">>;
  /** Chunk length, ms (default 20). */
  chunkMs?: number;
  /**
   * The deadline a live session applies, as a look-ahead bound (ms, a multiple of 10): each frame is
   * decided at the latest once the audio up to this far past its start has been pushed (the chunks are fed
   * in 10 ms pieces so that it can be), with the look-ahead there is then. A frame is never decided before
   * some of its own audio is there: 0 acts as 10 (the frame's own 10 ms), and a response's first frame
   * waits for the first analysed frame (about 20 ms). Default: none — each frame is
   * decided as soon as the engine has its full look-ahead (at most {@link LOOKAHEAD_MS}), what an engine
   * that sends ahead of real time gets in a session.
   */
  lookaheadMs?: number;
}

/** What {@link lipSyncRecording} found. */
export interface RecordingResult {
  /** One viseme index per 10 ms frame, covering the recording. */
  frames: Uint8Array;
  /** Contiguous spans covering the whole recording. */
  spans: VisemeSpan[];
  /** The source used for most frames. */
  source: LipSyncSource;
  /**
   * The most audio (ms past a frame's start) that had been pushed when any frame was decided: the
   * look-ahead actually used.
   */
  maxLookaheadMs: number;
}

/** Runs the streaming engine over a recording. */
export function lipSyncRecording(input: RecordingInput): RecordingResult {
  const { samples, sampleRate } = input;
  const bound = input.lookaheadMs;
  if (bound !== undefined && !(Number.isInteger(bound / 10) && bound >= 0 && bound <= LOOKAHEAD_MS)) {
    throw new RangeError(`lookaheadMs must be a multiple of 10 within 0-${LOOKAHEAD_MS}, not ${bound}`);
  }
  const durationMs = samples.length * 1000 / sampleRate;
  const nFrames = Math.max(1, Math.ceil(durationMs / 10));
  const frames = new Uint8Array(nFrames);
  let pushedMs = 0;
  let maxLookahead = 0;
  let ended = false;
  const engine = new VisemeEngine({
    sampleRate,
    lang: input.lang,
    g2p: input.g2p,
    ...input.engine,
    onFrame: (f) => {
      if (!ended) maxLookahead = Math.max(maxLookahead, pushedMs - f.frame * 10);
      if (f.frame < nFrames) frames[f.frame] = f.index;
    },
  });
  engine.startResponse("recording", { lang: input.lang });
  if (input.text) engine.text(input.text, { final: true });
  const words = [...(input.words ?? [])].sort((a, b) => a.start_ms - b.start_ms);
  const deltas = [...(input.textDeltas ?? [])].sort((a, b) => a.atMs - b.atMs);
  let wi = 0, di = 0;
  // Chunks end exactly on the 20 ms grid (rounded down to a sample), whatever the rate: 441 samples at
  // 22.05 kHz, 220 or 221 at 11.025 kHz.
  const chunkMs = input.chunkMs ?? 20;
  for (let k = 0, at = 0; at < samples.length; k++) {
    const next = Math.max(at + 1, Math.floor((k + 1) * chunkMs * sampleRate / 1000));
    const n = Math.min(next, samples.length) - at;
    const startMs = at * 1000 / sampleRate, endMs = (at + n) * 1000 / sampleRate;
    while (di < deltas.length && deltas[di].atMs <= startMs) {
      engine.text(deltas[di].text, { final: di === deltas.length - 1 });
      di++;
    }
    const due: WordTiming[] = [];
    while (wi < words.length && words[wi].start_ms < endMs) due.push(words[wi++]);
    if (due.length) engine.words(due);
    if (bound === undefined) {
      pushedMs = endMs;
      engine.audio(samples.subarray(at, at + n));
    } else {
      // 10 ms pieces ending on the 10 ms grid; after each, the frames whose deadline has come are decided.
      for (let p = at; p < at + n;) {
        const gridEnd = Math.floor((Math.floor(p * 100 / sampleRate) + 1) * sampleRate / 100);
        const q = Math.min(at + n, Math.max(p + 1, gridEnd));
        pushedMs = q * 1000 / sampleRate;
        engine.audio(samples.subarray(p, q));
        // Pushed up to the 10 ms grid line `g` (to the sample): frames up to `g − bound / 10` are due.
        const g = Math.round(q * 100 / sampleRate);
        engine.decideUntil("recording", g - bound / 10 + 1);
        p = q;
      }
    }
    at += n;
  }
  while (di < deltas.length) engine.text(deltas[di].text, { final: ++di === deltas.length });
  if (wi < words.length) engine.words(words.slice(wi));
  ended = true;
  engine.endResponse();
  const source = engine.history.at(-1)?.source ?? "audio";
  return { frames, spans: toSpans(frames, durationMs), source, maxLookaheadMs: maxLookahead };
}

/** Frames → contiguous spans covering `[0, durationMs]` (the last span ends at the recording's end). */
export function toSpans(frames: Uint8Array, durationMs: number): VisemeSpan[] {
  const spans: VisemeSpan[] = [];
  const end = Math.round(durationMs);
  for (let f = 0; f < frames.length && f * 10 < end; f++) {
    const v = VISEMES[frames[f]];
    const last = spans.at(-1);
    if (last && last.viseme === v) last.end_ms = Math.min(end, (f + 1) * 10);
    else spans.push({ start_ms: f * 10, end_ms: Math.min(end, (f + 1) * 10), viseme: v });
  }
  if (spans.length === 0) spans.push({ start_ms: 0, end_ms: Math.max(end, 0), viseme: "sil" });
  spans[spans.length - 1].end_ms = end;
  return spans;
}
