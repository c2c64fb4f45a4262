/**
 * The reference engine's WebSocket server: TLS listener, bearer-token check before the upgrade, subprotocol
 * selection, and the registry of live sessions.
 *
 * @module
 */

import { bearerTokenMatches } from "./auth.ts";
import type { ConversationMode } from "./conversation.ts";
import { CloseCode, MAX_SAMPLE_RATE, MIN_SAMPLE_RATE, SUBPROTOCOL } from "../src/speech/v0_protocol.ts";
import { EngineSession, type SessionTimings } from "./session.ts";
import type { EngineSessionStats } from "./stats.ts";
import { EspeakTts, type Tts } from "./tts.ts";
import type { VadOptions } from "../src/speech/vad.ts";

/** Options of {@link startReferenceEngine}. */
export interface ReferenceEngineOptions {
  /** Interface to listen on, default `"127.0.0.1"`. */
  hostname?: string;
  /** TCP port, default 0 (ephemeral). */
  port?: number;
  /** Upgrade path, default `"/v0"`. */
  path?: string;
  /** Server certificate and PKCS#8 key, PEM (see `loadOrCreateEngineTls`). */
  tls: { certPem: string; keyPem: string };
  /** Required bearer token (`Authorization: Bearer <token>`), visible ASCII without spaces. */
  authToken: string;
  /** `answer` (default) or `echo`. */
  mode?: ConversationMode;
  /** Greeting spoken when a session is ready; null disables it. Default: a short English greeting. */
  greeting?: string | null;
  /** A client tool each answer calls first and whose result it says (`--demo-tool`); default none. */
  demoTool?: string | null;
  /** espeak-ng voice of the default synthesiser, default `"en-us"`. Ignored when `tts` is given. */
  voice?: string;
  /** Rate of the engine's audio, default 24000 (8000–48000). */
  outputSampleRate?: number;
  /** Speech synthesiser, default espeak-ng with `voice`. */
  tts?: Tts;
  /** Structured log sink; never receives credentials. Default: no logging. */
  log?: (event: string, fields?: Record<string, unknown>) => void;
  /** Handshake and keepalive timing (defaults 10 s / 15 s / 30 s as in the protocol). */
  timings?: SessionTimings;
  /** VAD tuning (defaults: 20 ms frames, 60 ms to start, 600 ms of silence to end a turn). */
  vad?: Omit<VadOptions, "sampleRate">;
  /** How far ahead of real time response audio is sent, default 200 ms. */
  leadMs?: number;
  /**
   * Sessions beyond this many open ones are refused in-band (upgrade, then close 1013 "try again later", which
   * the bridge maps to the retryable `SVC_PROVIDER_UNAVAILABLE`), default 32.
   */
  maxSessions?: number;
  /**
   * How bad credentials are refused: `"http_401"` (default) answers the upgrade request with HTTP 401;
   * `"close_4001"` accepts the upgrade, sends `error unauthorized` (fatal) and closes with 4001. Use the latter
   * for clients that negotiate HTTP/2 (RFC 8441), such as Deno's `WebSocket` over `wss://`: `Deno.serve` resets
   * an HTTP/2 extended CONNECT stream that is answered with anything but an upgrade, so such a client sees a
   * network error instead of the 401 status.
   */
  authFailure?: "http_401" | "close_4001";
}

/** Totals returned by {@link ReferenceEngine.stats}. */
export interface ReferenceEngineStats {
  /** WebSocket upgrades accepted since start. */
  connections: number;
  /** Upgrade requests refused with 401. */
  rejected_auth: number;
  /** One entry per accepted connection (open and closed), oldest first (the last 1000 are kept). */
  sessions: EngineSessionStats[];
}

/** A running reference engine. */
export interface ReferenceEngine {
  /** URL for the bridge, e.g. `wss://localhost:8788/v0` (host `localhost` so the certificate matches). */
  readonly url: string;
  /** The TCP port actually bound. */
  readonly port: number;
  /** Snapshot of the counters. */
  stats(): ReferenceEngineStats;
  /** Closes every session (code 1001), waits for them, then stops the listener. Idempotent. */
  close(): Promise<void>;
}

/** Default greeting text. */
export const DEFAULT_GREETING = "Hello! I am the reference engine. Say something and I will answer.";

