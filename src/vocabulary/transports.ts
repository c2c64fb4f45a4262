/**
 * The transport registry: how a session's avatar reaches the browser, one entry per transport, written
 * once. A client asks for one of {@link REQUESTED_TRANSPORTS} (`auto` lets the service choose, see
 * `src/sessions/resolve_transport.ts`); a session runs on one of {@link TRANSPORT_KINDS}, which its record
 * keeps.
 *
 * What derives from {@link TRANSPORTS}: the `TransportKind` type and the OpenAPI enums (`schemas.ts`), the
 * CLI's `--transport` list, the listing facet and the webhook payload's `transport`; `auto`'s preference
 * and the refusal of a transport no worker serves (`resolve_transport.ts`, `availableTransports()` of the
 * session host); which `stream_metadata` fields a session fills ({@link emptyEndpoints}, the schema's
 * descriptions); each transport's client socket (its path, subprotocols and tokens: the one upgrade helper
 * `src/api/transport_socket.ts` serves every entry the worker side opens); the demo page's menu and the
 * SDK modules it serves. The worker side's half of each
 * entry (how a session's transport is opened and a client attached to it) is
 * `src/media/transports/registry.ts`, keyed by the same names.
 *
 * The API side, the CLI and the worker side all read it; it imports only the error catalog's codes.
 *
 * @module
 */
import type { ErrorCode } from "../errors.ts";

/** What the registry says of one transport. */
export interface TransportEntry {
  /** What the demo page's menu calls it. */
  readonly label: string;
  /**
   * The SDK's browser module of its player, beside `sdk/player.js` (which picks it from the session's
   * `stream_metadata`), served under `/sdk/`; absent: `player.js` plays it itself.
   */
  readonly browserModule?: string;
  /** The client socket's path; `{session_id}` is the session's id. */
  readonly socketPath: string;
  /**
   * The socket's subprotocols (offered next to `bearer.<token>`), in the server's order of preference: the
   * first one the client offers is selected, and the transport's `attach` sees which (`SocketPeer.protocol`).
   */
  readonly subprotocols: readonly string[];
  /** The token purposes the socket accepts (`client`: the client token; `media`: the session token). */
  readonly tokenPurposes: readonly ("client" | "media")[];
  /** The name of the socket's clients in the logs (`media client connected`). */
  readonly clientName: string;
  /** The answer (400) to a request that is no WebSocket upgrade at all. */
  readonly notASocket: string;
  /** The answer (400) to a malformed WebSocket handshake. */
  readonly badHandshake: string;
  /**
   * The `stream_metadata` fields a session on this transport fills (the others are null, or empty for
   * `ice_servers`).
   */
  readonly fills: readonly EndpointField[];
  /** Rank of `auto`'s preference among the transports a worker serves (lower first). */
  readonly autoRank: number;
  /**
   * When only some workers serve it (its media server is configured): the refusal of an explicit request
   * while none does. Absent: every worker with a media plane serves it.
   */
  readonly unavailable?: { readonly code: ErrorCode; readonly message: string };
}

/** The `stream_metadata` fields of a session's media endpoints. */
export type EndpointField = "media_url" | "sfu_endpoint" | "ice_servers";

/**
 * The media socket's subprotocol of the lighter framing (one binary frame per encoded unit, for the SDK's
 * WebCodecs player; `src/media/transports/ws_fmp4/frames.ts`), preferred to fMP4's `avatar-media.v0`.
 */
export const FRAMES_SUBPROTOCOL = "avatar-media.frames.v0";

const HANDSHAKE = "The WebSocket handshake is invalid (see RFC 6455 section 4.1 and docs/media-plane.md).";
const SFU_NOT_A_SOCKET =
  "This is the SFU signalling WebSocket: connect with a WebSocket client (see RFC 6455 and docs/media-plane.md).";

