/**
 * Transport resolution: `auto` prefers the SFU when one is configured and otherwise uses fMP4 over
 * WebSocket; `webrtc_sfu` without an SFU fails closed (no fallback).
 *
 * @module
 */
import { ApiError } from "../errors.ts";
import type { ResolvedTransport } from "../kv/sessions.ts";

/** Transports a client may request. */
export const TRANSPORTS = ["auto", "websocket_fmp4", "webrtc_sfu"] as const;
/** One requested transport. */
export type Transport = (typeof TRANSPORTS)[number];

/** Resolves the requested transport against whether an SFU is configured. */
export function resolveTransport(requested: Transport, sfuConfigured: boolean): ResolvedTransport {
  if (requested === "webrtc_sfu") {
    if (!sfuConfigured) {
      throw new ApiError(
        "SVC_SFU_NOT_CONFIGURED",
        "The webrtc_sfu transport is not configured on this deployment; use websocket_fmp4 or auto.",
      );
    }
    return "webrtc_sfu";
  }
  if (requested === "auto" && sfuConfigured) return "webrtc_sfu";
  return "websocket_fmp4";
}
