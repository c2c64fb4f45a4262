/**
 * The bridge side of the external conversation engine protocol V0 (docs/engine-protocol-v0.md), on the
 * bridge skeleton and the shared engine-socket plumbing (`wire/`), with the message shapes and constants of
 * `src/speech/v0_protocol.ts` (the one definition the reference engine uses too).
 *
 * Credentials (`url`, the values of `auth_headers`) are read from the session's credential holder only to
 * open the socket, as bytes written into the upgrade request (`wire/http1.ts`, `wire/upgrade.ts`); failures during start are
 * mapped to the service's codes as documented in §8 of the protocol, with provider-agnostic messages.
 *
 * @module
 */
import {
  type BridgeMessageV0,
  CloseCode,
  DEFAULT_INPUT_SAMPLE_RATE,
  type EngineMessage,
  MAX_SAMPLE_RATE,
  MAX_WORDS_PER_MESSAGE,
  MIN_SAMPLE_RATE,
  PCM_ENCODING,
  PEER_DEAD_AFTER_MS,
  PING_INTERVAL_MS,
  PREFERRED_OUTPUT_SAMPLE_RATE,
  PROTOCOL_VERSION,
  SUBPROTOCOL,
} from "../../speech/v0_protocol.ts";
import type { ApiError } from "../../errors.ts";
import { pcmSamples } from "../audio/format.ts";
import type { ProviderSettings } from "../definitions/provider_types.ts";
import { toolCall } from "../tool_calls.ts";
import type { BridgeFactory, ConnectRequest, ProviderClosure } from "../types.ts";
import { type FailStart, VendorBridge, type VendorHandshake } from "../wire/bridge.ts";
import {
  BridgeConnection,
  type ConnectionContext,
  type Keepalive,
  KEEPALIVE_CLOSE_CODE,
} from "../wire/connection.ts";
import { type HandshakeStep, refineByClose, startErrors, type StartFailure } from "../wire/handshake.ts";
import { endpointOfBytes } from "../wire/endpoint.ts";
import type { Closed, Frame, WireSocket } from "../wire/wire_socket.ts";
import { classifyNativeFailure } from "../wire/failure.ts";

/** The subprotocol the bridge offers. */
export const ENGINE_SUBPROTOCOL = SUBPROTOCOL;
/** Default user audio sample rate (Hz). */
export const DEFAULT_USER_SAMPLE_RATE = DEFAULT_INPUT_SAMPLE_RATE;

/** A failure before `session.ready`, as {@link mapStartFailure} takes it. */
export type V0StartFailure =
  | { kind: "network"; message: string }
  | { kind: "close"; code: number }
  | { kind: "error"; code: string }
  | { kind: "protocol" }
  | { kind: "timeout" };

/** Maps a failure before `session.ready` to the service's error (protocol §8). */
export function mapStartFailure(failure: V0StartFailure): ApiError {
  switch (failure.kind) {
    case "network":
      return mapV0Failure(classifyNativeFailure(failure.message));
    case "close":
      return mapV0Failure({ kind: "closed", code: failure.code, reason: "" });
    case "error":
      if (failure.code === "bad_audio_format" || failure.code === "unsupported_protocol") {
        return startErrors.unsupported();
      }
      if (failure.code === "rate_limited") return startErrors.quota();
      return startErrors.downstream();
    case "protocol":
      return startErrors.downstream();
    case "timeout":
      return startErrors.timeout();
  }
}

/** The V0 mapping of a transport-level start failure (§8). */
function mapV0Failure(f: StartFailure): ApiError {
  switch (f.kind) {
    case "unreachable":
      return startErrors.unavailable();
    case "refused":
      // 503 is the engine's "temporarily unavailable" (with its Retry-After); any other refusal (401, 403,
      // 404, a redirect, …) is a downstream failure.
      return f.status === 503 ? startErrors.unavailable(f.retryAfterS) : startErrors.downstream();
    case "closed":
      if (f.code === 0 || f.code === 1006) return startErrors.unavailable();
      if (f.code === CloseCode.tryAgainLater) return startErrors.unavailable();
      if (f.code === CloseCode.unsupported) return startErrors.unsupported();
      if (f.code === CloseCode.rateLimited) return startErrors.quota();
      return startErrors.downstream();
    case "invalid":
      return startErrors.unusable();
    case "protocol":
      return startErrors.downstream();
    case "timeout":
      return startErrors.timeout();
  }
}

/** What the handshake settles: the user audio rate the bridge announced and the engine's output rate. */
interface Rates {
  input: number;
  output: number;
}

/** The bridge of `external_engine` (found by its name: `../bridges.ts`). */
export const createBridge: BridgeFactory<"external_engine"> = (deps) => new ExternalEngineBridge(deps);

/**
 * Connects sessions to customer engines speaking protocol V0, on the bridge skeleton (`../wire/bridge.ts`)
 * with the protocol's own failure map (§8), its JSON pings and its keepalive timings.
 */
