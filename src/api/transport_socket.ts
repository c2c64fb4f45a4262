/**
 * The client sockets of the transports (outside `/v1`; see docs/media-plane.md), one route per transport
 * this process serves, all over one upgrade helper: `GET /media/v0/sessions/{session_id}` (the fMP4 media
 * WebSocket of `websocket_fmp4`) and `GET /sfu/v0/sessions/{session_id}` (the SFU signalling WebSocket of
 * `webrtc_sfu`). Each route's path, subprotocol, accepted tokens and answers come from the transport
 * registry (`src/vocabulary/transports.ts`); attaching a client to a session's transport is the worker
 * side's (`TransportSockets`, built by the media plane), so this module loads nothing of the media plane.
 *
 * The token is presented as the WebSocket subprotocol `bearer.<token>` next to the transport's own
 * subprotocol (a browser cannot set headers on a WebSocket, and a subprotocol keeps the token out of URLs
 * and access logs), or as the `token` query parameter. It is checked before anything is sent; a refused
 * connection is upgraded and closed at once with a documented code (4401 expired, 4403 refused, 4404 no
 * such session here), which a browser can read, unlike an HTTP status.
 *
 * @module
 */
import type { OpenAPIHono } from "@hono/zod-openapi";
import type { Context } from "hono";
import type { TokenService } from "../auth/tokens.ts";
import { ApiError } from "../errors.ts";
import { MEDIA_CLOSE } from "../vocabulary/close_codes.ts";
import type { Logger } from "../log.ts";
import { telemetry } from "../telemetry/state.ts";
import {
  type AttachedClient,
  type SocketPeer,
  transportEntry,
  type TransportSockets,
} from "../vocabulary/transports.ts";
import type { AppEnv } from "./app_env.ts";

/** Prefix of the subprotocol that carries the token. */
export const TOKEN_SUBPROTOCOL_PREFIX = "bearer.";

/** Seconds without any frame (pongs included) before the server drops a client. */
const IDLE_TIMEOUT_S = 30;

/** Header values as comma-separated, lowercased tokens. */
function headerTokens(value: string | null): string[] {
  return (value ?? "").split(",").map((t) => t.trim().toLowerCase());
}

/**
 * True for a well-formed WebSocket opening handshake (RFC 6455 section 4.1): GET, `Upgrade: websocket`,
 * `Connection: Upgrade`, version 13 and a `Sec-WebSocket-Key` of 16 bytes in base64. Anything else answers
 * 400 with the flat error body instead of failing inside the upgrade.
 */
export function isWebSocketHandshake(req: Request): boolean {
  const h = req.headers;
  return req.method === "GET" && headerTokens(h.get("upgrade")).includes("websocket") &&
    headerTokens(h.get("connection")).includes("upgrade") && h.get("sec-websocket-version") === "13" &&
    /^[A-Za-z0-9+/]{22}==$/.test(h.get("sec-websocket-key") ?? "");
}

/** Dependencies of the socket routes. */
export interface TransportSocketDeps {
  tokens: TokenService;
  /** The client sockets of the transports this process serves (the media plane's). */
  sockets: readonly TransportSockets[];
  logger: Logger;
}

/** Registers one socket route per transport in `deps.sockets`. */
export function registerTransportSockets(app: OpenAPIHono<AppEnv>, deps: TransportSocketDeps): void {
  for (const sockets of deps.sockets) {
    const path = transportEntry(sockets.kind).socketPath.replace("{session_id}", ":session_id");
    app.get(path, (c) => upgradeClientSocket(c, sockets, deps));
  }
}

/**
 * The one upgrade of a transport's client socket: the handshake checked (400 otherwise), the token
 * verified, the session's transport found for the token's project, then the socket upgraded and either
 * closed with the refusal's code or attached to the transport.
 */
