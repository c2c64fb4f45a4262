/**
 * Types of `sdk/player.js`, the browser player of the media plane (`websocket_fmp4`, and `webrtc_sfu`
 * through `sdk/player_webrtc.js`). See docs/media-plane.md for the protocols.
 *
 * @module
 */

/** Subprotocol of the media WebSocket. */
export declare const MEDIA_SUBPROTOCOL: "avatar-media.v0";

/**
 * The player's states: `connecting` → `buffering` → `playing` → `ended` | `failed`, with `reconnecting`
 * after an unexpected close. `playing` is reported on the `<video>` element's own `playing` event (the
 * element really plays); a stall (`waiting`) or a pause goes back to `buffering` until it plays again.
 */
export type PlayerStateName = "connecting" | "buffering" | "playing" | "reconnecting" | "ended" | "failed";

/** A snapshot of the player's state, passed to `onState`. */
export interface PlayerState {
  /** What the player is doing. */
  state: PlayerStateName;
  /**
   * Time from `createPlayer` to the first video frame shown, ms; set when the video first plays (null
   * until then).
   */
  ttffMs: number | null;
  /**
   * Why the player ended, failed or reconnects (a close reason or an error). Removed once it is connected
   * again.
   */
  reason?: string;
  /** The media WebSocket's close code, when it closed (removed likewise). */
  closeCode?: number;
  /** Whether autoplay rules forced the video to start muted. */
  muted: boolean;
  /** Whether the microphone is being streamed. */
  microphone: boolean;
  /**
   * Why the microphone is not streamed although it was asked for ("the microphone was refused", or
   * unavailable); removed when it starts.
   */
  microphoneError?: string;
}

/** A transcript line sent by the engine (optional in the engine protocol). */
export interface TranscriptLine {
  /** Who spoke. */
  role: "user" | "agent";
  /** The turn the line belongs to (a later line with the same id replaces it). */
  turnId: string;
  /** The whole text so far for this turn. */
  text: string;
  /** Whether the line is final for its turn. */
  final: boolean;
}

/** A tool call of the session's conversation engine, handed to `onToolCall` (see `tool_calls.js`). */
export interface ToolCall {
  /** The engine's id of the call. */
  callId: string;
  /** The tool's name. */
  name: string;
  /** The call's arguments. */
  arguments: Record<string, unknown>;
  /**
   * Answers the call (once): `output` is any JSON value (absent: `null`); `isError` marks a failure. False
   * when it was answered already or the connection is gone.
   */
  respond(output?: unknown, options?: { isError?: boolean }): boolean;
}

/** `stream_metadata` of a create or client-token answer (the fields the player reads). */
export interface StreamMetadata {
  /** The media WebSocket of a `websocket_fmp4` session. */
  media_url?: string | null;
  /** The SFU signalling WebSocket of a `webrtc_sfu` session. */
  sfu_endpoint?: string | null;
  /**
   * The session's transport (`websocket_fmp4`, `webrtc_sfu`): the player plays it with that transport's
   * player. Absent (a service before this field): the transport whose endpoint field is set.
   */
  transport?: string;
  /** The purpose-scoped media token (authorizes the SFU signalling WebSocket). */
  session_token?: string;
  /** STUN/TURN servers (TURN credentials valid as long as the token). */
  ice_servers?: { urls: string | string[]; username?: string; credential?: string }[];
}

