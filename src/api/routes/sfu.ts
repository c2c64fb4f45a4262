/**
 * The SFU signalling WebSocket, `GET /sfu/v0/sessions/{session_id}` (outside `/v1`; a session's
 * `stream_metadata.sfu_endpoint`; see docs/media-plane.md, "WebRTC through the SFU"): the browser of a
 * `webrtc_sfu` session exchanges SDP with the worker here, and the worker speaks to Janus for it, so
 * Janus's API, secrets, mountpoint pin and room pin never reach the client.
 *
 * Authorization: the session's `session_token` (purpose `media`) only — a client token, another
 * session's or project's token, or an expired one is refused — presented as the subprotocol
 * `bearer.<token>` next to `avatar-sfu.v0`, or as `?token=`. Refusals are upgraded and closed at once with
 * the media WebSocket's codes (4401, 4403, 4404, 4429).
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
import { type SignalSocket, WebRtcSfuTransport } from "../../media/transports/webrtc_sfu/transport.ts";
import type { AppEnv } from "../app_env.ts";
import { isWebSocketHandshake, TOKEN_SUBPROTOCOL_PREFIX } from "./media.ts";
import { telemetry } from "../../telemetry/state.ts";

/** The SFU signalling WebSocket's subprotocol. */
export const SFU_SUBPROTOCOL = "avatar-sfu.v0";

/** Seconds without any frame (pongs included) before the server drops a signalling client. */
const IDLE_TIMEOUT_S = 30;

/** Dependencies of the SFU route. */
export interface SfuRouteDeps {
  tokens: TokenService;
  plane: MediaPlane;
  logger: Logger;
}

/** Registers the SFU signalling WebSocket route. */
export function registerSfuRoutes(app: OpenAPIHono<AppEnv>, deps: SfuRouteDeps): void {
  app.get("/sfu/v0/sessions/:session_id", async (c) => {
    if (!isWebSocketHandshake(c.req.raw)) {
      throw new ApiError(
        "SVC_INVALID_REQUEST",
        "This is the SFU signalling WebSocket: connect with a WebSocket client (see RFC 6455 and docs/media-plane.md).",
      );
    }
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
    let target: WebRtcSfuTransport | null = null;
    let messages: ClientMessages | null = null;
    const verdict = token
      ? await deps.tokens.verify(token, { purposes: ["media"], sessionId })
      : { ok: false as const, reason: "invalid" as const };
    if (!verdict.ok) {
      refusal = verdict.reason === "expired" ? MEDIA_CLOSE.TOKEN_EXPIRED : MEDIA_CLOSE.TOKEN_REFUSED;
    } else {
      const live = deps.plane.get(sessionId);
      const transport = live?.media.transport;
      if (live && live.projectId === verdict.claims.pid && transport instanceof WebRtcSfuTransport) {
        target = transport;
        messages = live.media.clientMessages;
      } else refusal = MEDIA_CLOSE.SESSION_NOT_FOUND;
    }

    const protocol = offered.includes(SFU_SUBPROTOCOL) ? SFU_SUBPROTOCOL : undefined;
    const { socket, response } = Deno.upgradeWebSocket(c.req.raw, { protocol, idleTimeout: IDLE_TIMEOUT_S });
    socket.onopen = () => {
      if (refusal) {
        deps.logger.info("sfu client refused", {
          session_id: sessionId.slice(0, 64),
          reason: refusal.reason,
        });
        socket.close(refusal.code, refusal.reason);
        return;
      }
      const signal: SignalSocket = {
        send: (text) => {
          if (socket.readyState === WebSocket.OPEN) socket.send(text);
        },
        close: (code, reason) => {
          if (socket.readyState === WebSocket.OPEN || socket.readyState === WebSocket.CONNECTING) {
            socket.close(code, reason);
          }
        },
      };
      const attached = target!.attach(signal);
      if (!attached) return;
      deps.logger.info("sfu client connected", { session_id: sessionId });
      socket.onmessage = (e) => {
        // The session's client messages (`tool_result`, …) by type; the rest is signalling.
        if (typeof e.data === "string" && messages!.dispatch(e.data) !== "handled") attached.receive(e.data);
      };
      socket.onclose = (e) => {
        attached.detach();
        deps.logger.info("sfu client disconnected", { session_id: sessionId, code: e.code });
      };
    };
    socket.onerror = () => {};
    return response;
  });
}