/** Every transport, in documentation order. */
export const TRANSPORTS = {
  websocket_fmp4: {
    label: "fMP4 over WebSocket",
    socketPath: "/media/v0/sessions/{session_id}",
    subprotocols: [FRAMES_SUBPROTOCOL, "avatar-media.v0"],
    tokenPurposes: ["client", "media"],
    clientName: "media",
    notASocket: "This is the media WebSocket: connect with a WebSocket client (see docs/media-plane.md).",
    badHandshake: HANDSHAKE,
    fills: ["media_url"],
    autoRank: 1,
  },
  webrtc_sfu: {
    label: "WebRTC through the SFU",
    browserModule: "player_webrtc.js",
    socketPath: "/sfu/v0/sessions/{session_id}",
    subprotocols: ["avatar-sfu.v0"],
    tokenPurposes: ["media"],
    clientName: "sfu",
    notASocket: SFU_NOT_A_SOCKET,
    badHandshake: SFU_NOT_A_SOCKET,
    fills: ["sfu_endpoint", "ice_servers"],
    autoRank: 0,
    unavailable: {
      code: "SVC_SFU_NOT_CONFIGURED",
      message: "The webrtc_sfu transport is not configured on this deployment; use websocket_fmp4 or auto.",
    },
  },
} as const satisfies Record<string, TransportEntry>;

/** One transport a session runs on. */
export type TransportKind = keyof typeof TRANSPORTS;
/** The transports a session runs on, in documentation order. */
export const TRANSPORT_KINDS = Object.keys(TRANSPORTS) as [TransportKind, ...TransportKind[]];

/** The transports a client may ask for: `auto`, or one of {@link TRANSPORT_KINDS}. */
export const REQUESTED_TRANSPORTS = ["auto", ...TRANSPORT_KINDS] as [
  "auto",
  ...TransportKind[],
];
/** One transport a client may ask for. */
export type RequestedTransport = "auto" | TransportKind;

/** The registry's entry of a transport. */
export function transportEntry(kind: TransportKind): TransportEntry {
  return TRANSPORTS[kind];
}

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

/**
 * The transports every worker with a media plane serves (no entry of theirs needs a media server).
 *
 * @example Usage
 * ```ts
 * import { alwaysServed } from "./transports.ts";
 * alwaysServed(); // ["websocket_fmp4"]
 * ```
 */
export function alwaysServed(): TransportKind[] {
  return TRANSPORT_KINDS.filter((k) => !transportEntry(k).unavailable);
}

/** The transport `auto` picks among those served, or the first always-served one when none is. */
export function autoTransport(served: readonly TransportKind[]): TransportKind {
  const ranked = [...TRANSPORT_KINDS].sort((a, b) => transportEntry(a).autoRank - transportEntry(b).autoRank);
  return ranked.find((k) => served.includes(k)) ?? alwaysServed()[0];
}

/** The URL of a session's client socket on a worker whose public origin is `origin` (http or https). */
export function socketUrl(kind: TransportKind, origin: string, sessionId: string): string {
  return origin.replace(/\/+$/, "").replace(/^http/, "ws") +
    transportEntry(kind).socketPath.replace("{session_id}", sessionId);
}

/** The transports whose sessions fill `field` of `stream_metadata`. */
export function transportsFilling(field: EndpointField): TransportKind[] {
  return TRANSPORT_KINDS.filter((k) => transportEntry(k).fills.includes(field));
}

/** `stream_metadata`'s endpoint fields when nothing serves a session's media (no media plane). */
export function emptyEndpoints(): { media_url: null; sfu_endpoint: null; ice_servers: [] } {
  return { media_url: null, sfu_endpoint: null, ice_servers: [] };
}

/** A client socket's other end, as a transport sees it (the upgrade helper wraps the WebSocket). */
export interface SocketPeer {
  /** The subprotocol selected from the entry's `subprotocols` ("" when the client offered none of them). */
  readonly protocol: string;
  /** A query parameter of the socket's URL (e.g. the media socket's `video=0`). */
  query(name: string): string | undefined;
  /** Sends a frame (binary for bytes, text for a string); nothing when the socket is no longer open. */
  send(data: string | Uint8Array): void;
  /** Bytes queued and not yet sent. */
  readonly bufferedAmount: number;
  /** Closes the socket (a no-op once closing). */
  close(code: number, reason: string): void;
}

/** A client attached to a session's transport. */
export interface AttachedClient {
  /** A frame from the client (binary as bytes). */
  receive(data: string | Uint8Array): void;
  /** The socket closed. */
  detach(): void;
}

/**
 * A transport's client sockets on one worker (built by the worker side, served by the one upgrade helper):
 * finds a session's transport of this kind for a verified token's project.
 */
export interface TransportSockets {
  readonly kind: TransportKind;
  /**
   * The session's transport when it runs here on this transport for `projectId`: a function attaching a
   * client once its socket is open (null when the transport refuses it, e.g. too many clients); null when
   * no such session runs here.
   */
  find(sessionId: string, projectId: string): ((peer: SocketPeer) => AttachedClient | null) | null;
}
