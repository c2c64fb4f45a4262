/**
 * The runtime's provider interface: one bridge per provider type, one connection per live session.
 *
 * A bridge turns a session's credentials into a live connection to its conversation engine (or fails
 * with an {@link import("../errors.ts").ApiError} carrying the mapped code). The connection then carries
 * user audio to the engine and engine events back to the session runtime until it is closed.
 *
 * @module
 */
import type { Clock } from "../clock.ts";
import type { Logger } from "../log.ts";
import type { CredentialHolder } from "../auth/credential_holder.ts";
import type { ProviderSettings, ProviderType } from "./definitions/provider_types.ts";
import type { InputTurns } from "./wire/input_turns.ts";

/** Why a provider connection ended on its own. */
export type ProviderClosure =
  /** The engine ended the session normally (`session.end` then close 1000). */
  | { kind: "ended_by_engine"; reason: string }
  /** The connection failed (drop, error close, fatal error, keepalive timeout). */
  | { kind: "failed"; reason: string }
  /** The engine's quota or rate limit ended the session (its error or its close reason said so). */
  | { kind: "quota_exhausted"; reason: string };

/** What a client answered to a tool call (or the service, for a client that could not). */
export interface ToolResult {
  /** Any JSON value (a vendor that takes text gets a string as is, anything else as JSON). */
  output: unknown;
  /** The tool failed: the output says why. */
  isError: boolean;
}

/**
 * A call the engine's agent makes to a tool the session's client runs (a vendor's function or client tool,
 * or a V0 `tool_call`). Whoever handles it answers exactly once with {@link ToolCall.respond}; later answers
 * are ignored.
 */
export interface ToolCall {
  /** The engine's id of the call. */
  callId: string;
  /** The tool's name. */
  name: string;
  /** The call's arguments (an object). */
  arguments: Record<string, unknown>;
  /** Sends the result to the engine in its own format (once; a no-op for calls that want no answer). */
  respond(result: ToolResult): void;
}

/** Events a provider connection reports to its session. */
export interface ProviderEvents {
  /** Agent audio, PCM16 mono at the connection's `outputSampleRate`. */
  onAudio(pcm: Int16Array, responseId: string): void;
  /** An agent turn begins. */
  onResponseStarted(responseId: string): void;
  /** The engine sent all audio of a turn. */
  onResponseDone(responseId: string, status: string): void;
  /** Barge-in: drop queued speech of `responseId` at once. */
  onInterrupt(responseId: string): void;
  /** A transcript line (full text so far for its turn). */
  onTranscript(line: { role: "user" | "agent"; turnId: string; text: string; final: boolean }): void;
  /** The agent calls a client tool: the session forwards it to its clients (or answers an error). */
  onToolCall(call: ToolCall): void;
  /**
   * Optional, for lip sync: timed words of a response (ms from its first audio sample), sent no later than
   * their audio (V0 `response.words`).
   */
  onAgentWords?(responseId: string, words: { word: string; start_ms: number; end_ms: number }[]): void;
  /**
   * Optional, for lip sync: character alignment of the response's audio chunk delivered next through
   * `onAudio` (times from that chunk's start; vendor3's `alignment`).
   */
  onAgentAlignment?(
    responseId: string,
    alignment: { chars: string[]; charStartMs: number[]; charDurationMs: number[] },
  ): void;
  /** The connection ended without the session asking for it. */
  onClosed(closure: ProviderClosure): void;
}

/** What the session tells a bridge when connecting. */
export interface ConnectRequest {
  sessionId: string;
  credentials: CredentialHolder;
  /** Deadline for the whole connection and handshake. */
  timeoutMs: number;
  events: ProviderEvents;
  /** Informational metadata passed to the engine (avatar and background). */
  metadata: Record<string, string>;
}

/** How a connection was closed by the session. */
export interface CloseResult {
  /** True when the graceful handshake completed (or a forced close was requested). */
  clean: boolean;
  /** Why it was not clean; provider-agnostic, no hostnames or secrets. */
  detail?: string;
}

/** A live connection to a conversation engine. */
export interface ProviderConnection {
  /** Sample rate of user audio the engine expects (PCM16LE mono). */
  readonly inputSampleRate: number;
  /** Sample rate of the engine's audio. */
  readonly outputSampleRate: number;
  /** Sends user audio (PCM16LE mono at `inputSampleRate`). */
  sendUserAudio(pcm: Uint8Array): void;
  /** Reports how much of a response was played to the user. */
  reportPlayed(responseId: string, playedMs: number, interrupted: boolean): void;
  /**
   * Closes the connection. Graceful: the engine is told the session is ending and the close handshake is
   * awaited up to `timeoutMs`. Forced: the socket is closed at once.
   */
  close(options: { graceful: boolean; timeoutMs: number; reason: string }): Promise<CloseResult>;
  /** Resolves once the underlying transport is fully released. */
  readonly released: Promise<void>;
}

/** Connects sessions of one provider type. */
export interface ProviderBridge {
  connect(request: ConnectRequest): Promise<ProviderConnection>;
}

/** What a bridge is built from (see `createBridges` in `bridges.ts`); `S`: its provider type's settings. */
export interface BridgeDeps<S = unknown> {
  logger: Logger;
  /** Clock of connect deadlines, keepalive and teardown waits. */
  clock: Clock;
  /** Its provider type's settings (where its engine lives: the definition's `settings`, as configured). */
  settings: S;
  /**
   * Extra CA certificates (PEM) trusted for engine connections and vendor REST calls, beyond the bundled
   * roots (every bridge connects through the wire's client, `wire/upgrade.ts`).
   */
  caCerts: readonly string[];
  /**
   * The process's fairness gate of engine input (`wire/input_turns.ts`): every socket the bridges open reads
   * through this one gate (the worker side's composition owns it).
   */
  inputTurns: InputTurns;
  /** Keepalive of the vendor sockets (default: a ping every 15 s, the peer dead after 45 s of silence). */
  keepalive?: { intervalMs: number; deadAfterMs: number };
}

/**
 * What a bridge module exports: `src/providers/<type>/bridge.ts` exports `createBridge`, found by the
 * type's name (`bridges.ts`).
 */
export type BridgeFactory<K extends ProviderType> = (deps: BridgeDeps<ProviderSettings[K]>) => ProviderBridge;
