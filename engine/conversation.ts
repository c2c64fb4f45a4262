/**
 * The reference engine's behaviour within one session: a spoken greeting, user turns found by the energy VAD,
 * a spoken answer (or an echo) per turn, barge-in, and `response.cancel` / `response.played` handling.
 *
 * Everything runs offline: the answer says how long the user spoke (synthesised with the injected {@link Tts})
 * and then plays the user's own words back, resampled to the output rate. There is no speech recognition, so
 * no user transcript is produced.
 *
 * With a demo tool (`--demo-tool <name>`), each answer first calls that tool of the session's client
 * (`tool_call`, protocol §4.2) and says what it answered (`tool_result`, §4.1), so a tool can be tried end to
 * end: engine → service → the page's `onToolCall` → back.
 *
 * @module
 */

import { concatPcm, framePcm, pcm16FromBytes, resampleLinear, samplesForMs } from "../src/speech/pcm.ts";
import { PacedSender } from "./playout.ts";
import {
  type BridgeMessage,
  type EngineMessage,
  MAX_FRAME_BYTES,
  MAX_WORDS_PER_MESSAGE,
  type ResponseStatus,
  type TimedPhoneme,
  type TimedWord,
} from "../src/speech/v0_protocol.ts";
import type { EngineSessionStats } from "./stats.ts";
import type { TimedSpeech, Tts } from "./tts.ts";
import { EnergyVad, type VadEvent, type VadOptions, type VadTurnEnded } from "../src/speech/vad.ts";

/** How the engine answers a user turn. */
export type ConversationMode = "answer" | "echo";

/** Where a conversation's output goes (the session's socket). Sends must not throw. */
export interface ConversationOutput {
  /** Sends one protocol message as a text frame. */
  sendJson(message: EngineMessage): void;
  /** Sends one binary audio frame. */
  sendAudio(frame: Uint8Array): void;
}

/** Options of {@link Conversation}. */
export interface ConversationOptions {
  /** `answer`: speak a sentence then play the user's words back; `echo`: play them back only. */
  mode: ConversationMode;
  /** Text of the greeting spoken when the session is ready, or null for none. */
  greeting: string | null;
  /** Speech synthesiser. */
  tts: Tts;
  /** Rate of the user's audio (from `session.start`), in Hz. */
  inputSampleRate: number;
  /** Rate of the engine's audio (declared in `session.ready`), in Hz. */
  outputSampleRate: number;
  /** Output channel. */
  output: ConversationOutput;
  /** Counters to update. */
  stats: EngineSessionStats;
  /** VAD tuning (the sample rate is the input rate). */
  vad?: Omit<VadOptions, "sampleRate">;
  /** How far ahead of real time audio may be sent, default 200 ms. */
  leadMs?: number;
  /** Duration of each audio frame sent, default 20 ms. */
  frameMs?: number;
  /** Turns with less speech than this are not answered, default 200 ms. */
  minTurnMs?: number;
  /** Silence between the spoken sentence and the playback in `answer` mode, default 300 ms. */
  gapMs?: number;
  /** Structured log sink. */
  log?: (event: string, fields?: Record<string, unknown>) => void;
  /** Name of a client tool each answer calls first (and whose result it says), or null for none. */
  demoTool?: string | null;
  /** How long the engine waits for a tool's result, default 15 s (the bridge answers within 10 s). */
  toolTimeoutMs?: number;
}

/** What a client tool answered (`tool_result`). */
export interface ToolOutcome {
  output: unknown;
  isError: boolean;
}

/**
 * The sentence the engine says about a tool's result: its output (text as it is, anything else as JSON),
 * shortened to 120 characters.
 *
 * @param name the tool's name
 * @param outcome what the client answered
 */
export function toolSentence(name: string, outcome: ToolOutcome): string {
  const raw = typeof outcome.output === "string" ? outcome.output : JSON.stringify(outcome.output ?? null);
  const text = raw.length > 120 ? `${raw.slice(0, 117)}...` : raw;
  return outcome.isError ? `Your ${name} tool failed: ${text}.` : `Your ${name} tool answered: ${text}.`;
}

/** A response's audio, with the timing of what it says when the synthesiser gives it. */
interface BuiltResponse {
  audio: Int16Array;
  words?: TimedWord[];
  phonemes?: TimedPhoneme[];
}

