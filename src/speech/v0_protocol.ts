/**
 * The external conversation engine protocol V0 (docs/engine-protocol-v0.md): its constants and the
 * message shapes of both directions, shared by the reference engine and the service's bridge
 * (`src/providers/external_engine/bridge.ts`), plus the engine side's parsing and validation.
 *
 * On the shared speech floor (`src/speech/`, floor 0): imported by the service and by the reference engine
 * (`engine/`), which imports nothing else of `src/` (docs/architecture.md, "Floors").
 *
 * @module
 */

/** The WebSocket subprotocol the bridge offers and the engine selects. */
export const SUBPROTOCOL = "avatar-engine.v0";

/** Protocol version carried by `session.start`. */
export const PROTOCOL_VERSION = "v0";

/** Largest text or binary frame allowed by the protocol, in bytes (64 KiB). */
export const MAX_FRAME_BYTES = 64 * 1024;

/** Lowest PCM sample rate allowed on the wire, in Hz. */
export const MIN_SAMPLE_RATE = 8000;
/** Highest PCM sample rate allowed on the wire, in Hz. */
export const MAX_SAMPLE_RATE = 48000;

/** The only audio encoding of V0: PCM16LE mono. */
export const PCM_ENCODING = "pcm_s16le";

/** Default rate of the user's audio (`user_sample_rate`), in Hz. */
export const DEFAULT_INPUT_SAMPLE_RATE = 24000;

/** Rate the bridge asks engines to speak at (`preferred_sample_rate`), in Hz. */
export const PREFERRED_OUTPUT_SAMPLE_RATE = 24000;

/** Keepalive (§5): either side pings this often... */
export const PING_INTERVAL_MS = 15_000;
/** ...and considers its peer dead after this long without a frame. */
export const PEER_DEAD_AFTER_MS = 30_000;

/** The engine closes with 4002 when `session.start` has not arrived within this (§2). */
export const SESSION_START_TIMEOUT_MS = 10_000;

/** WebSocket close codes used by the protocol (§7). */
export const CloseCode = {
  normal: 1000,
  goingAway: 1001,
  policyViolation: 1008,
  internalError: 1011,
  tryAgainLater: 1013,
  unauthorized: 4001,
  badHandshake: 4002,
  unsupported: 4003,
  keepaliveTimeout: 4008,
  rateLimited: 4029,
} as const;

/** Error codes of `error` messages (§7). */
export type ErrorCode =
  | "invalid_message"
  | "unsupported_protocol"
  | "bad_audio_format"
  | "unauthorized"
  | "rate_limited"
  | "engine_failure"
  | "timeout";

/** Final status of a response (`response.done`). */
export type ResponseStatus = "completed" | "interrupted" | "cancelled" | "failed";

/** `audio.output` of `session.ready`. */
export interface OutputAudioFormat {
  encoding: typeof PCM_ENCODING;
  sample_rate: number;
  channels: 1;
}

/** A word of `response.words`: its span in ms from the response's first audio sample. */
export interface TimedWord {
  word: string;
  start_ms: number;
  end_ms: number;
}

/** A phoneme of `response.words` (informational): IPA, its span in ms from the response's first sample. */
export interface TimedPhoneme {
  phoneme: string;
  start_ms: number;
  end_ms: number;
}

/** Most words one `response.words` message may carry (it must also fit a 64 KiB frame). */
export const MAX_WORDS_PER_MESSAGE = 500;

/** Messages the engine sends (§4.2). */
export type EngineMessage =
  | {
    type: "session.ready";
    session_id: string;
    engine_session_id: string;
    audio: { output: OutputAudioFormat };
  }
  | { type: "response.started"; response_id: string }
  | { type: "response.done"; response_id: string; status: ResponseStatus }
  | { type: "input.speech_started" }
  | { type: "input.interrupt"; response_id: string }
  | { type: "transcript"; role: "user" | "agent"; turn_id: string; text: string; final: boolean }
  | { type: "response.words"; response_id: string; words: TimedWord[]; phonemes?: TimedPhoneme[] }
  | { type: "error"; code: ErrorCode; message: string; fatal: boolean; event_id?: string }
  | { type: "ping"; id: number }
  | { type: "pong"; id?: unknown }
  | { type: "session.end"; reason: string }
  | ToolCallMessage;

/**
 * `tool_call` (§4.2): the engine asks the session's client to run a tool; the bridge answers with a
 * `tool_result` of the same `call_id` (an error result when no client answers within 10 s or none is
 * connected).
 */
export interface ToolCallMessage {
  type: "tool_call";
  /** The engine's id of the call (1–256 characters), echoed by `tool_result`. */
  call_id: string;
  /** The tool's name (1–256 characters). */
  name: string;
  /** The call's arguments: a JSON object. */
  arguments: Record<string, unknown>;
}

/** `tool_result` (§4.1): what the client answered to a `tool_call`. */
export interface ToolResultMessage {
  type: "tool_result";
  call_id: string;
  /** Any JSON value the client gave. */
  output: unknown;
  /** The tool failed (`output` says why). */
  is_error: boolean;
}

/** `session.start`, the bridge's first frame (§2). */
export interface SessionStartMessage {
  type: "session.start";
  protocol: typeof PROTOCOL_VERSION;
  session_id: string;
  audio: {
    input: { encoding: typeof PCM_ENCODING; sample_rate: number; channels: 1 };
    output: { encodings: (typeof PCM_ENCODING)[]; preferred_sample_rate: number };
  };
  metadata: Record<string, string>;
}