/** Options of {@link createPlayer}. */
export interface CreatePlayerOptions {
  /**
   * The element to play in (required unless `canvas` is given). On a `webrtc_sfu` session in a browser that
   * cannot receive H.264 over WebRTC (a Firefox without Cisco's OpenH264 plugin, which it downloads), the
   * player plays video-free instead and shows its own drawing of the avatar in this element — a canvas's
   * captured stream, with the sound — and `stats().animation` is present.
   */
  video?: HTMLVideoElement;
  /**
   * Video-free (`websocket_fmp4` sessions with WebCodecs; `webrtc_sfu` sessions: the animation track on a
   * data channel): no video is sent; the player plays the sound and
   * draws the avatar on this canvas from the service's art and the animation track, in step with the
   * sound. Its width and height are the drawing's pixel size; the `transparent` background leaves the page
   * visible around the avatar. `state: "playing"` once the first picture is drawn.
   */
  canvas?: HTMLCanvasElement;
  /**
   * Video-free: how long a canvas drawing takes to reach the screen (ms; default 16, one refresh at 60 Hz);
   * the instant drawn is the one heard then. A page whose display is slower sets more. `stats().avOffsetMs`
   * says how the pictures and the sound met (+: the picture is late).
   */
  canvasDisplayMs?: number;
  /**
   * The session's `stream_metadata`: the player picks its transport's player by the `transport` it names
   * (`webrtc_sfu`: WebRTC through the SFU; `websocket_fmp4`: fMP4 over `media_url`). Give this or
   * `mediaUrl`.
   */
  streamMetadata?: StreamMetadata;
  /** `stream_metadata.media_url` of a `websocket_fmp4` session (when `streamMetadata` is not given). */
  mediaUrl?: string;
  /** `client_token` of the session (valid 5 minutes; needed to connect). */
  clientToken: string;
  /** Called on every state change. */
  onState?: (state: PlayerState) => void;
  /** Called with transcript lines, if the engine sends any. */
  onTranscript?: (line: TranscriptLine) => void;
  /**
   * Called with each tool call of the engine's agent (`{"type":"tool_call"}` on the player's socket).
   * Answer in one line, `call.respond(output)` (`{ isError: true }` for a failure), or return the output
   * (or a promise of it; a throw answers an error with its message). Unanswered calls are answered with an
   * error by the service after 10 s; without this handler the player leaves them to the session's other
   * pages.
   */
  onToolCall?: (call: ToolCall) => unknown;
  /**
   * Returns a fresh client token and `stream_metadata` (from your backend, which calls
   * `POST /v1/sessions/{session_id}/client-token`); used whenever the player reconnects. It must resolve
   * to `{ clientToken, mediaUrl?, streamMetadata? }` (note the camelCase: not the API's `client_token`);
   * anything else fails the player with a message saying so. A `webrtc_sfu` session needs `streamMetadata`
   * (its fresh `session_token` and TURN credentials).
   */
  refreshToken?: () => Promise<{ clientToken: string; mediaUrl?: string; streamMetadata?: StreamMetadata }>;
  /** `webrtc_sfu` only: `"relay"` sends all media through TURN. */
  iceTransportPolicy?: RTCIceTransportPolicy;
  /** Stream the microphone (default true). */
  microphone?: boolean;
  /** Media Source Extensions only: playback delay behind the live edge to aim for, ms (default 200). */
  targetLatencyMs?: number;
  /** Media Source Extensions only: past this delay the player jumps back to the live edge, ms (default 800). */
  maxLatencyMs?: number;
  /** Reconnection attempts in a row before failing (default 5). */
  maxReconnects?: number;
  /**
   * `websocket_fmp4` only: how to play. `"auto"` (the default) decodes with WebCodecs where the browser has
   * it (`VideoDecoder`, `AudioDecoder`, an `AudioWorklet`) — the sound on an AudioContext, each frame shown
   * when its sound is heard, tens of milliseconds behind the service — and falls back to Media Source
   * Extensions elsewhere; `"mse"` forces Media Source Extensions; `"webcodecs"` forces WebCodecs.
   */
  playback?: "auto" | "webcodecs" | "mse";
  /** WebCodecs only: the AudioContext to play the avatar's sound in (default: one of the player's own). */
  audioContext?: AudioContext;
  /**
   * WebCodecs only: where the avatar's sound goes (default: the context's destination) — your own audio
   * graph (effects, a visualiser, a recorder). Its context must be `audioContext`.
   */
  audioOutput?: AudioNode;
  /**
   * WebCodecs only: how long after the AudioContext renders a sample it is heard (ms, 0–1000) — the sound
   * device's output latency, which the player's clock needs to show each picture when its sound is heard.
   * Given, the player never asks the browser for it; `"read"`: it always asks. By default it asks
   * (`AudioContext.outputLatency`, `getOutputTimestamp()`), except in Firefox on Linux, where the first such
   * read can freeze the page and every page's sound (a Firefox deadlock on a PulseAudio client) and it
   * assumes 47 ms. A number outside 0–1000, or anything else, throws a `TypeError`.
   */
  outputLatencyMs?: number | "read";
}

