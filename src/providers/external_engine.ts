/**
 * The bridge side of the external conversation engine protocol V0 (docs/engine-protocol-v0.md), on
 * Deno's native WebSocket client.
 *
 * Credentials (`url`, `auth_headers`) are read from the session's credential holder only for the
 * instant the socket is opened; engine failures during start are mapped to the service's codes as
 * documented in §8 of the protocol, with provider-agnostic messages.
 *
 * @module
 */
import { ApiError } from "../errors.ts";
import type { Logger } from "../log.ts";
import type {
  CloseResult,
  ConnectRequest,
  ProviderConnection,
  ProviderConnector,
  ProviderEvents,
} from "./types.ts";

/** The subprotocol the bridge offers. */
export const ENGINE_SUBPROTOCOL = "avatar-engine.v0";
/** Default user audio sample rate (Hz). */
export const DEFAULT_USER_SAMPLE_RATE = 24000;

/** Options of the external engine connector. */
export interface ExternalEngineConnectorOptions {
  /** HTTP client used for engine connections (e.g. trusting an extra CA). */
  httpClient?: Deno.HttpClient;
  logger: Logger;
  /** Keepalive ping interval (15 s per the protocol). */
  pingIntervalMs?: number;
  /** Peer considered dead after this long without a frame (30 s per the protocol). */
  deadAfterMs?: number;
}

/** Maps a failure before `session.ready` to the service's error (protocol §8). */
export function mapStartFailure(
  failure:
    | { kind: "network"; message: string }
    | { kind: "close"; code: number }
    | {
      kind: "error";
      code: string;
    }
    | { kind: "protocol" }
    | { kind: "timeout" },
): ApiError {
  const downstream = () =>
    new ApiError(
      "SVC_PROVIDER_DOWNSTREAM_FAILED",
      "The conversation engine refused or failed to start the session.",
    );
  switch (failure.kind) {
    case "timeout":
      return new ApiError(
        "SVC_PROVIDER_TIMEOUT",
        "The conversation engine did not complete its handshake in time.",
      );
    case "network": {
      const status = /status code:?\s*(\d{3})/i.exec(failure.message)?.[1];
      if (status !== undefined) return status === "503" ? unavailable() : downstream();
      // Over wss://, Deno's client retries a refused HTTP/1.1 upgrade over HTTP/2 and reports only that
      // retry's failure: the engine was reached (TCP and TLS succeeded) but refused the session.
      if (REFUSED_UPGRADE.test(failure.message)) return downstream();
      return unavailable();
    }
    case "close":
      if (failure.code === 1013) return unavailable();
      if (failure.code === 4003) return misconfigured();
      if (failure.code === 4029) return quota();
      return downstream();
    case "error":
      if (failure.code === "bad_audio_format" || failure.code === "unsupported_protocol") {
        return misconfigured();
      }
      if (failure.code === "rate_limited") return quota();
      return downstream();
    case "protocol":
      return downstream();
  }
}

/** Messages of Deno's WebSocket client meaning the server answered but refused the upgrade. */
const REFUSED_UPGRADE =
  /Didn't receive h2 alpn|NoApplicationProtocol|stream error received|HTTP\/2 not supported/i;

function unavailable(): ApiError {
  return new ApiError("SVC_PROVIDER_UNAVAILABLE", "The conversation engine could not be reached.");
}

function misconfigured(): ApiError {
  return new ApiError(
    "SVC_PROVIDER_MISCONFIGURED",
    "The conversation engine does not accept the session's protocol version or audio format.",
  );
}
function quota(): ApiError {
  return new ApiError("SVC_RATE_LIMIT_PROVIDER_QUOTA", "The conversation engine's quota is exhausted.");
}

/** Connects sessions to customer engines speaking protocol V0. */
export class ExternalEngineConnector implements ProviderConnector {
  constructor(readonly options: ExternalEngineConnectorOptions) {}

