/**
 * Live against offline on an engine speaking in real time (part 4 of `bench:lipsync`): the same utterances
 * scored twice with audio alone (no transcript, no timings) —
 *
 * - **offline**: `lipSyncRecording`, what `deno task lipsync --audio` gives for the file (every 10 ms frame
 *   decided with the full look-ahead);
 * - **live**: a session of the media plane (its real playout, timeline and viseme engine) whose engine sends
 *   the utterance strictly in real time — each 20 ms chunk once it has been spoken, `response.started` with
 *   the first — watched by one video-free client (`video=0`) or, with `video: true`, by a video client; the
 *   track scored is the session's viseme messages (`subscribeVisemes`: what a video-free client is sent),
 *   placed on the timeline where the playout put the speech.
 *
 * The utterances are given (the bench passes Festival's held-out voices: scored, never tuned on).
 *
 * @module
 */
import { VISEME_INDEX } from "../../src/media/lipsync/visemes.ts";
import { MediaClientRecorder, until, withMedia } from "../../testing/media.ts";
import { StreamResampler } from "../../src/media/lipsync/dsp.ts";
import { frameLabels, type Utterance } from "./corpus.ts";
import { evaluate } from "./evaluate.ts";
import { add, ratios, score, type Tally, tally } from "./score.ts";

/** The engine's sample rate (the bench engines' and the vendors' usual 24 kHz). */
const RATE = 24_000;
const CHUNK = RATE / 50;

/** Scores of one side. */
export interface Scores {
  acc7: number;
  recall: number;
  precision: number;
}

/** What the real-time comparison measured. */
export interface RealtimeResult {
  utterances: number;
  speechS: number;
  /** The client watching: `video_free` (the track it is sent) or `video` (frames decided at their deadline). */
  client: "video_free" | "video";
  live: Scores;
  offline: Scores;
  /** Live − offline, per figure. */
  difference: Scores;
  /** 10 ms frames the live engine decided at a deadline with less than its full look-ahead. */
  deadlineFrames: number;
  /** The shift of the live track that fits the truth best (ms; +: the track is read later), and its accuracy. */
  bestShiftMs: number;
  acc7AtBestShift: number;
}

/** Shifts of the live track (ms) tried for the one that fits the truth best. */
const SHIFTS = [-40, -30, -20, -10, 0, 10, 20, 30, 40];
const r3 = (x: number) => Math.round(x * 1000) / 1000;
const scores = (t: Tally): Scores => {
  const r = ratios(t);
  return { acc7: r3(r.acc7), recall: r3(r.recall), precision: r3(r.precision) };
};

/** The utterance at the engine's rate (what the engine sends) as a new utterance, its timeline unchanged. */
function atEngineRate(u: Utterance): Utterance {
  if (u.sampleRate === RATE) return u;
  const samples = Int16Array.from(new StreamResampler(u.sampleRate, RATE).process(u.samples), Math.round);
  return { ...u, samples, sampleRate: RATE };
}

/** Runs the comparison over `utterances` (each spoken once, 700 ms apart). */
export async function benchRealtime(
  options: { utterances: readonly Utterance[]; video?: boolean },
): Promise<RealtimeResult> {
  const us = options.utterances.map(atEngineRate);
  const offline = tally();
  for (const u of us) add(offline, evaluate(u, "audio").tally);
  const live = tally();
  const shifted = new Map(SHIFTS.map((s) => [s, tally()]));
  let speechMs = 0;
  let deadlineFrames = 0;
  await withMedia(async ({ create, wsUrl, fake, speech, media }) => {
    const s = await create();
    const engine = fake.of(s.session_id);
    const m = media(s.session_id);
    const client = MediaClientRecorder.withToken(
      wsUrl(s.session_id, options.video ? "" : "?video=0"),
      s.client_token,
    );
    await client.until(() => client.texts.length > 0, 30_000, "the media hello");
    const shown: { t_ms: number; viseme: string }[] = [];
    const stop = m.subscribeVisemes((v) => shown.push({ t_ms: v.t_ms, viseme: v.viseme }));
    try {
      for (let i = 0; i < us.length; i++) {
        const u = us[i];
        const id = `r_${i}`;
        const placedFrom = speech.length;
        // Strictly real time: chunk k leaves once spoken (t0 + (k + 1)·20 ms), announced with the first.
        const t0 = performance.now();
        const chunks = Math.ceil(u.samples.length / CHUNK);
        for (let k = 0; k < chunks; k++) {
          const wait = t0 + (k + 1) * 20 - performance.now();
          if (wait > 0) await new Promise((r) => setTimeout(r, wait));
          if (k === 0) engine.events.onResponseStarted(id);
          engine.events.onAudio(u.samples.slice(k * CHUNK, (k + 1) * CHUNK), id);
        }
        engine.events.onResponseDone(id, "completed");
        await until(() => engine.played.some((p) => p.responseId === id), 60_000, `${id} played`);
        await new Promise((r) => setTimeout(r, 700));
        // Where the playout put the utterance: its first placement after the previous one's, then sample
        // by sample through the placements (a late chunk leaves a gap of silence between them).
        const placed = speech.slice(placedFrom);
        if (!placed.length) throw new Error(`${id}: nothing of it was placed`);
        const durMs = u.samples.length * 1000 / RATE;
        const truth = frameLabels(u.segments, durMs);
        const toTimeline = (ms: number): number => {
          let s = ms * 48; // utterance sample at 48 kHz
          for (const p of placed) {
            if (s < p.n) return (p.at + s) / 48;
            s -= p.n;
          }
          const last = placed.at(-1)!;
          return (last.at + last.n + s) / 48;
        };
        const track = (shift: number) => {
          const out = new Uint8Array(truth.length);
          let j = 0;
          for (let f = 0; f < out.length; f++) {
            const t = toTimeline(f * 10 + 5) + shift;
            while (j + 1 < shown.length && shown[j + 1].t_ms <= t) j++;
            out[f] = shown[j] && shown[j].t_ms <= t
              ? VISEME_INDEX[shown[j].viseme as keyof typeof VISEME_INDEX]
              : 0;
          }
          return out;
        };
        add(live, score(track(0), truth, u.segments));
        for (const shift of SHIFTS) add(shifted.get(shift)!, score(track(shift), truth, u.segments));
        speechMs += durMs;
      }
      deadlineFrames = m.stats().lipSync.responses.reduce((n, r) => n + r.deadline.frames, 0);
    } finally {
      stop();
      await client.close();
    }
  });
  const l = scores(live), o = scores(offline);
  let best = 0;
  for (const s of SHIFTS) if (ratios(shifted.get(s)!).acc7 > ratios(shifted.get(best)!).acc7 + 1e-9) best = s;
  return {
    utterances: us.length,
    speechS: Math.round(speechMs / 100) / 10,
    client: options.video ? "video" : "video_free",
    live: l,
    offline: o,
    difference: {
      acc7: r3(l.acc7 - o.acc7),
      recall: r3(l.recall - o.recall),
      precision: r3(l.precision - o.precision),
    },
    deadlineFrames,
    bestShiftMs: best,
    acc7AtBestShift: r3(ratios(shifted.get(best)!).acc7),
  };
}