interface ResponseJob {
  id: string;
  /** Agent text for the transcript, if any. */
  text: string | null;
  /** Set once `response.started` was sent and audio is flowing. */
  sender: PacedSender | null;
  /** Set when the job was abandoned before `response.started`. */
  abandoned: boolean;
}

/**
 * Text of the spoken answer to a turn of `speechMs` milliseconds.
 *
 * @param speechMs duration of the user's speech
 */
export function answerText(speechMs: number): string {
  const seconds = (Math.round(speechMs / 100) / 10).toFixed(1);
  return `I heard you speak for ${seconds} seconds. Here is what you said.`;
}

/** One session's conversation logic; see the module documentation. */
export class Conversation {
  readonly #o: ConversationOptions;
  readonly #vad: EnergyVad;
  readonly #leadMs: number;
  readonly #frameMs: number;
  readonly #minTurnMs: number;
  readonly #gapMs: number;
  readonly #log: (event: string, fields?: Record<string, unknown>) => void;
  readonly #tasks = new Set<Promise<void>>();
  readonly #pendingTools = new Map<string, (outcome: ToolOutcome) => void>();
  #nextToolCall = 1;
  #active: ResponseJob | null = null;
  #nextResponse = 0;
  #nextTurn = 1;
  #closed = false;

  /**
   * Creates the conversation of a session that just became ready.
   *
   * @param options mode, greeting, TTS, audio rates, output channel and counters
   */
  constructor(options: ConversationOptions) {
    this.#o = options;
    this.#vad = new EnergyVad({ ...options.vad, sampleRate: options.inputSampleRate });
    this.#leadMs = options.leadMs ?? 200;
    this.#frameMs = options.frameMs ?? 20;
    this.#minTurnMs = options.minTurnMs ?? 200;
    this.#gapMs = options.gapMs ?? 300;
    this.#log = options.log ?? (() => {});
  }

  /** Id of the response currently being prepared or sent, or null. */
  get activeResponseId(): string | null {
    return this.#active?.id ?? null;
  }

  /** Whether a response's audio is currently being sent. */
  get responding(): boolean {
    return this.#active?.sender != null;
  }

