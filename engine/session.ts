/**
 * One engine connection: the V0 handshake, keepalive, message dispatch and close handling around a
 * {@link Conversation}.
 *
 * @module
 */

import { Conversation, type ConversationMode } from "./conversation.ts";
import {
  type BridgeMessage,
  CloseCode,
  type EngineMessage,
  type ErrorCode,
  eventIdOf,
  MAX_FRAME_BYTES,
  parseBridgeMessage,
  PEER_DEAD_AFTER_MS,
  PING_INTERVAL_MS,
  SESSION_START_TIMEOUT_MS,
  validateSessionStart,
} from "../src/speech/v0_protocol.ts";
import { type EngineSessionStats, newSessionStats } from "./stats.ts";
import type { Tts } from "./tts.ts";
import type { VadOptions } from "../src/speech/vad.ts";

/** Timing of the handshake and keepalive, in milliseconds. */
export interface SessionTimings {
  /** `session.start` must arrive within this, default 10000 (else close 4002). */
  handshakeTimeoutMs?: number;
  /** The engine sends `ping` this often after `session.ready`, default 15000. */
  pingIntervalMs?: number;
  /** Close 4008 when nothing arrived from the bridge for this long, default 30000. */
  idleTimeoutMs?: number;
}

/** Options of {@link EngineSession}. */
export interface EngineSessionOptions extends SessionTimings {
  /** The upgraded server-side socket. */
  socket: WebSocket;
  /** Id the engine gives this connection (`engine_session_id`). */
  engineSessionId: string;
  /** Rate of the engine's audio, declared in `session.ready`. */
  outputSampleRate: number;
  /** Conversation mode. */
  mode: ConversationMode;
  /** Greeting text or null. */
  greeting: string | null;
  /** Speech synthesiser. */
  tts: Tts;
  /** VAD tuning. */
  vad?: Omit<VadOptions, "sampleRate">;
  /** Lead of response audio over real time, default 200 ms. */
  leadMs?: number;
  /** A client tool each answer calls first (see `Conversation`), or null. */
  demoTool?: string | null;
  /** Structured log sink. */
  log: (event: string, fields?: Record<string, unknown>) => void;
}

/** Protocol state of a connection. */
export type SessionState = "awaiting_start" | "ready" | "closing" | "closed";

/** Handles one bridge connection from upgrade to close; see the module documentation. */
export class EngineSession {
  /** Live counters of this connection. */
  readonly stats: EngineSessionStats;
  /** Resolves when the socket has closed and the conversation's work has settled. */
  readonly closed: Promise<void>;

  readonly #o: EngineSessionOptions;
  readonly #socket: WebSocket;
  #state: SessionState = "awaiting_start";
  #conversation: Conversation | null = null;
  #handshakeTimer: ReturnType<typeof setTimeout> | undefined;
  #pingTimer: ReturnType<typeof setInterval> | undefined;
  #idleTimer: ReturnType<typeof setTimeout> | undefined;
  #lastSeen = performance.now();
  #nextPingId = 1;
  #closeCode: number | null = null;
  #resolveClosed!: () => void;

  /**
   * Takes over a freshly upgraded socket; the handshake timer starts when it opens.
   *
   * @param options socket, audio settings, conversation settings, timings and log sink
   */
  constructor(options: EngineSessionOptions) {
    this.#o = options;
    this.#socket = options.socket;
    this.#socket.binaryType = "arraybuffer";
    this.stats = newSessionStats(options.engineSessionId);
    this.closed = new Promise((resolve) => (this.#resolveClosed = resolve));
    this.#socket.addEventListener("open", () => this.#onOpen());
    this.#socket.addEventListener("message", (event) => this.#onMessage(event));
    this.#socket.addEventListener("close", (event) => void this.#onClose(event));
    this.#socket.addEventListener("error", () => {}); // the close event follows
  }

  /** Current protocol state. */
  get state(): SessionState {
    return this.#state;
  }

  /**
   * Closes the connection (idempotent): stops the conversation and timers, then sends the close frame.
   *
   * @param code WebSocket close code
   * @param reason short human-readable reason (≤ 123 bytes, no secrets)
   */
  close(code: number, reason: string): void {
    if (this.#state === "closing" || this.#state === "closed") return;
    this.#state = "closing";
    this.#closeCode = code;
    this.#stopTimers();
    this.#conversation?.close();
    this.#o.log("session_closing", { engine_session_id: this.#o.engineSessionId, code, reason });
    try {
      this.#socket.close(code, reason);
    } catch {
      // already closing or closed: the close event finishes the job
    }
  }

  #onOpen(): void {
    const timeout = this.#o.handshakeTimeoutMs ?? SESSION_START_TIMEOUT_MS;
    this.#handshakeTimer = setTimeout(() => {
      this.#handshakeTimer = undefined;
      if (this.#state === "awaiting_start") {
        this.close(CloseCode.badHandshake, "no session.start received in time");
      }
    }, timeout);
  }