  connect(request: ConnectRequest): Promise<ProviderConnection> {
    const { logger } = this.options;
    return new Promise((resolve, reject) => {
      let ws: WebSocket;
      let inputRate = DEFAULT_USER_SAMPLE_RATE;
      try {
        ws = request.credentials.use((c) => {
          inputRate = typeof c.user_sample_rate === "number" ? c.user_sample_rate : DEFAULT_USER_SAMPLE_RATE;
          return new WebSocket(String(c.url), {
            protocols: [ENGINE_SUBPROTOCOL],
            headers: c.auth_headers as Record<string, string>,
            client: this.options.httpClient,
          });
        });
      } catch {
        reject(
          new ApiError("SVC_PROVIDER_MISCONFIGURED", "The conversation engine URL or headers are unusable."),
        );
        return;
      }
      ws.binaryType = "arraybuffer";
      let settled = false;
      let lastError = "";
      const timer = setTimeout(() => fail({ kind: "timeout" }), request.timeoutMs);
      const fail = (f: Parameters<typeof mapStartFailure>[0]) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        const err = mapStartFailure(f);
        logger.info("engine start failed", { session_id: request.sessionId, code: err.code, kind: f.kind });
        if (ws.readyState === WebSocket.OPEN || ws.readyState === WebSocket.CONNECTING) {
          try {
            ws.close(1000);
          } catch { /* already closing */ }
        }
        // Let the socket release before the caller tears the session down.
        if (ws.readyState === WebSocket.CLOSED) reject(err);
        else {
          const fallback = setTimeout(() => reject(err), 2000);
          ws.addEventListener("close", () => {
            clearTimeout(fallback);
            reject(err);
          }, { once: true });
        }
      };
      ws.onerror = (e) => {
        lastError = e instanceof ErrorEvent ? e.message : "error";
      };
      ws.onopen = () => {
        if (ws.protocol !== "" && ws.protocol !== ENGINE_SUBPROTOCOL) return fail({ kind: "protocol" });
        ws.send(JSON.stringify({
          type: "session.start",
          protocol: "v0",
          session_id: request.sessionId,
          audio: {
            input: { encoding: "pcm_s16le", sample_rate: inputRate, channels: 1 },
            output: { encodings: ["pcm_s16le"], preferred_sample_rate: 24000 },
          },
          metadata: request.metadata,
        }));
      };
      ws.onmessage = (e) => {
        if (settled) return;
        if (typeof e.data !== "string") return fail({ kind: "protocol" });
        let msg: Record<string, unknown>;
        try {
          msg = JSON.parse(e.data);
        } catch {
          return fail({ kind: "protocol" });
        }
        if (msg.type === "error") {
          if (msg.fatal === false) return;
          return fail({ kind: "error", code: String(msg.code ?? "") });
        }
        if (msg.type === "ping") return ws.send(JSON.stringify({ type: "pong", id: msg.id }));
        if (msg.type !== "session.ready") return fail({ kind: "protocol" });
        const output =
          (msg.audio as { output?: { encoding?: string; sample_rate?: number; channels?: number } })
            ?.output;
        const rate = output?.sample_rate;
        if (
          output?.encoding !== "pcm_s16le" || (output.channels ?? 1) !== 1 || typeof rate !== "number" ||
          !Number.isInteger(rate) || rate < 8000 || rate > 48000
        ) {
          return fail({ kind: "protocol" });
        }
        settled = true;
        clearTimeout(timer);
        resolve(new EngineConnection(ws, request.sessionId, inputRate, rate, request.events, this.options));
      };
      ws.onclose = (e) => {
        if (settled) return;
        if (e.code === 0 || e.code === 1006) fail({ kind: "network", message: lastError });
        else fail({ kind: "close", code: e.code });
      };
    });
  }
}

/** One live V0 connection, after `session.ready`. */
class EngineConnection implements ProviderConnection {
  readonly released: Promise<void>;
  #closing: { graceful: boolean } | null = null;
  #engineEnded: string | null = null;
  #openResponse: string | null = null;
  #dropping = false;
  #lastFrameAt = Date.now();
  #pingTimer: ReturnType<typeof setInterval>;
  #pingId = 0;
  #onClosed!: (e: CloseEvent) => void;