export class ExternalEngineBridge
  extends VendorBridge<Rates, ProviderSettings["external_engine"], EngineConnection> {
  protected prepare(request: ConnectRequest, fail: FailStart): VendorHandshake<Rates> {
    const credentials = request.credentials;
    const inputRate = credentials.number("user_sample_rate") ?? DEFAULT_USER_SAMPLE_RATE;
    // The URL (its path and query may hold a token) and the header values go to the socket as bytes.
    const url = credentials.secret("url");
    let where: ReturnType<typeof endpointOfBytes>;
    try {
      if (!url) throw new Error("no url");
      where = endpointOfBytes(url);
    } catch {
      throw fail(startErrors.unusable(), "invalid");
    }
    return {
      timeoutMs: request.timeoutMs,
      endpoint: where.endpoint,
      headers: credentials.headers().map((h) => ({ name: h.name, value: [h.value] })),
      protocols: [ENGINE_SUBPROTOCOL],
      protocolOptional: true,
      opened: (socket) => {
        if (socket.protocol !== "" && socket.protocol !== ENGINE_SUBPROTOCOL) {
          return fail(startErrors.downstream(), "protocol");
        }
        const start: BridgeMessageV0 = {
          type: "session.start",
          protocol: PROTOCOL_VERSION,
          session_id: request.sessionId,
          audio: {
            input: { encoding: PCM_ENCODING, sample_rate: inputRate, channels: 1 },
            output: { encodings: [PCM_ENCODING], preferred_sample_rate: PREFERRED_OUTPUT_SAMPLE_RATE },
          },
          metadata: request.metadata,
        };
        socket.send(JSON.stringify(start));
      },
      message: (frame, socket) => {
        const step = readyStep(
          frame,
          (m) => socket.send(JSON.stringify(m)),
          (f) => fail(mapStartFailure(f), f.kind),
        );
        return step && "ready" in step ? { ready: { input: inputRate, output: step.ready } } : step;
      },
      release: () => where.zero(),
    };
  }

  /** A transport-level failure before ready, mapped as the protocol says (§8). */
  protected override startFailure(failure: StartFailure): ApiError {
    return mapV0Failure(failure);
  }

  /** The engine's failing message was logged (with its own kind) as it was read: refined by the close only. */
  protected override afterClose(error: ApiError, closed: Closed | null): ApiError {
    return refineByClose(error, closed);
  }

  protected open(socket: WireSocket, ctx: ConnectionContext, ready: Rates): EngineConnection {
    return new EngineConnection(socket, ctx, ready.input, ready.output);
  }

  /**
   * The protocol's keepalive: a JSON `ping` every 15 s, the peer dead after 30 s without a frame (the deps'
   * `keepalive` timings instead, where tests shorten them).
   */
  protected override keepalive(_socket: WireSocket, connection: EngineConnection): Keepalive {
    const timings = this.deps.keepalive ?? { intervalMs: PING_INTERVAL_MS, deadAfterMs: PEER_DEAD_AFTER_MS };
    return { ...timings, ping: () => connection.ping() };
  }
}

/** A message before `session.ready`: the handshake answer, a ping, or a failure. */
function readyStep(
  frame: Frame,
  send: (m: BridgeMessageV0) => void,
  fail: (f: V0StartFailure) => ApiError,
): HandshakeStep<number> {
  if (typeof frame !== "string") return { fail: fail({ kind: "protocol" }) };
  let msg: Record<string, unknown>;
  try {
    msg = JSON.parse(frame);
  } catch {
    return { fail: fail({ kind: "protocol" }) };
  }
  if (msg.type === "error") {
    if (msg.fatal === false) return undefined;
    return { fail: fail({ kind: "error", code: String(msg.code ?? "") }) };
  }
  if (msg.type === "ping") {
    send({ type: "pong", id: msg.id });
    return undefined;
  }
  if (msg.type !== "session.ready") return { fail: fail({ kind: "protocol" }) };
  const output = (msg as Partial<Extract<EngineMessage, { type: "session.ready" }>>).audio?.output;
  const rate = output?.sample_rate;
  if (
    output?.encoding !== PCM_ENCODING || (output.channels ?? 1) !== 1 || typeof rate !== "number" ||
    !Number.isInteger(rate) || rate < MIN_SAMPLE_RATE || rate > MAX_SAMPLE_RATE
  ) {
    return { fail: fail({ kind: "protocol" }) };
  }
  return { ready: rate };
}

/** One live V0 connection, after `session.ready`. */
class EngineConnection extends BridgeConnection {
  #engineEnded: string | null = null;
  #openResponse: string | null = null;
  #dropping = false;
  #pingId = 0;

  constructor(
    socket: WireSocket,
    ctx: ConnectionContext,
    readonly inputSampleRate: number,
    readonly outputSampleRate: number,
  ) {
    super(socket, ctx);
  }

