/**
 * An open WebSocket connection to an engine, as the bridges see it ({@link WireSocket}): frames given as
 * strings (text) or bytes (binary), queued until the owner installs its handler, sends, pings, the close
 * handshake, and a `closed` promise that resolves once the connection is released. The framing itself is
 * `websocket.ts`; opening one is `upgrade.ts`.
 *
 * @module
 */

/** A received frame: text as a string, binary as bytes. */
export type Frame = string | Uint8Array;

/** How a connection closed. */
export interface Closed {
  /** The close code (1006 when the connection dropped without a close frame, 1005 for one without code). */
  code: number;
  /** The close reason (never logged or returned: a peer may put anything in it). */
  reason: string;
}

/** An open connection to an engine. */
export abstract class WireSocket {
  #handler: ((frame: Frame) => void) | null = null;
  readonly #queue: Frame[] = [];
  /** Called for every pong frame (liveness). */
  onPong: (() => void) | null = null;
  /** Resolves once the connection is closed and released. */
  readonly closed: Promise<Closed>;
  #resolveClosed!: (c: Closed) => void;

  constructor() {
    this.closed = new Promise((resolve) => this.#resolveClosed = resolve);
  }

  /**
   * Installs the frame handler (null: frames are queued until the next handler, which gets them first). A
   * binary frame handed to the handler may be a view of the socket's read buffer, valid only during the
   * call (no array per engine message): a handler that keeps one copies it. Queued frames are copies.
   */
  setHandler(handler: ((frame: Frame) => void) | null): void {
    this.#handler = handler;
    while (this.#handler && this.#queue.length) this.#handler(this.#queue.shift()!);
  }

  protected deliver(frame: Frame): void {
    if (this.#handler) this.#handler(frame);
    else if (this.#queue.length < 4096) this.#queue.push(typeof frame === "string" ? frame : frame.slice());
  }

  protected released(c: Closed): void {
    this.#resolveClosed(c);
  }

  /** The subprotocol the peer selected ("" for none). */
  abstract readonly protocol: string;
  /** Bytes queued for sending. */
  abstract readonly bufferedAmount: number;
  /** Whether frames can be sent. */
  abstract readonly isOpen: boolean;
  /** Sends a text or binary frame (dropped when the connection is not open). */
  abstract send(data: string | Uint8Array): void;
  /** Sends a ping frame; false when this client cannot. */
  abstract ping(): boolean;
  /** Starts the close handshake. */
  abstract close(code: number, reason?: string): void;
  /** Drops the connection at once. */
  abstract terminate(): void;
}