const MAX_KEPT_SESSIONS = 1000;
const LOOPBACK_OR_ANY = new Set(["127.0.0.1", "localhost", "::1", "0.0.0.0", "::", "[::1]", "[::]"]);

function urlHost(hostname: string): string {
  if (LOOPBACK_OR_ANY.has(hostname)) return "localhost";
  return hostname.includes(":") && !hostname.startsWith("[") ? `[${hostname}]` : hostname;
}

function randomId(prefix: string): string {
  const bytes = crypto.getRandomValues(new Uint8Array(9));
  return prefix + btoa(String.fromCharCode(...bytes)).replace(/\+/g, "-").replace(/\//g, "_");
}

function validate(options: ReferenceEngineOptions): void {
  if (!/^[\x21-\x7e]{1,4096}$/.test(options.authToken ?? "")) {
    throw new TypeError("authToken must be 1-4096 visible ASCII characters without spaces");
  }
  if (!options.tls?.certPem || !options.tls?.keyPem) {
    throw new TypeError("tls.certPem and tls.keyPem are required");
  }
  const rate = options.outputSampleRate ?? 24000;
  if (!Number.isInteger(rate) || rate < MIN_SAMPLE_RATE || rate > MAX_SAMPLE_RATE) {
    throw new RangeError(`outputSampleRate must be an integer within ${MIN_SAMPLE_RATE}-${MAX_SAMPLE_RATE}`);
  }
  const path = options.path ?? "/v0";
  if (!path.startsWith("/")) throw new TypeError("path must start with /");
  const port = options.port ?? 0;
  if (!Number.isInteger(port) || port < 0 || port > 65535) {
    throw new RangeError("port must be within 0-65535");
  }
  if (options.authFailure !== undefined && !["http_401", "close_4001"].includes(options.authFailure)) {
    throw new TypeError('authFailure must be "http_401" or "close_4001"');
  }
  if (options.mode !== undefined && options.mode !== "answer" && options.mode !== "echo") {
    throw new TypeError('mode must be "answer" or "echo"');
  }
}

/**
 * Starts the reference engine: an HTTPS listener that upgrades authorised requests on `path` to V0 sessions.
 *
 * @param options listener, TLS, credentials and behaviour
 * @returns the running engine once it listens
 */
export async function startReferenceEngine(options: ReferenceEngineOptions): Promise<ReferenceEngine> {
  validate(options);
  const hostname = options.hostname ?? "127.0.0.1";
  const path = options.path ?? "/v0";
  const outputSampleRate = options.outputSampleRate ?? 24000;
  const mode = options.mode ?? "answer";
  const greeting = options.greeting === undefined ? DEFAULT_GREETING : options.greeting;
  const tts = options.tts ?? new EspeakTts({ voice: options.voice ?? "en-us" });
  const maxSessions = options.maxSessions ?? 32;
  const log = options.log ?? (() => {});
  const token = options.authToken;

  const authFailure = options.authFailure ?? "http_401";
  const open = new Set<EngineSession>();
  const rejecting = new Set<Promise<void>>();
  const history: EngineSession[] = [];
  let connections = 0;
  let rejectedAuth = 0;
  let closing: Promise<void> | null = null;

  const handler = async (request: Request, info: Deno.ServeHandlerInfo<Deno.NetAddr>): Promise<Response> => {
    const remote = info.remoteAddr.hostname;
    const url = new URL(request.url);
    if (url.pathname !== path) return new Response("not found\n", { status: 404 });
    if (request.headers.get("upgrade")?.toLowerCase() !== "websocket") {
      return new Response("WebSocket upgrade required\n", { status: 426, headers: { upgrade: "websocket" } });
    }
    if (closing) return rejectAfterUpgrade(request, "shutting_down");
    if (!(await bearerTokenMatches(request.headers.get("authorization"), token))) {
      rejectedAuth++;
      log("auth_rejected", { remote, via: authFailure });
      if (authFailure === "close_4001") return rejectAfterUpgrade(request, "unauthorized");
      return new Response("unauthorized\n", {
        status: 401,
        headers: { "www-authenticate": 'Bearer realm="reference-engine"' },
      });
    }
    if (open.size >= maxSessions) {
      log("session_limit", { open: open.size });
      return rejectAfterUpgrade(request, "busy");
    }
    const offered = (request.headers.get("sec-websocket-protocol") ?? "").split(",").map((p) => p.trim());
    const { socket, response } = Deno.upgradeWebSocket(request, {
      idleTimeout: 0, // keepalive is the protocol's ping/pong (§5)
      ...(offered.includes(SUBPROTOCOL) ? { protocol: SUBPROTOCOL } : {}),
    });
    connections++;
    const session = new EngineSession({
      socket,
      engineSessionId: randomId("eng_"),
      outputSampleRate,
      mode,
      greeting,
      tts,
      vad: options.vad,
      leadMs: options.leadMs,
      demoTool: options.demoTool ?? null,
      log,
      ...options.timings,
    });
    open.add(session);
    history.push(session);
    if (history.length > MAX_KEPT_SESSIONS) history.splice(0, history.length - MAX_KEPT_SESSIONS);
    log("connection_accepted", {
      engine_session_id: session.stats.engine_session_id,
      remote,
      subprotocol: offered.includes(SUBPROTOCOL) ? SUBPROTOCOL : null,
    });
    session.closed.then(() => open.delete(session));
    return response;
  };

  /**
   * Accepts the upgrade only to refuse the session in-band: bad credentials → `error unauthorized` + close
   * 4001; too many sessions or shutting down → close 1013 (try again later). Deno's WebSocket client cannot
   * see the status of a refused upgrade over wss, so an in-band close is the only way a Deno bridge learns why.
   */
  const rejectAfterUpgrade = (request: Request, why: "unauthorized" | "busy" | "shutting_down"): Response => {
    const offered = (request.headers.get("sec-websocket-protocol") ?? "").split(",").map((p) => p.trim());
    const { socket, response } = Deno.upgradeWebSocket(request, {
      idleTimeout: 0,
      ...(offered.includes(SUBPROTOCOL) ? { protocol: SUBPROTOCOL } : {}),
    });
    const closed = new Promise<void>((resolve) => socket.addEventListener("close", () => resolve()));
    socket.addEventListener("open", () => {
      if (why === "unauthorized") {
        socket.send(
          JSON.stringify({
            type: "error",
            code: "unauthorized",
            message: "invalid credentials",
            fatal: true,
          }),
        );
        socket.close(CloseCode.unauthorized, "unauthorized");
      } else {
        socket.close(CloseCode.tryAgainLater, why === "busy" ? "too many sessions" : "shutting down");
      }
    });
    socket.addEventListener("message", () => {}); // nothing is processed
    socket.addEventListener("error", () => {});
    rejecting.add(closed);
    closed.then(() => rejecting.delete(closed));
    return response;
  };

  const listening = Promise.withResolvers<Deno.NetAddr>();
  const server = Deno.serve({
    hostname,
    port: options.port ?? 0,
    cert: options.tls.certPem,
    key: options.tls.keyPem,
    onListen: (addr) => listening.resolve(addr as Deno.NetAddr),
    onError: (err) => {
      log("http_error", { error: String(err) });
      return new Response("internal error\n", { status: 500 });
    },
  }, handler);
  const addr = await Promise.race([
    listening.promise,
    server.finished.then(() => server.addr as Deno.NetAddr),
  ]);
  const port = addr.port;
  const url = `wss://${urlHost(hostname)}:${port}${path}`;
  log("listening", { url, hostname, port, mode, output_sample_rate: outputSampleRate });

  const closeAll = async (): Promise<void> => {
    const sessions = [...open];
    for (const session of sessions) session.close(CloseCode.goingAway, "engine shutting down");
    let timer: ReturnType<typeof setTimeout> | undefined;
    const timeout = new Promise<void>((resolve) => (timer = setTimeout(resolve, 5000)));
    await Promise.race([Promise.all([...sessions.map((s) => s.closed), ...rejecting]), timeout]);
    clearTimeout(timer);
    await server.shutdown();
    log("stopped", { url });
  };

  return {
    url,
    port,
    stats: () => ({
      connections,
      rejected_auth: rejectedAuth,
      sessions: history.map((s) => ({ ...s.stats })),
    }),
    close: () => (closing ??= closeAll()),
  };
}