  /** Begins the conversation: speaks the greeting, if any. Call once, right after `session.ready`. */
  start(): void {
    const greeting = this.#o.greeting?.trim();
    if (!greeting) return;
    this.#respond("greeting", greeting, async () => {
      const speech = await this.#speak(greeting);
      return { audio: speech.samples, words: speech.words, phonemes: speech.phonemes };
    });
  }

  /**
   * Consumes a binary frame of user audio (PCM16LE at the input rate).
   *
   * @param bytes the frame (an even number of bytes)
   */
  handleAudio(bytes: Uint8Array): void {
    if (this.#closed) return;
    for (const event of this.#vad.push(pcm16FromBytes(bytes))) this.#onVadEvent(event);
  }

  /**
   * Records a `response.played` acknowledgement.
   *
   * @param message the bridge message
   */
  handleResponsePlayed(message: BridgeMessage): void {
    const playedMs = typeof message.played_ms === "number" && message.played_ms >= 0 ? message.played_ms : 0;
    this.#o.stats.responses_played++;
    this.#o.stats.played_ms += playedMs;
    this.#log("response_played", {
      response_id: message.response_id,
      played_ms: playedMs,
      interrupted: message.interrupted === true,
    });
  }

  /**
   * Handles `response.cancel`: if it names the response being sent, its audio stops and `response.done`
   * `cancelled` follows; otherwise (already finished, unknown) it is ignored.
   *
   * @param message the bridge message
   */
  handleResponseCancel(message: BridgeMessage): void {
    const job = this.#active;
    if (!job || job.sender === null || message.response_id !== job.id) {
      this.#log("response_cancel_ignored", { response_id: message.response_id });
      return;
    }
    this.#stopActive("cancelled");
  }

  /**
   * Records a `tool_result`: the answer to a call this conversation made (others are ignored).
   *
   * @param message the bridge message
   */
  handleToolResult(message: BridgeMessage): void {
    const callId = typeof message.call_id === "string" ? message.call_id : "";
    const resolve = this.#pendingTools.get(callId);
    if (!resolve) {
      this.#log("tool_result_ignored", { call_id: callId.slice(0, 64) });
      return;
    }
    this.#pendingTools.delete(callId);
    resolve({ output: message.output ?? null, isError: message.is_error === true });
  }

  /** Calls a client tool and waits for its result (an error outcome after the timeout or the close). */
  #callTool(name: string, args: Record<string, unknown>): Promise<ToolOutcome> {
    const callId = `call_${this.#nextToolCall++}`;
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.#pendingTools.delete(callId);
        resolve({ output: "no answer", isError: true });
      }, this.#o.toolTimeoutMs ?? 15_000);
      this.#pendingTools.set(callId, (outcome) => {
        clearTimeout(timer);
        resolve(outcome);
      });
      this.#o.output.sendJson({ type: "tool_call", call_id: callId, name, arguments: args });
      this.#log("tool_call", { call_id: callId, name });
    });
  }

  /** Stops everything: no message is sent afterwards. Idempotent. */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    for (const resolve of this.#pendingTools.values()) resolve({ output: "closed", isError: true });
    this.#pendingTools.clear();
    const job = this.#active;
    this.#active = null;
    if (job) {
      job.abandoned = true;
      job.sender?.stop();
    }
  }

  /**
   * Resolves once the work started by this conversation (synthesis, sending) has settled. After
   * {@link close}, this bounds how long a synthesis still in flight keeps running.
   */
  async settled(): Promise<void> {
    while (this.#tasks.size > 0) await Promise.allSettled([...this.#tasks]);
  }

  #onVadEvent(event: VadEvent): void {
    if (event.type === "speech_started") {
      this.#o.output.sendJson({ type: "input.speech_started" });
      this.#log("speech_started", { at_ms: Math.round(event.atMs) });
      const job = this.#active;
      if (job?.sender) {
        this.#stopActive("interrupted");
      } else if (job) {
        // Still synthesising: the user spoke again, so the pending answer is dropped unheard.
        job.abandoned = true;
        this.#active = null;
        this.#log("response_abandoned", { response_id: job.id });
      }
      return;
    }
    this.#onTurn(event);
  }

  #onTurn(turn: VadTurnEnded): void {
    const turnId = `u_${this.#nextTurn++}`;
    const speechMs = Math.round(turn.speechMs);
    this.#o.stats.user_turns++;
    this.#o.stats.user_speech_ms += speechMs;
    this.#log("turn_ended", { turn_id: turnId, speech_ms: speechMs, reason: turn.reason });
    if (speechMs < this.#minTurnMs) {
      this.#log("turn_ignored", { turn_id: turnId, speech_ms: speechMs });
      return;
    }
    if (this.#active?.sender) this.#stopActive("interrupted");
    const { inputSampleRate, outputSampleRate, mode } = this.#o;
    const playback = () => resampleLinear(turn.samples, inputSampleRate, outputSampleRate);
    if (mode === "echo") {
      this.#respond(turnId, null, () => Promise.resolve({ audio: playback() }));
      return;
    }
    const tool = this.#o.demoTool;
    this.#respond(turnId, answerText(speechMs), async (job) => {
      if (tool) {
        const outcome = await this.#callTool(tool, { turn_id: turnId, speech_ms: speechMs });
        job.text = `${answerText(speechMs)} ${toolSentence(tool, outcome)}`;
      }
      const spoken = await this.#speak(job.text!);
      return {
        audio: concatPcm([
          spoken.samples,
          new Int16Array(samplesForMs(this.#gapMs, outputSampleRate)),
          playback(),
        ]),
        words: spoken.words,
        phonemes: spoken.phonemes,
      };
    });
  }

  /** Synthesises `text`, with word and phoneme timings when the synthesiser gives them. */
  async #speak(text: string): Promise<TimedSpeech> {
    const { tts, outputSampleRate } = this.#o;
    if (tts.synthesizeTimed) return await tts.synthesizeTimed(text, outputSampleRate);
    return { samples: await tts.synthesize(text, outputSampleRate), words: [], phonemes: [] };
  }

  /**
   * Sends the response's word timings (and phoneme times) in `response.words` messages, each within the
   * protocol's frame and word limits, before its audio.
   */
  #sendWords(responseId: string, words: TimedWord[], phonemes: TimedPhoneme[]): void {
    const round = <T extends { start_ms: number; end_ms: number }>(x: T): T => ({
      ...x,
      start_ms: Math.round(x.start_ms),
      end_ms: Math.round(x.end_ms),
    });
    let i = 0;
    while (i < words.length) {
      let n = Math.min(MAX_WORDS_PER_MESSAGE, words.length - i);
      for (;;) {
        const chunk = words.slice(i, i + n).map(round);
        const from = i === 0 ? -Infinity : chunk[0].start_ms;
        const to = i + n >= words.length ? Infinity : words[i + n].start_ms;
        const ph = phonemes.filter((p) => p.start_ms >= from && p.start_ms < to).map(round);
        const message: EngineMessage = {
          type: "response.words",
          response_id: responseId,
          words: chunk,
          phonemes: ph,
        };
        const json = JSON.stringify(message);
        if (json.length * 3 <= MAX_FRAME_BYTES - 1024 || n === 1) {
          this.#o.output.sendJson(message);
          break;
        }
        n = Math.max(1, n >> 1);
      }
      i += n;
    }
  }

  /** Prepares audio, then sends `response.started`, the paced frames, the transcript and `response.done`. */
  #respond(reason: string, text: string | null, build: (job: ResponseJob) => Promise<BuiltResponse>): void {
    if (this.#closed) return;
    const job: ResponseJob = { id: `r_${this.#nextResponse++}`, text, sender: null, abandoned: false };
    this.#active = job;
    const task = this.#run(job, reason, build).catch((err) => {
      this.#log("response_error", { response_id: job.id, error: String(err) });
    });
    this.#tasks.add(task);
    task.finally(() => this.#tasks.delete(task));
  }

  async #run(
    job: ResponseJob,
    reason: string,
    build: (job: ResponseJob) => Promise<BuiltResponse>,
  ): Promise<void> {
    let built: BuiltResponse;
    try {
      built = await build(job);
    } catch (err) {
      if (this.#active === job) this.#active = null;
      if (job.abandoned || this.#closed) return;
      this.#log("synthesis_failed", { response_id: job.id, error: (err as Error).message });
      this.#o.output.sendJson({
        type: "error",
        code: "engine_failure",
        message: "speech synthesis failed; this response is skipped",
        fatal: false,
      });
      return;
    }
    if (job.abandoned || this.#closed || this.#active !== job) return;

    const { output, stats } = this.#o;
    const audio = built.audio;
    const frames = framePcm(audio, samplesForMs(this.#frameMs, this.#o.outputSampleRate));
    output.sendJson({ type: "response.started", response_id: job.id });
    if (built.words?.length) this.#sendWords(job.id, built.words, built.phonemes ?? []);
    stats.responses_started++;
    this.#log("response_started", {
      response_id: job.id,
      reason,
      audio_ms: Math.round(audio.length * 1000 / this.#o.outputSampleRate),
    });
    job.sender = new PacedSender({
      frames,
      frameMs: this.#frameMs,
      leadMs: this.#leadMs,
      send: (frame) => {
        output.sendAudio(frame);
        stats.audio_bytes_sent += frame.byteLength;
      },
    });
    const result = await job.sender.run();
    if (result !== "completed" || this.#active !== job || this.#closed) return;
    this.#active = null;
    if (job.text) {
      output.sendJson({ type: "transcript", role: "agent", turn_id: job.id, text: job.text, final: true });
    }
    output.sendJson({ type: "response.done", response_id: job.id, status: "completed" });
    stats.responses_completed++;
    this.#log("response_done", { response_id: job.id, status: "completed" });
  }

  /** Stops the response being sent, then reports it (`input.interrupt` first for a barge-in). */
  #stopActive(status: Extract<ResponseStatus, "interrupted" | "cancelled">): void {
    const job = this.#active;
    if (!job?.sender) return;
    this.#active = null;
    job.sender.stop();
    if (status === "interrupted") {
      this.#o.output.sendJson({ type: "input.interrupt", response_id: job.id });
      this.#o.stats.interrupts++;
    }
    this.#o.output.sendJson({ type: "response.done", response_id: job.id, status });
    this.#log("response_done", { response_id: job.id, status, sent_frames: job.sender.sentFrames });
  }
}
