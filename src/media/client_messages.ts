/**
 * The one dispatcher of a session's client text messages: JSON objects with a string `type`, sent by a
 * browser on the media WebSocket (`websocket_fmp4`) or on the SFU signalling WebSocket (`webrtc_sfu`).
 * Each feature registers the types it handles ({@link ClientMessages.on}), the session's media plane
 * registers them all in one place (`session_media.ts`):
 *
 * | type | handled by | answer |
 * |---|---|---|
 * | `tool_result` | tool calls (`tool_calls.ts`) | none |
 * | `player_stats` | the session's figures (`transports/player_messages.ts` → `src/metrics/`) | none |
 * | `clock_sync` | `transports/player_messages.ts` | `clock_sync` with `timeline_ms`, to the sender only |
 *
 * Both sockets hand every text frame to {@link ClientMessages.dispatch} with a way to answer the client
 * that sent it. A message of no registered type is left to the socket's own handling (the SFU's
 * signalling: `answer`, `publish`, `unpublish`), or ignored.
 *
 * Protocol: docs/media-plane.md ("Messages from the client").
 *
 * @module
 */

/** Largest client text message, bytes (UTF-16 code units counted: a bound, not an exact size). */
export const MAX_CLIENT_MESSAGE_CHARS = 64 * 1024;

/** A client message: a JSON object with a string `type`. */
export interface ClientMessage {
  type: string;
  [field: string]: unknown;
}

/** The client a message came from: its own socket, to answer it. */
export interface ClientMessageSender {
  /** Sends a text message to this client only (dropped when its socket is closing). */
  reply(text: string): void;
}

/** Handles one message of the type it was registered for. */
export type ClientMessageHandler = (message: ClientMessage, from: ClientMessageSender) => void;

/** Options of a registered type. */
export interface ClientMessageOptions {
  /**
   * Largest message of this type taken (UTF-16 code units, at most {@link MAX_CLIENT_MESSAGE_CHARS}); a
   * larger one is `invalid`.
   */
  maxChars?: number;
}

/** What {@link ClientMessages.dispatch} made of a text frame. */
export type DispatchResult =
  /** A registered handler took it. */
  | "handled"
  /** A JSON object of a type no handler is registered for (the socket may handle it itself). */
  | "unhandled"
  /**
   * Not a JSON object with a string `type`, larger than {@link MAX_CLIENT_MESSAGE_CHARS}, or larger than
   * its type's `maxChars`.
   */
  | "invalid";

interface Registered {
  handler: ClientMessageHandler;
  maxChars: number;
}

/** The dispatcher of one session's client messages. */
export class ClientMessages {
  readonly #handlers = new Map<string, Registered>();

  /** Registers the handler of `type` (one per type). Returns a function that removes it. */
  on(type: string, handler: ClientMessageHandler, options: ClientMessageOptions = {}): () => void {
    if (this.#handlers.has(type)) throw new Error(`a handler of ${type} is registered already`);
    const entry = { handler, maxChars: Math.min(MAX_CLIENT_MESSAGE_CHARS, options.maxChars ?? Infinity) };
    this.#handlers.set(type, entry);
    return () => {
      if (this.#handlers.get(type) === entry) this.#handlers.delete(type);
    };
  }

  /**
   * Parses one text frame of the client `from` and hands it to its type's handler (a handler that throws
   * is contained).
   */
  dispatch(text: string, from: ClientMessageSender): DispatchResult {
    if (text.length > MAX_CLIENT_MESSAGE_CHARS) return "invalid";
    let message: unknown;
    try {
      message = JSON.parse(text);
    } catch {
      return "invalid";
    }
    if (message === null || typeof message !== "object" || Array.isArray(message)) return "invalid";
    const type = (message as { type?: unknown }).type;
    if (typeof type !== "string") return "invalid";
    const entry = this.#handlers.get(type);
    if (!entry) return "unhandled";
    if (text.length > entry.maxChars) return "invalid";
    try {
      entry.handler(message as ClientMessage, from);
    } catch { /* one bad message does not end the client's socket */ }
    return "handled";
  }
}
