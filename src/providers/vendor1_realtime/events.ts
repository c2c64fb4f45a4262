/**
 * The vendor1 realtime engine's wire (docs/providers.md §vendor1_realtime): the GA event names the bridge
 * reads and sends, the beta names it also accepts, and how the session announces its audio formats.
 *
 * @module
 */
import type { WireAudioFormat } from "../audio/format.ts";

/** The only PCM rate of the vendor's `audio/pcm` format. */
export const PCM_RATE = 24000;

/** Server events the bridge reads (GA name first, then the beta interface's name). */
export const SERVER_EVENTS = {
  sessionCreated: ["session.created"],
  responseCreated: ["response.created"],
  audioDelta: ["response.output_audio.delta", "response.audio.delta"],
  agentTranscriptDelta: ["response.output_audio_transcript.delta", "response.audio_transcript.delta"],
  agentTranscriptDone: ["response.output_audio_transcript.done", "response.audio_transcript.done"],
  userTranscriptDelta: ["conversation.item.input_audio_transcription.delta"],
  userTranscriptDone: ["conversation.item.input_audio_transcription.completed"],
  responseDone: ["response.done"],
  speechStarted: ["input_audio_buffer.speech_started"],
  functionCallDone: ["response.function_call_arguments.done"],
  outputItemDone: ["response.output_item.done"],
  error: ["error"],
} as const;

/** Client events the bridge sends. */
export const CLIENT_EVENTS = {
  appendAudio: "input_audio_buffer.append",
  truncate: "conversation.item.truncate",
  cancelResponse: "response.cancel",
  createItem: "conversation.item.create",
  createResponse: "response.create",
} as const;

/** What `session.created` tells the bridge. */
export interface SessionFacts {
  input: WireAudioFormat;
  output: WireAudioFormat;
  /** Whether the engine cuts its response when the user starts speaking (server VAD's `interrupt_response`). */
  interruptResponse: boolean;
}

type Json = Record<string, unknown>;
const obj = (v: unknown): Json | undefined =>
  v !== null && typeof v === "object" && !Array.isArray(v) ? v as Json : undefined;

/** A GA format object (`{type:"audio/pcm",rate:24000}`, `audio/pcmu`, `audio/pcma`) or a beta name. */
function readFormat(ga: unknown, beta: unknown): WireAudioFormat | null {
  const f = obj(ga);
  if (f) {
    if (f.type === "audio/pcm") {
      return f.rate === undefined || f.rate === PCM_RATE
        ? { encoding: "pcm_s16le", sampleRate: PCM_RATE }
        : null;
    }
    if (f.type === "audio/pcmu") return { encoding: "mulaw", sampleRate: 8000 };
    if (f.type === "audio/pcma") return { encoding: "alaw", sampleRate: 8000 };
    return null;
  }
  if (beta === "pcm16") return { encoding: "pcm_s16le", sampleRate: PCM_RATE };
  if (beta === "g711_ulaw") return { encoding: "mulaw", sampleRate: 8000 };
  if (beta === "g711_alaw") return { encoding: "alaw", sampleRate: 8000 };
  // Not announced: the vendor's default.
  return ga === undefined && beta === undefined ? { encoding: "pcm_s16le", sampleRate: PCM_RATE } : null;
}

/** Reads the effective session of `session.created`; null when its audio formats are not ones the bridge speaks. */
export function readSession(session: unknown): SessionFacts | null {
  const s = obj(session) ?? {};
  const audio = obj(s.audio);
  const input = readFormat(obj(audio?.input)?.format, s.input_audio_format);
  const output = readFormat(obj(audio?.output)?.format, s.output_audio_format);
  if (!input || !output) return null;
  const turnDetection = obj(audio?.input)?.turn_detection ?? s.turn_detection;
  const interruptResponse = obj(turnDetection)?.interrupt_response !== false;
  return { input, output, interruptResponse };
}

/** Whether `type` is one of the names of an event. */
export function is(type: unknown, names: readonly string[]): boolean {
  return typeof type === "string" && names.includes(type);
}
