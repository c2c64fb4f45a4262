/**
 * The one dispatcher of a session's client text messages: JSON objects with a string `type`, sent by a
 * browser on the media WebSocket (`websocket_fmp4`) or on the SFU signalling WebSocket (`webrtc_sfu`).
 * Each feature registers the types it handles ({@link ClientMessages.on}: `tool_result` for tool calls;
 * others add theirs); both sockets hand every text frame to {@link ClientMessages.dispatch}. A message of
 * no registered type is left to the socket's own handling (the SFU's signalling), or ignored.
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

/** Handles one message of the type it was registered for. */
export type ClientMessageHandler = (message: ClientMessage) => void;

/** What {@link ClientMessages.dispatch} made of a text frame. */
export type DispatchResult =
  /** A registered handler took it. */
  | "handled"
  /** A JSON object of a type no handler is registered for (the socket may handle it itself). */
  | "unhandled"
  /** Not a JSON object with a string `type`, or larger than {@link MAX_CLIENT_MESSAGE_CHARS}. */
  | "invalid";

/** The dispatcher of one session's client messages. */
export class ClientMessages {
  readonly #handlers = new Map<string, ClientMessageHandler>();

  /** Registers the handler of `type` (one per type). Returns a function that removes it. */
  on(type: string, handler: ClientMessageHandler): () => void {
    if (this.#handlers.has(type)) throw new Error(`a handler of ${type} is registered already`);
    this.#handlers.set(type, handler);
    return () => {
      if (this.#handlers.get(type) === handler) this.#handlers.delete(type);
    };
  }

  /** Parses one text frame and hands it to its type's handler (a handler that throws is contained). */
  dispatch(text: string): DispatchResult {
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
    const handler = this.#handlers.get(type);
    if (!handler) return "unhandled";
    try {
      handler(message as ClientMessage);
    } catch { /* one bad message does not end the client's socket */ }
    return "handled";
  }
}