/**
 * Playback counters and what the player measured (the same fields on every transport; also reported to the
 * service, which keeps them as the session's figures: `GET /v1/sessions/{session_id}/metrics`).
 */
export interface PlayerStats {
  /** How the player plays: WebCodecs, Media Source Extensions, or WebRTC. */
  playback: "webcodecs" | "mse" | "webrtc";
  /** Video frames decoded. */
  framesDecoded: number;
  /** Video frames dropped (shown too late, or never). */
  framesDropped: number;
  /**
   * Frame made on the server → shown, ms: the median of the last 2 s (0 before any). WebCodecs and Media
   * Source Extensions measure it against the service's media clock (`clock_sync`); WebRTC adds the
   * service's send time to its own receive → shown.
   */
  latencyMs: number;
  /**
   * The mouth vs its sound as shown, ms (+: the mouth is late). WebCodecs video: per sound that starts after
   * a silence, the first shown picture whose mouth is open (read from the shown frame's mouth box) − when
   * that sound was heard (the audio clock's output timestamps); the median of the last 9 such samples.
   * Video-free (canvas): each picture on screen − the sound of the instant it shows heard, median of the last
   * 2 s (over WebRTC, the sound of an instant is placed by the animation stamps' arrival and the RTC
   * statistics). Null until measured. Media Source Extensions and WebRTC estimate it from the element's
   * clock or the RTC statistics (a shown frame against its sound).
   */
  avOffsetMs: number | null;
  /** Times the media stopped arriving (network stalls). */
  stalls: number;
  /** Times the player skipped late media to get back to the live edge. */
  catchUps: number;
  /** End of the last stall → playing at the live edge again, ms (WebCodecs; null otherwise). */
  lastCatchUpMs: number | null;
  /**
   * Media skipped so far, ms: late media after a stall, and (WebCodecs) sound skipped where the anchor
   * falls — its start-up settling's among it.
   */
  skippedMs: number;
  /**
   * Of `skippedMs`, the sound that was loud, ms (WebCodecs; 0 otherwise): speech this viewer did not hear
   * because it came too late to play, or was skipped to catch up (the anchor's falls go where it is quiet).
   */
  speechSkippedMs: number;
  /**
   * Audio played as silence because it was not there in time, ms (WebCodecs): units that came late — the
   * silence between sounds among them — the start-up's, and the silence inserted when the anchor rises.
   */
  audioUnderrunMs: number;
  /** Sound decoded so far, ms (WebCodecs; null where the browser decodes it). */
  audioDecodedMs: number | null;
  /** How far behind the service's media clock the sound is heard, ms (WebCodecs: its anchor; else null). */
  anchorMs: number | null;
  /** Media bytes received (over the socket, or RTP over WebRTC). */
  bytesReceived: number;
  /** Microphone frames sent upstream (WebRTC: 20 ms Opus packets). */
  micFramesSent: number;
  /** Reconnections so far. */
  reconnects: number;
}

/** A running player. */
export interface AvatarPlayer {
  /** The current state. */
  state(): PlayerState;
  /** Playback counters. */
  stats(): PlayerStats;
  /** Starts or stops streaming the microphone. */
  setMicrophone(on: boolean): Promise<void>;
  /** Answers a tool call by id (as `call.respond` does); false when answered already or disconnected. */
  respondToolCall(callId: string, output?: unknown, options?: { isError?: boolean }): boolean;
  /** Disconnects and releases the microphone and the media resources. */
  close(): void;
}

/**
 * Creates a player and connects it. Throws a `TypeError` for invalid options: no `<video>` element, a
 * `mediaUrl` (or `streamMetadata.media_url`) that is not a `ws://`/`wss://` URL, an empty `clientToken`, a `refreshToken` that is not a
 * function.
 */
export declare function createPlayer(options: CreatePlayerOptions): AvatarPlayer;