  ping(): void {
    this.#send({ type: "ping", id: ++this.#pingId });
  }

  sendUserAudio(pcm: Uint8Array): void {
    // A stalled engine must not make the service buffer without bound: drop audio beyond ~2 s queued.
    if (!this.canSendAudio(this.inputSampleRate * 2)) return;
    this.socket.send(pcm.byteLength % 2 === 0 ? pcm : pcm.subarray(0, pcm.byteLength - 1));
  }

  override reportPlayed(responseId: string, playedMs: number, interrupted: boolean): void {
    this.#send({
      type: "response.played",
      response_id: responseId,
      played_ms: Math.max(0, Math.round(playedMs)),
      interrupted,
    });
  }

  protected override goodbye(reason: string): void {
    this.#send({ type: "session.end", reason });
  }

  #send(msg: BridgeMessageV0): void {
    this.sendJson(msg);
  }

  protected onFrame(frame: Frame): void {
    const events = this.ctx.events;
    if (typeof frame !== "string") {
      if (this.#openResponse === null || this.#dropping || this.closing) return;
      events.onAudio(pcmSamples(frame), this.#openResponse);
      return;
    }
    let msg: Record<string, unknown>;
    try {
      msg = JSON.parse(frame);
    } catch {
      return;
    }
    switch (msg.type as EngineMessage["type"]) {
      case "ping":
        return this.#send({ type: "pong", id: msg.id });
      case "response.started":
        this.#openResponse = String(msg.response_id ?? "");
        this.#dropping = false;
        return events.onResponseStarted(this.#openResponse);
      case "response.done": {
        const id = String(msg.response_id ?? "");
        if (id === this.#openResponse) this.#openResponse = null;
        return events.onResponseDone(id, String(msg.status ?? "completed"));
      }
      case "input.interrupt": {
        const id = String(msg.response_id ?? this.#openResponse ?? "");
        this.#dropping = true;
        return events.onInterrupt(id);
      }
      case "response.words": {
        // Word timings of the open response, for lip sync (malformed entries are skipped).
        const id = String(msg.response_id ?? "");
        if (id !== this.#openResponse || this.#dropping || !Array.isArray(msg.words)) return;
        const words = msg.words.slice(0, MAX_WORDS_PER_MESSAGE).filter(isTimedWord).map((w) => ({
          word: w.word.slice(0, 64),
          start_ms: w.start_ms,
          end_ms: w.end_ms,
        }));
        if (words.length) events.onAgentWords?.(id, words);
        return;
      }
      case "transcript":
        if ((msg.role === "user" || msg.role === "agent") && typeof msg.text === "string") {
          events.onTranscript({
            role: msg.role,
            turnId: String(msg.turn_id ?? ""),
            text: msg.text,
            final: msg.final === true,
          });
        }
        return;
      case "session.end":
        this.#engineEnded = typeof msg.reason === "string" ? msg.reason.slice(0, 64) : "engine_ended";
        return;
      case "tool_call": {
        const callId = msg.call_id;
        const send = (r: { output: unknown; isError: boolean }) => {
          if (this.closing) return;
          this.#send({
            type: "tool_result",
            call_id: String(callId),
            output: r.output ?? null,
            is_error: r.isError,
          });
        };
        const call = toolCall({ callId, name: msg.name, arguments: msg.arguments ?? {} }, send);
        if (call) events.onToolCall(call);
        else if (typeof callId === "string" && callId !== "") {
          send({ output: "tool_call needs a name and an object of arguments", isError: true });
        }
        return;
      }
      case "error":
        if (msg.code === "rate_limited" && msg.fatal === true) this.noteQuota();
        this.ctx.logger.info("engine error", {
          session_id: this.ctx.sessionId,
          code: String(msg.code ?? "").slice(0, 64),
          fatal: msg.fatal === true,
        });
        return;
    }
  }

  protected closure(c: Closed): ProviderClosure {
    if (c.code === CloseCode.normal) {
      return { kind: "ended_by_engine", reason: this.#engineEnded ?? "engine_closed" };
    }
    if (c.code === CloseCode.rateLimited) return { kind: "quota_exhausted", reason: "engine_rate_limited" };
    return {
      kind: "failed",
      reason: c.code === KEEPALIVE_CLOSE_CODE
        ? "engine_keepalive_timeout"
        : `engine_closed_${c.code || 1006}`,
    };
  }
}

/** A well-formed `response.words` entry. */
function isTimedWord(w: unknown): w is { word: string; start_ms: number; end_ms: number } {
  if (typeof w !== "object" || w === null) return false;
  const o = w as Record<string, unknown>;
  return typeof o.word === "string" && typeof o.start_ms === "number" && typeof o.end_ms === "number" &&
    Number.isFinite(o.start_ms) && Number.isFinite(o.end_ms) && o.start_ms >= 0 && o.end_ms >= o.start_ms;
}
