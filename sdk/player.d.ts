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
  /** The purpose-scoped media token (authorizes the SFU signalling WebSocket). */
  session_token?: string;
  /** STUN/TURN servers (TURN credentials valid as long as the token). */
  ice_servers?: { urls: string | string[]; username?: string; credential?: string }[];
}

/** Options of {@link createPlayer}. */
export interface CreatePlayerOptions {
  /** The element to play in. */
  video: HTMLVideoElement;
  /**
   * The session's `stream_metadata`: the player picks the transport from it (`sfu_endpoint` set:
   * WebRTC through the SFU; otherwise fMP4 over `media_url`). Give this or `mediaUrl`.
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
  /** Playback delay behind the live edge to aim for, ms (default 200). */
  targetLatencyMs?: number;
  /** Past this delay the player jumps back to the live edge, ms (default 800). */
  maxLatencyMs?: number;
  /** Reconnection attempts in a row before failing (default 5). */
  maxReconnects?: number;
}

/** Playback counters. */
export interface PlayerStats {
  /** Video frames the browser decoded. */
  framesDecoded: number;
  /** Video frames the browser dropped. */
  framesDropped: number;
  /** Current delay behind the live edge, ms (WebRTC: the video jitter buffer's delay). */
  latencyMs: number;
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
