/**
 * Runs lip sync methods over utterances with known timelines and scores them: the viseme engine with each
 * source (audio alone, transcript without timing, word timings) through the same streaming code a
 * session runs (`lipSyncRecording`), and the loudness method the service shipped before.
 *
 * @module
 */
import { lipSyncRecording, type RecordingInput } from "../../src/media/lipsync/offline.ts";
import { VISEME_INDEX } from "../../src/media/lipsync/visemes.ts";
import { frameLabels, type Utterance } from "./corpus.ts";
import { analyse, LipSync, LOUDNESS_VISEME } from "./loudness.ts";
import { add, score, type Tally, tally } from "./score.ts";

/** The methods compared. */
export type Method = "loudness" | "audio" | "text" | "words";

/** Scores one utterance with one method. */
export function evaluate(
  u: Utterance,
  method: Method,
  engine?: RecordingInput["engine"],
  lookaheadMs?: number,
): { tally: Tally; lookaheadMs: number; source: string } {
  const durMs = u.samples.length * 1000 / u.sampleRate;
  const truth = frameLabels(u.segments, durMs);
  if (method === "loudness") {
    const { frames, closed } = loudnessFrames(u.samples, u.sampleRate);
    return { tally: score(frames, truth, u.segments, closed), lookaheadMs: 0, source: "loudness" };
  }
  const res = lipSyncRecording({
    samples: u.samples,
    sampleRate: u.sampleRate,
    lang: u.lang,
    text: method === "text" ? u.text : undefined,
    words: method === "words" ? u.words : undefined,
    engine,
    lookaheadMs,
  });
  return { tally: score(res.frames, truth, u.segments), lookaheadMs: res.maxLookaheadMs, source: res.source };
}

/** Scores many utterances with one method (sums); `lookaheadMs` bounds the look-ahead (a deadline). */
export function evaluateAll(
  us: readonly Utterance[],
  method: Method,
  engine?: RecordingInput["engine"],
  lookaheadMs?: number,
): Tally {
  const t = tally();
  for (const u of us) add(t, evaluate(u, method, engine, lookaheadMs).tally);
  return t;
}

/** The loudness method at 25 fps (each 40 ms video frame's shape held for its four 10 ms frames). */
export function loudnessFrames(
  samples: Int16Array,
  rate: number,
): { frames: Uint8Array; closed: Uint8Array } {
  const n = Math.ceil(samples.length * 100 / rate);
  const frames = new Uint8Array(n), closed = new Uint8Array(n);
  const lips = new LipSync();
  const per = Math.round(rate * 0.04);
  for (let v = 0; v * 4 < n; v++) {
    const shape = lips.next(analyse(samples.subarray(v * per, (v + 1) * per), rate));
    for (let k = v * 4; k < Math.min(n, v * 4 + 4); k++) {
      frames[k] = VISEME_INDEX[LOUDNESS_VISEME[shape]];
      closed[k] = shape === "rest" ? 1 : 0;
    }
  }
  return { frames, closed };
}
