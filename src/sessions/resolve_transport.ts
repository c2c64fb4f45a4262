/**
 * Transport resolution: `auto` prefers the SFU when one is configured and otherwise uses fMP4 over
 * WebSocket; `webrtc_sfu` without an SFU fails closed (no fallback).
 *
 * @module
 */
import { ApiError } from "../errors.ts";
import type { RequestedTransport, TransportKind } from "../vocabulary/transports.ts";

/** Resolves the requested transport against whether an SFU is configured. */
export function resolveTransport(requested: RequestedTransport, sfuConfigured: boolean): TransportKind {
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
