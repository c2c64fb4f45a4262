/**
 * The names of the media transports: how a session's avatar reaches the browser. A client asks for one of
 * {@link REQUESTED_TRANSPORTS} (`auto` lets the service choose, see `src/sessions/resolve_transport.ts`);
 * a session runs on one of {@link TRANSPORT_KINDS}, which its record keeps.
 *
 * @module
 */

/** The transports a session runs on, in documentation order. */
export const TRANSPORT_KINDS = ["websocket_fmp4", "webrtc_sfu"] as const;
/** One transport a session runs on. */
export type TransportKind = (typeof TRANSPORT_KINDS)[number];

/** The transports a client may ask for: `auto`, or one of {@link TRANSPORT_KINDS}. */
export const REQUESTED_TRANSPORTS = ["auto", ...TRANSPORT_KINDS] as const;
/** One transport a client may ask for. */
export type RequestedTransport = (typeof REQUESTED_TRANSPORTS)[number];

/**
 * Whether `value` names a transport a session runs on.
 *
 * @example Usage
 * ```ts
 * import { isTransportKind } from "./transports.ts";
 * isTransportKind("webrtc_sfu"); // true
 * isTransportKind("auto"); // false: `auto` is resolved at creation, never stored
 * ```
 */
export function isTransportKind(value: unknown): value is TransportKind {
  return (TRANSPORT_KINDS as readonly unknown[]).includes(value);
}
