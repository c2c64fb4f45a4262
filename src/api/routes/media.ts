/**
 * The media-plane WebSocket, `GET /media/v0/sessions/{session_id}` (outside `/v1`; see
 * docs/media-plane.md): a session's browser connects with its `client_token` (or `session_token`),
 * receives the fMP4 stream and sends its microphone audio.
 *
 * The token is presented as the WebSocket subprotocol `bearer.<token>` next to `avatar-media.v0` (a
 * browser cannot set headers on a WebSocket, and a subprotocol keeps the token out of URLs and access
 * logs), or as the `token` query parameter. It is checked before anything is sent; a refused connection
 * is upgraded and closed at once with a documented code (4401 expired, 4403 refused, 4404 no such
 * session here), which a browser can read, unlike an HTTP status.
 *
 * @module
 */
import type { OpenAPIHono } from "@hono/zod-openapi";
import type { TokenService } from "../../auth/tokens.ts";
import { ApiError } from "../../errors.ts";
import type { Logger } from "../../log.ts";
import { MEDIA_CLOSE } from "../../media/close_codes.ts";
import type { ClientMessages } from "../../media/client_messages.ts";
import type { MediaPlane } from "../../media/media_plane.ts";
import type { MediaClient } from "../../media/transports/ws_fmp4/fanout.ts";
import { WsFmp4Transport } from "../../media/transports/ws_fmp4/transport.ts";
import type { AppEnv } from "../app_env.ts";
import { telemetry } from "../../telemetry/state.ts";

/** The media WebSocket's subprotocol. */
export const MEDIA_SUBPROTOCOL = "avatar-media.v0";
/** Prefix of the subprotocol that carries the token. */
export const TOKEN_SUBPROTOCOL_PREFIX = "bearer.";

/** Seconds without any frame (pongs included) before the server drops a media client. */
const IDLE_TIMEOUT_S = 30;

const HANDSHAKE_MESSAGE =
  "The WebSocket handshake is invalid (see RFC 6455 section 4.1 and docs/media-plane.md).";

/** Header values as comma-separated, lowercased tokens. */
function tokens(value: string | null): string[] {
  return (value ?? "").split(",").map((t) => t.trim().toLowerCase());
}

/**
 * True for a well-formed WebSocket opening handshake (RFC 6455 section 4.1): GET, `Upgrade: websocket`,
 * `Connection: Upgrade`, version 13 and a `Sec-WebSocket-Key` of 16 bytes in base64. Anything else answers
 * 400 with the flat error body instead of failing inside the upgrade.
 */
export function isWebSocketHandshake(req: Request): boolean {
  const h = req.headers;
  return req.method === "GET" && tokens(h.get("upgrade")).includes("websocket") &&
    tokens(h.get("connection")).includes("upgrade") && h.get("sec-websocket-version") === "13" &&
    /^[A-Za-z0-9+/]{22}==$/.test(h.get("sec-websocket-key") ?? "");
}

/** Dependencies of the media route. */
export interface MediaRouteDeps {
  tokens: TokenService;
  plane: MediaPlane;
  logger: Logger;
}

/** Registers the media WebSocket route. */
export function registerMediaRoutes(app: OpenAPIHono<AppEnv>, deps: MediaRouteDeps): void {
  app.get("/media/v0/sessions/:session_id", async (c) => {
    if (!tokens(c.req.header("upgrade") ?? null).includes("websocket")) {
      throw new ApiError(
        "SVC_INVALID_REQUEST",
        "This is the media WebSocket: connect with a WebSocket client (see docs/media-plane.md).",
      );
    }
    if (!isWebSocketHandshake(c.req.raw)) throw new ApiError("SVC_INVALID_REQUEST", HANDSHAKE_MESSAGE);
    const sessionId = c.req.param("session_id");
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
    let target: WsFmp4Transport | null = null;
    let messages: ClientMessages | null = null;
    const verdict = token
      ? await deps.tokens.verify(token, { purposes: ["client", "media"], sessionId })
      : { ok: false as const, reason: "invalid" as const };
    if (!verdict.ok) {
      refusal = verdict.reason === "expired" ? MEDIA_CLOSE.TOKEN_EXPIRED : MEDIA_CLOSE.TOKEN_REFUSED;
    } else {
      // Only a websocket_fmp4 session of this process is served here (a webrtc_sfu one answers 4404).
      const live = deps.plane.get(sessionId);
      const transport = live?.media.transport;
      if (live && live.projectId === verdict.claims.pid && transport instanceof WsFmp4Transport) {
        target = transport;
        messages = live.media.clientMessages;
      } else refusal = MEDIA_CLOSE.SESSION_NOT_FOUND;
    }

    const protocol = offered.includes(MEDIA_SUBPROTOCOL) ? MEDIA_SUBPROTOCOL : undefined;
    let upgraded: ReturnType<typeof Deno.upgradeWebSocket>;
    try {
      upgraded = Deno.upgradeWebSocket(c.req.raw, { protocol, idleTimeout: IDLE_TIMEOUT_S });
    } catch (err) {
      // A handshake Deno refuses (its checks may be stricter than the ones above) is the client's error.
      if (err instanceof TypeError) throw new ApiError("SVC_INVALID_REQUEST", HANDSHAKE_MESSAGE);
      throw err;
    }
    const { socket, response } = upgraded;
    socket.binaryType = "arraybuffer";
    socket.onopen = () => {
      if (refusal) {
        deps.logger.info("media client refused", {
          session_id: sessionId.slice(0, 64),
          reason: refusal.reason,
        });
        socket.close(refusal.code, refusal.reason);
        return;
      }
      const client: MediaClient = {
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
      const attached = target!.attach(client);
      if (!attached) return;
      deps.logger.info("media client connected", { session_id: sessionId });
      socket.onmessage = (e) => {
        if (e.data instanceof ArrayBuffer) attached.receive(new Uint8Array(e.data));
        // Text frames are the client's messages (`tool_result`, …), by type; unknown ones are ignored.
        else if (typeof e.data === "string") messages!.dispatch(e.data);
      };
      socket.onclose = (e) => {
        attached.detach();
        deps.logger.info("media client disconnected", { session_id: sessionId, code: e.code });
      };
    };
    socket.onerror = () => {};
    return response;
  });
}
