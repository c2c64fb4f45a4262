/**
 * Transport resolution, from the transport registry (`src/vocabulary/transports.ts`): `auto` takes the
 * served transport it ranks first (the SFU when a worker serves it, else fMP4 over WebSocket); a transport
 * only some workers serve, asked for while none does, fails closed with its entry's refusal (no fallback).
 *
 * @module
 */
import { ApiError } from "../errors.ts";
import {
  autoTransport,
  type RequestedTransport,
  transportEntry,
  type TransportKind,
} from "../vocabulary/transports.ts";

/** Resolves the requested transport against the transports some worker serves. */
export function resolveTransport(
  requested: RequestedTransport,
  served: readonly TransportKind[],
): TransportKind {
  if (requested === "auto") return autoTransport(served);
  const unavailable = transportEntry(requested).unavailable;
  if (unavailable && !served.includes(requested)) throw new ApiError(unavailable.code, unavailable.message);
  return requested;
}