  constructor(
    readonly ws: WebSocket,
    readonly sessionId: string,
    readonly inputSampleRate: number,
    readonly outputSampleRate: number,
    readonly events: ProviderEvents,
    readonly options: ExternalEngineConnectorOptions,
  ) {
    this.released = new Promise((resolve) => {
      this.#onClosed = (e) => {
        clearInterval(this.#pingTimer);
        resolve();
        this.#handleClose(e);
      };
    });
    ws.onclose = (e) => this.#onClosed(e);
    ws.onmessage = (e) => this.#handleMessage(e);
    const pingEvery = options.pingIntervalMs ?? 15_000;
    const deadAfter = options.deadAfterMs ?? 30_000;
    this.#pingTimer = setInterval(() => {
      if (ws.readyState !== WebSocket.OPEN) return;
      if (Date.now() - this.#lastFrameAt > deadAfter) {
        ws.close(4008, "keepalive timeout");
        return;
      }
      ws.send(JSON.stringify({ type: "ping", id: ++this.#pingId }));
    }, pingEvery);
  }

  sendUserAudio(pcm: Uint8Array): void {
    if (this.ws.readyState !== WebSocket.OPEN || this.#closing) return;
    // A stalled engine must not make the service buffer without bound: drop audio beyond ~2 s queued.
    if (this.ws.bufferedAmount > this.inputSampleRate * 2 * 2) return;
    this.ws.send(pcm.byteLength % 2 === 0 ? pcm : pcm.subarray(0, pcm.byteLength - 1));
  }

  reportPlayed(responseId: string, playedMs: number, interrupted: boolean): void {
    this.#send({
      type: "response.played",
      response_id: responseId,
      played_ms: Math.max(0, Math.round(playedMs)),
      interrupted,
    });
  }

  async close(options: { graceful: boolean; timeoutMs: number; reason: string }): Promise<CloseResult> {
    if (this.ws.readyState === WebSocket.CLOSED) return { clean: true };
    this.#closing = { graceful: options.graceful };
    if (!options.graceful) {
      try {
        this.ws.close(1000, "session ended");
      } catch { /* closing already */ }
      return { clean: true };
    }
    this.#send({ type: "session.end", reason: options.reason });
    let timer: ReturnType<typeof setTimeout> | undefined;
    const timedOut = await Promise.race([
      this.released.then(() => false),
      new Promise<boolean>((r) => (timer = setTimeout(() => r(true), options.timeoutMs))),
    ]);
    clearTimeout(timer);
    if (!timedOut) return { clean: true };
    try {
      this.ws.close(1000, "teardown timeout");
    } catch { /* closing already */ }
    return { clean: false, detail: "The conversation engine did not close within the teardown timeout." };
  }

  #send(msg: Record<string, unknown>): void {
    if (this.ws.readyState === WebSocket.OPEN) this.ws.send(JSON.stringify(msg));
  }

  #handleMessage(e: MessageEvent): void {
    this.#lastFrameAt = Date.now();
    if (typeof e.data !== "string") {
      if (this.#openResponse === null || this.#dropping || this.#closing) return;
      const buf = e.data as ArrayBuffer;
      const samples = new Int16Array(buf, 0, Math.floor(buf.byteLength / 2));
      this.events.onAudio(samples, this.#openResponse);
      return;
    }
    let msg: Record<string, unknown>;
    try {
      msg = JSON.parse(e.data);
    } catch {
      return;
    }
    switch (msg.type) {
      case "ping":
        return this.#send({ type: "pong", id: msg.id });
      case "response.started":
        this.#openResponse = String(msg.response_id ?? "");
        this.#dropping = false;
        return this.events.onResponseStarted(this.#openResponse);
      case "response.done": {
        const id = String(msg.response_id ?? "");
        if (id === this.#openResponse) this.#openResponse = null;
        return this.events.onResponseDone(id, String(msg.status ?? "completed"));
      }
      case "input.interrupt": {
        const id = String(msg.response_id ?? this.#openResponse ?? "");
        this.#dropping = true;
        return this.events.onInterrupt(id);
      }
      case "transcript":
        if ((msg.role === "user" || msg.role === "agent") && typeof msg.text === "string") {
          this.events.onTranscript({
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
      case "error":
        this.options.logger.info("engine error", {
          session_id: this.sessionId,
          code: String(msg.code ?? "").slice(0, 64),
          fatal: msg.fatal === true,
        });
        return;
    }
  }

  #handleClose(e: CloseEvent): void {
    if (this.#closing) return;
    if (e.code === 1000) {
      this.events.onClosed({ kind: "ended_by_engine", reason: this.#engineEnded ?? "engine_closed" });
    } else {
      this.events.onClosed({
        kind: "failed",
        reason: e.code === 4008 ? "engine_keepalive_timeout" : `engine_closed_${e.code || 1006}`,
      });
    }
  }
}