async function upgradeClientSocket(
  c: Context<AppEnv>,
  sockets: TransportSockets,
  deps: TransportSocketDeps,
): Promise<Response> {
  const entry = transportEntry(sockets.kind);
  if (!headerTokens(c.req.header("upgrade") ?? null).includes("websocket")) {
    throw new ApiError("SVC_INVALID_REQUEST", entry.notASocket);
  }
  if (!isWebSocketHandshake(c.req.raw)) throw new ApiError("SVC_INVALID_REQUEST", entry.badHandshake);
  const sessionId = c.req.param("session_id")!;
  const offered = (c.req.header("sec-websocket-protocol") ?? "").split(",").map((p) => p.trim()).filter(
    Boolean,
  );
  const fromProtocol = offered.find((p) => p.startsWith(TOKEN_SUBPROTOCOL_PREFIX));
  // With tracing on, Deno's span of this request records its URL: a `?token=` there would be exported,
  // so only the subprotocol is accepted then (src/telemetry/tracing.ts).
  const token = fromProtocol
    ? fromProtocol.slice(TOKEN_SUBPROTOCOL_PREFIX.length)
    : telemetry().tracing
    ? undefined
    : c.req.query("token");

  let refusal: { code: number; reason: string } | null = null;
  let attach: ((peer: SocketPeer) => AttachedClient | null) | null = null;
  const verdict = token
    ? await deps.tokens.verify(token, { purposes: [...entry.tokenPurposes], sessionId })
    : { ok: false as const, reason: "invalid" as const };
  if (!verdict.ok) {
    refusal = verdict.reason === "expired" ? MEDIA_CLOSE.TOKEN_EXPIRED : MEDIA_CLOSE.TOKEN_REFUSED;
  } else {
    // Only a session of this process on this route's transport is served here (another answers 4404).
    attach = sockets.find(sessionId, verdict.claims.pid);
    if (!attach) refusal = MEDIA_CLOSE.SESSION_NOT_FOUND;
  }

  // The first of the transport's subprotocols, in its order of preference, that the client offers.
  const protocol = entry.subprotocols.find((p) => offered.includes(p));
  let upgraded: ReturnType<typeof Deno.upgradeWebSocket>;
  try {
    upgraded = Deno.upgradeWebSocket(c.req.raw, { protocol, idleTimeout: IDLE_TIMEOUT_S });
  } catch (err) {
    // A handshake Deno refuses (its checks may be stricter than the ones above) is the client's error.
    if (err instanceof TypeError) throw new ApiError("SVC_INVALID_REQUEST", entry.badHandshake);
    throw err;
  }
  const { socket, response } = upgraded;
  const name = entry.clientName;
  socket.binaryType = "arraybuffer";
  socket.onopen = () => {
    if (refusal) {
      deps.logger.info(`${name} client refused`, {
        session_id: sessionId.slice(0, 64),
        reason: refusal.reason,
      });
      socket.close(refusal.code, refusal.reason);
      return;
    }
    const peer: SocketPeer = {
      protocol: protocol ?? "",
      query: (name) => c.req.query(name),
      send: (data) => {
        if (socket.readyState === WebSocket.OPEN) socket.send(data);
      },
      get bufferedAmount() {
        return socket.bufferedAmount;
      },
      close: (code, reason) => {
        if (socket.readyState === WebSocket.OPEN || socket.readyState === WebSocket.CONNECTING) {
          socket.close(code, reason);
        }
      },
    };
    const attached = attach!(peer);
    if (!attached) return;
    deps.logger.info(`${name} client connected`, { session_id: sessionId });
    socket.onmessage = (e) => {
      if (e.data instanceof ArrayBuffer) attached.receive(new Uint8Array(e.data));
      else if (typeof e.data === "string") attached.receive(e.data);
    };
    socket.onclose = (e) => {
      attached.detach();
      deps.logger.info(`${name} client disconnected`, { session_id: sessionId, code: e.code });
    };
  };
  socket.onerror = () => {};
  return response;
}