  #send(message: EngineMessage): void {
    if (this.#socket.readyState !== WebSocket.OPEN || this.#state === "closing" || this.#state === "closed") {
      return;
    }
    try {
      this.#socket.send(JSON.stringify(message));
    } catch (err) {
      this.#o.log("send_failed", { engine_session_id: this.#o.engineSessionId, error: String(err) });
    }
  }

  #sendAudio(frame: Uint8Array): void {
    if (this.#socket.readyState !== WebSocket.OPEN || this.#state !== "ready") return;
    try {
      this.#socket.send(frame);
    } catch (err) {
      this.#o.log("send_failed", { engine_session_id: this.#o.engineSessionId, error: String(err) });
    }
  }

  #error(code: ErrorCode, message: string, fatal: boolean, cause?: BridgeMessage): void {
    const eventId = eventIdOf(cause);
    this.#send({
      type: "error",
      code,
      message,
      fatal,
      ...(eventId !== undefined ? { event_id: eventId } : {}),
    });
  }

  #onMessage(event: MessageEvent): void {
    if (this.#state === "closing" || this.#state === "closed") return;
    this.#lastSeen = performance.now();
    const data = event.data;
    if (typeof data !== "string") {
      this.#onBinary(data instanceof ArrayBuffer ? new Uint8Array(data) : new Uint8Array(0));
      return;
    }
    const parsed = parseBridgeMessage(data);
    if (this.#state === "awaiting_start") {
      if (!parsed.ok || parsed.message.type !== "session.start") {
        const reason = parsed.ok
          ? `first message must be session.start, got ${parsed.message.type}`
          : parsed.reason;
        this.#error("invalid_message", reason.slice(0, 200), true, parsed.ok ? parsed.message : undefined);
        this.close(CloseCode.badHandshake, "first frame must be session.start");
        return;
      }
      this.#onSessionStart(parsed.message);
      return;
    }
    if (!parsed.ok) {
      this.#error("invalid_message", parsed.reason, false);
      return;
    }
    this.#dispatch(parsed.message);
  }

  #onBinary(bytes: Uint8Array): void {
    if (this.#state !== "ready") {
      this.#o.log("protocol_violation", {
        engine_session_id: this.#o.engineSessionId,
        what: "audio before ready",
      });
      this.close(CloseCode.policyViolation, "binary frame before session.ready");
      return;
    }
    if (bytes.byteLength > MAX_FRAME_BYTES || bytes.byteLength % 2 !== 0) {
      this.#error("invalid_message", "binary frame must hold whole 16-bit samples and at most 64 KiB", false);
      return;
    }
    this.stats.user_audio_bytes += bytes.byteLength;
    this.#conversation?.handleAudio(bytes);
  }

  #onSessionStart(message: BridgeMessage): void {
    this.#clearHandshakeTimer();
    const result = validateSessionStart(message);
    if (!result.ok) {
      this.#o.log("handshake_rejected", { engine_session_id: this.#o.engineSessionId, code: result.code });
      this.#error(result.code, result.message, true, message);
      this.close(
        result.closeCode,
        result.code === "invalid_message" ? "invalid session.start" : result.message,
      );
      return;
    }
    const { start } = result;
    this.stats.session_id = start.sessionId;
    this.#state = "ready";
    this.#send({
      type: "session.ready",
      session_id: start.sessionId,
      engine_session_id: this.#o.engineSessionId,
      audio: { output: { encoding: "pcm_s16le", sample_rate: this.#o.outputSampleRate, channels: 1 } },
    });
    this.#o.log("session_ready", {
      engine_session_id: this.#o.engineSessionId,
      session_id: start.sessionId,
      input_sample_rate: start.inputSampleRate,
      output_sample_rate: this.#o.outputSampleRate,
    });
    this.#startKeepalive();
    this.#conversation = new Conversation({
      mode: this.#o.mode,
      greeting: this.#o.greeting,
      tts: this.#o.tts,
      inputSampleRate: start.inputSampleRate,
      outputSampleRate: this.#o.outputSampleRate,
      output: { sendJson: (m) => this.#send(m), sendAudio: (f) => this.#sendAudio(f) },
      stats: this.stats,
      vad: this.#o.vad,
      leadMs: this.#o.leadMs,
      demoTool: this.#o.demoTool ?? null,
      log: (event, fields) => this.#o.log(event, { engine_session_id: this.#o.engineSessionId, ...fields }),
    });
    this.#conversation.start();
  }

  #dispatch(message: BridgeMessage): void {
    switch (message.type) {
      case "ping":
        this.#send({ type: "pong", id: message.id });
        return;
      case "pong":
        return;
      case "session.start":
        this.#error("invalid_message", "session.start was already received", false, message);
        return;
      case "response.played":
        this.#conversation?.handleResponsePlayed(message);
        return;
      case "response.cancel":
        this.#conversation?.handleResponseCancel(message);
        return;
      case "tool_result":
        this.#conversation?.handleToolResult(message);
        return;
      case "session.end":
        this.#o.log("session_end_received", {
          engine_session_id: this.#o.engineSessionId,
          reason: typeof message.reason === "string" ? message.reason.slice(0, 100) : undefined,
        });
        this.close(CloseCode.normal, "session ended");
        return;
      default:
        return; // unknown types are ignored (forward compatibility)
    }
  }

  #startKeepalive(): void {
    const pingInterval = this.#o.pingIntervalMs ?? PING_INTERVAL_MS;
    this.#pingTimer = setInterval(() => this.#send({ type: "ping", id: this.#nextPingId++ }), pingInterval);
    this.#armIdleTimer();
  }

  #armIdleTimer(): void {
    const idleTimeout = this.#o.idleTimeoutMs ?? PEER_DEAD_AFTER_MS;
    const remaining = this.#lastSeen + idleTimeout - performance.now();
    this.#idleTimer = setTimeout(() => {
      this.#idleTimer = undefined;
      if (this.#state !== "ready") return;
      if (performance.now() - this.#lastSeen >= idleTimeout) {
        this.#o.log("keepalive_timeout", { engine_session_id: this.#o.engineSessionId });
        this.close(CloseCode.keepaliveTimeout, "keepalive timeout");
      } else {
        this.#armIdleTimer();
      }
    }, Math.max(1, remaining));
  }

  #clearHandshakeTimer(): void {
    if (this.#handshakeTimer !== undefined) clearTimeout(this.#handshakeTimer);
    this.#handshakeTimer = undefined;
  }

  #stopTimers(): void {
    this.#clearHandshakeTimer();
    if (this.#pingTimer !== undefined) clearInterval(this.#pingTimer);
    if (this.#idleTimer !== undefined) clearTimeout(this.#idleTimer);
    this.#pingTimer = undefined;
    this.#idleTimer = undefined;
  }

  async #onClose(event: CloseEvent): Promise<void> {
    this.#stopTimers();
    this.#conversation?.close();
    this.#state = "closed";
    this.stats.closed_code = this.#closeCode ?? event.code;
    this.#o.log("session_closed", {
      engine_session_id: this.#o.engineSessionId,
      session_id: this.stats.session_id || undefined,
      code: this.stats.closed_code,
      peer_code: event.code,
    });
    await this.#conversation?.settled();
    this.#resolveClosed();
  }
}
