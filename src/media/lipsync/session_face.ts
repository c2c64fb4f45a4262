/**
 * The face of one live session: lip sync and the rest of the face, on the session's media timeline.
 *
 * - The engine's responses (audio, transcript, word timings, barge-in) go to the {@link VisemeEngine};
 *   its frames and the playout's placements meet in a {@link VisemeTimeline}.
 * - The user's microphone audio goes through an energy voice detector: the avatar looks attentive while
 *   the user speaks ("listening") and thoughtful from the user's last word until its own first sound
 *   ("thinking", at most {@link THINKING_MAX_MS}).
 * - {@link SessionFace.faceAt} gives the face of a video frame: co-articulated viseme weights, blinks,
 *   look, head motion ({@link FaceAnimator}). The frame is the deadline of the visemes it shows: what is
 *   not decided by then is decided with the look-ahead audio that has arrived.
 *
 * @module
 */
import { EnergyVad } from "../../speech/vad.ts";
import { FaceAnimator, type FaceMode, type FaceState } from "../motion.ts";
import {
  type CharAlignment,
  type LipSyncSource,
  type ResponseLipSyncStats,
  VisemeEngine,
  type WordTiming,
} from "./viseme_engine.ts";
import type { G2p } from "./g2p.ts";
import { type TimelineViseme, VisemeTimeline } from "./timeline.ts";

/** Frames decided beyond what is placed on the timeline (the co-articulation looks 50 ms ahead). */
const RELEASE_AHEAD_FRAMES = 8;

/** The longest a thinking look lasts without the agent speaking. */
export const THINKING_MAX_MS = 6000;

/** What a session's face is built from. */
export interface SessionFaceOptions {
  /** Rate of the engine's audio. */
  engineRate: number;
  /** Rate of the media timeline (48 kHz). */
  timelineRate: number;
  /** Rate of the user's microphone audio. */
  inputRate: number;
  seed: number;
  lang?: string;
  g2p?: G2p | null;
  /** Current time on the media timeline, ms (for the listening/thinking states). */
  now: () => number;
}

/** Counters of a session's lip sync. */
export interface SessionLipSyncStats {
  responses: ResponseLipSyncStats[];
  /** Video frames whose viseme was decided in time, and frames that had to hold the last one. */
  framesOnTime: number;
  framesLate: number;
  /** Frames that held the last mouth because their speech was still on its way (a real-time engine). */
  framesAwaited: number;
  /**
   * Time spent in the viseme engine's calls, ms (they are synchronous: CPU time unless the process was
   * preempted meanwhile), and the speech it processed, ms.
   */
  engineCpuMs: number;
  speechMs: number;
}

/** One session's face. */
export class SessionFace {
  readonly #o: SessionFaceOptions;
  readonly engine: VisemeEngine;
  readonly timeline: VisemeTimeline;
  readonly #animator: FaceAnimator;
  readonly #vad: EnergyVad;
  #userSpeaking = false;
  #thinkingSince: number | null = null;
  #cpuMs = 0;
  /** Responses cut by barge-in (their late audio or timing is ignored). */
  readonly #cut = new Set<string>();
  #speechSamples = 0;

  constructor(options: SessionFaceOptions) {
    this.#o = options;
    this.timeline = new VisemeTimeline(options.timelineRate);
    this.engine = new VisemeEngine({
      sampleRate: options.engineRate,
      lang: options.lang,
      g2p: options.g2p,
      deferred: true,
      onFrame: (f) => this.timeline.frame(f),
    });
    this.#animator = new FaceAnimator(options.seed);
    this.#vad = new EnergyVad({ sampleRate: options.inputRate, endSilenceMs: 500, maxTurnMs: 60_000 });
  }