/** Messages the bridge sends (§4.1). */
export type BridgeMessageV0 =
  | SessionStartMessage
  | { type: "response.played"; response_id: string; played_ms: number; interrupted: boolean }
  | { type: "response.cancel"; response_id: string; played_ms: number; reason: string }
  | { type: "ping"; id: number }
  | { type: "pong"; id?: unknown }
  | { type: "session.end"; reason: string }
  | ToolResultMessage;

/** A parsed bridge message: any JSON object with a string `type`. */
export interface BridgeMessage {
  /** Message type, e.g. `session.start`. */
  type: string;
  /** Optional sender-unique id, echoed by `error` replies. */
  event_id?: unknown;
  /** Any other field. */
  [field: string]: unknown;
}

/** Result of {@link parseBridgeMessage}. */
export type ParsedMessage = { ok: true; message: BridgeMessage } | { ok: false; reason: string };

/**
 * Parses a text frame into a message object.
 *
 * @param text the frame's text
 * @returns the message, or why it is not a valid protocol message
 */
export function parseBridgeMessage(text: string): ParsedMessage {
  const tooLarge = text.length > MAX_FRAME_BYTES ||
    (text.length * 3 > MAX_FRAME_BYTES && new TextEncoder().encode(text).byteLength > MAX_FRAME_BYTES);
  if (tooLarge) return { ok: false, reason: "text frame larger than 64 KiB" };
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return { ok: false, reason: "text frame is not valid JSON" };
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    return { ok: false, reason: "text frame is not a JSON object" };
  }
  const message = value as BridgeMessage;
  if (typeof message.type !== "string" || message.type === "") {
    return { ok: false, reason: "message has no string type" };
  }
  return { ok: true, message };
}

/** The parts of `session.start` the engine uses. */
export interface SessionStart {
  /** The bridge's session id. */
  sessionId: string;
  /** Rate of the user's audio, in Hz. */
  inputSampleRate: number;
  /** The bridge's preferred output rate, when given. */
  preferredOutputSampleRate: number | null;
  /** `metadata`, as sent (informational). */
  metadata: Record<string, unknown>;
}

/** Outcome of {@link validateSessionStart}: the start parameters, or the error to send and the close code. */
export type SessionStartResult =
  | { ok: true; start: SessionStart }
  | {
    ok: false;
    code: "invalid_message" | "unsupported_protocol" | "bad_audio_format";
    closeCode: number;
    message: string;
  };

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/**
 * Validates a `session.start` message (§2): protocol `v0`, a session id, and an input format the engine
 * accepts (`pcm_s16le`, 1 channel, 8000–48000 Hz, integer rate); if `audio.output.encodings` is given it must
 * include `pcm_s16le`.
 *
 * @param message a message whose type is `session.start`
 * @returns the parameters, or an `error` code with close code 4002 (invalid) / 4003 (unsupported)
 */
export function validateSessionStart(message: BridgeMessage): SessionStartResult {
  if (message.protocol !== PROTOCOL_VERSION) {
    if (typeof message.protocol === "string") {
      return {
        ok: false,
        code: "unsupported_protocol",
        closeCode: CloseCode.unsupported,
        message: `unsupported protocol version (this engine speaks ${PROTOCOL_VERSION})`,
      };
    }
    return {
      ok: false,
      code: "invalid_message",
      closeCode: CloseCode.badHandshake,
      message: "session.start lacks protocol",
    };
  }
  const sessionId = message.session_id;
  if (typeof sessionId !== "string" || sessionId === "" || sessionId.length > 256) {
    return {
      ok: false,
      code: "invalid_message",
      closeCode: CloseCode.badHandshake,
      message: "session.start lacks a valid session_id",
    };
  }
  const badFormat = (detail: string): SessionStartResult => ({
    ok: false,
    code: "bad_audio_format",
    closeCode: CloseCode.unsupported,
    message: `unsupported audio format: ${detail}`,
  });
  const audio = message.audio;
  if (!isRecord(audio) || !isRecord(audio.input)) return badFormat("audio.input missing");
  const input = audio.input;
  if (input.encoding !== "pcm_s16le") return badFormat("input encoding must be pcm_s16le");
  if (input.channels !== 1) return badFormat("input must be mono (channels 1)");
  const rate = input.sample_rate;
  if (
    typeof rate !== "number" || !Number.isInteger(rate) || rate < MIN_SAMPLE_RATE || rate > MAX_SAMPLE_RATE
  ) {
    return badFormat(`input sample_rate must be an integer within ${MIN_SAMPLE_RATE}-${MAX_SAMPLE_RATE}`);
  }
  let preferred: number | null = null;
  if (audio.output !== undefined) {
    if (!isRecord(audio.output)) return badFormat("audio.output must be an object");
    const encodings = audio.output.encodings;
    if (Array.isArray(encodings) && !encodings.includes("pcm_s16le")) {
      return badFormat("output encodings must include pcm_s16le");
    }
    const p = audio.output.preferred_sample_rate;
    if (typeof p === "number" && Number.isInteger(p) && p >= MIN_SAMPLE_RATE && p <= MAX_SAMPLE_RATE) {
      preferred = p;
    }
  }
  return {
    ok: true,
    start: {
      sessionId,
      inputSampleRate: rate,
      preferredOutputSampleRate: preferred,
      metadata: isRecord(message.metadata) ? message.metadata : {},
    },
  };
}

/**
 * The `event_id` of a message when it is a string (echoed by `error` replies), else undefined.
 *
 * @param message a parsed bridge message
 */
export function eventIdOf(message: BridgeMessage | undefined): string | undefined {
  return typeof message?.event_id === "string" ? message.event_id : undefined;
}