  /**
   * Runs `fn`, counting the time it takes (the engine's calls are synchronous; the monotonic clock costs a
   * tenth of reading the process's CPU time, which is a system call, and this runs per audio chunk and per
   * frame of every session).
   */
  #timed(fn: () => void): void {
    const t0 = performance.now();
    try {
      fn();
    } finally {
      this.#cpuMs += performance.now() - t0;
    }
  }

  /** An agent response begins. */
  responseStarted(responseId: string): void {
    this.#timed(() => this.engine.startResponse(responseId));
  }

  /** Agent audio (engine rate). */
  audio(pcm: Int16Array, responseId: string): void {
    if (this.#cut.has(responseId)) return;
    this.#timed(() => {
      if (this.engine.responseId !== responseId) this.engine.startResponse(responseId);
      this.#speechSamples += pcm.length;
      this.engine.audio(pcm);
    });
  }

  /** The engine sent all audio of a response. */
  responseDone(responseId: string): void {
    if (this.engine.responseId === responseId) this.#timed(() => this.engine.endResponse());
  }

  /** Barge-in. */
  interrupt(responseId: string): void {
    if (this.engine.responseId === responseId) this.engine.interrupt();
    this.timeline.interrupt(responseId);
    this.#cut.add(responseId);
    if (this.#cut.size > 32) this.#cut.delete(this.#cut.values().next().value!);
  }

  /** Whether timing for `responseId` can be applied now (it is the response being processed, or none is). */
  #current(responseId: string): boolean {
    if (this.#cut.has(responseId)) return false;
    if (this.engine.responseId === null) this.engine.startResponse(responseId);
    return this.engine.responseId === responseId;
  }

  /** A transcript line: the agent's text (the whole text so far) feeds the current response's lip sync. */
  transcript(line: { role: "user" | "agent"; text: string; final: boolean }): void {
    if (line.role !== "agent" || this.engine.responseId === null) return;
    this.#timed(() => this.engine.text(line.text, { replace: true, final: line.final }));
  }

  /** Word timings of a response (ms from its first sample). */
  words(responseId: string, words: readonly WordTiming[]): void {
    this.#timed(() => {
      if (this.#current(responseId)) this.engine.words(words);
    });
  }

  /** Character alignment of the audio chunk of a response that comes next (times from its start). */
  alignment(responseId: string, a: CharAlignment): void {
    this.#timed(() => {
      if (this.#current(responseId)) this.engine.alignment(a);
    });
  }

  /** The user's microphone audio (PCM16LE at the input rate). */
  userAudio(bytes: Uint8Array): void {
    const pcm = new Int16Array(
      bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + (bytes.byteLength & ~1)),
    );
    for (const e of this.#vad.push(pcm)) {
      if (e.type === "speech_started") {
        this.#userSpeaking = true;
        this.#thinkingSince = null;
      } else {
        this.#userSpeaking = false;
        this.#thinkingSince = this.#o.now();
      }
    }
  }

  /**
   * Speech of a response was placed on the timeline (see {@link VisemeTimeline.placed}): its frames, and
   * those the co-articulation looks at just after them, are decided now.
   */
  placed(responseId: string, from: number, at: number, n: number): void {
    this.timeline.placed(responseId, from, at, n);
    const frame = Math.ceil((from + n) * 100 / this.#o.timelineRate) + RELEASE_AHEAD_FRAMES;
    this.#timed(() => this.engine.releaseUntil(responseId, frame));
  }

  /**
   * The face at timeline time `ms`, for the video frame being rendered now: that frame is the deadline of
   * the visemes it shows, so the speech placed at `ms` that the engine has not decided yet (its look-ahead
   * audio has not arrived: an engine speaking in real time) is decided now with the audio there is
   * ({@link VisemeEngine.decideUntil}). `decideUntilMs` (≤ `ms`) moves that deadline earlier on the timeline
   * when nobody sees the frame's mouth now (only video-free clients, who get the visemes as messages ahead of
   * the sound they play): the instants after it are decided later, with more of their look-ahead.
   */
  faceAt(ms: number, decideUntilMs = ms): FaceState {
    const due = this.timeline.responseFrameAt(decideUntilMs);
    if (due && due.responseId === this.engine.responseId) {
      this.#timed(() => this.engine.decideUntil(due.responseId, due.frame + 1));
    }
    const speaking = this.timeline.speakingAt(ms);
    if (speaking) this.#thinkingSince = null;
    let mode: FaceMode = "idle";
    if (speaking) mode = "speaking";
    else if (this.#userSpeaking) mode = "listening";
    else if (this.#thinkingSince !== null && this.#o.now() - this.#thinkingSince < THINKING_MAX_MS) {
      mode = "thinking";
    }
    return this.#animator.at(ms, { visemes: this.timeline.weightsAt(ms), mode });
  }

  /** Listens to the timeline's viseme changes (for clients that draw the avatar). */
  subscribe(listener: (v: TimelineViseme) => void): () => void {
    return this.timeline.subscribe(listener);
  }

  /** The source used by the last response, if any. */
  get lastSource(): LipSyncSource | null {
    return this.engine.history.at(-1)?.source ?? null;
  }

  stats(): SessionLipSyncStats {
    return {
      responses: [...this.engine.history],
      framesOnTime: this.timeline.stats.onTime,
      framesLate: this.timeline.stats.late,
      framesAwaited: this.timeline.stats.awaited,
      engineCpuMs: Math.round(this.#cpuMs * 10) / 10,
      speechMs: Math.round(this.#speechSamples * 1000 / this.#o.engineRate),
    };
  }
}
