/**
 * The WebSocket connection an engine bridge talks through, and the two clients it can run on:
 *
 * - {@link wsTransport}, the npm `ws` client, for the vendor bridges: a refused upgrade's HTTP status and
 *   `Retry-After` are visible (a 401 and a 429 differ; Deno's built-in client reports both as the same
 *   network error), it speaks plain HTTP/1.1 upgrades, sends WebSocket ping frames, and trusts the bundled
 *   roots plus the configured extra CAs (`SVC_ENGINE_CA_FILE`).
 * - {@link nativeTransport}, Deno's built-in client, for the external engine: its `Deno.HttpClient` carries
 *   the trusted CAs, and its documented failure mapping (docs/engine-protocol-v0.md §8) is built on what
 *   this client reports.
 *
 * Both give an {@link EngineSocket}: frames as strings (text) or bytes (binary), queued until the owner
 * installs its handler (so no frame is lost between the handshake and the live connection), and a
 * `closed` promise that resolves once the transport is released. Failures before the upgrade completes are
 * {@link WireError}s that carry a {@link WireFailure} and never the URL, its query or a header.
 *
 * @module
 */
import type { Buffer } from "node:buffer";
import tls from "node:tls";
import { type Clock, systemClock } from "../../clock.ts";
// @deno-types="@types/ws"
import WebSocket from "ws";
import { settlesWithin } from "./wait.ts";

/** A received frame: text as a string, binary as bytes. */
export type Frame = string | Uint8Array;

/** How a connection closed. */
export interface Closed {
  /** The close code (1006 when the connection dropped without a close frame). */
  code: number;
  /** The close reason (never logged or returned: a peer may put anything in it). */
  reason: string;
}

/** Why a connection could not be opened. */
export type WireFailure =
  /** DNS, TCP or TLS failed: nothing answered the upgrade. */
  | { kind: "unreachable" }
  /** The peer answered the upgrade with another status (null when the client hides it). */
  | { kind: "refused"; status: number | null; retryAfterS: number | null }
  /** The peer's 101 broke the WebSocket handshake rules (subprotocol, accept key, extensions). */
  | { kind: "protocol" }
  /** The URL or headers cannot be used at all. */
  | { kind: "invalid" };

/** A failure to open a connection (its message names no host, URL or header). */
export class WireError extends Error {
  override name = "WireError";
  constructor(readonly failure: WireFailure) {
    super(`engine connection failed: ${failure.kind}`);
  }
}

/** What opening a connection takes. */
export interface OpenOptions {
  url: string;
  headers?: Record<string, string>;
  protocols?: string[];
  /**
   * The subprotocol is offered, but a peer that selects none is accepted too (as browsers and most
   * clients do; the `ws` client alone would refuse it).
   */
  protocolOptional?: boolean;
  /** Aborts the attempt; `open` then rejects with the signal's reason once the socket is released. */
  signal: AbortSignal;
}

/** A WebSocket client. */
export interface SocketTransport {
  /** Opens a connection (resolves once the upgrade completed). */
  open(options: OpenOptions): Promise<EngineSocket>;
}

/** Largest message accepted from an engine (vendors send base64 audio inside JSON). */
export const MAX_MESSAGE_BYTES = 16 * 1024 * 1024;
/**
 * How long a failed attempt waits for its socket to be released before giving up on it (a dropped `ws`
 * socket is released on the next tick; the wait is bounded so a start still answers within its deadline).
 */
const RELEASE_WAIT_MS = 200;

/** An open connection to an engine. */
export abstract class EngineSocket {
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

  /** Installs the frame handler (null: frames are queued until the next handler, which gets them first). */
  setHandler(handler: ((frame: Frame) => void) | null): void {
    this.#handler = handler;
    while (this.#handler && this.#queue.length) this.#handler(this.#queue.shift()!);
  }

  protected deliver(frame: Frame): void {
    if (this.#handler) this.#handler(frame);
    else if (this.#queue.length < 4096) this.#queue.push(frame);
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

// ---------- npm ws ----------

class WsEngineSocket extends EngineSocket {
  constructor(readonly ws: WebSocket) {
    super();
    ws.on("message", (data, isBinary) => this.deliver(isBinary ? bytesOf(data) : data.toString()));
    ws.on("pong", () => this.onPong?.());
    ws.on("error", () => {/* a close follows */});
    ws.on("close", (code, reason) => this.released({ code, reason: reason.toString() }));
  }
  get protocol(): string {
    return this.ws.protocol;
  }
  get bufferedAmount(): number {
    return this.ws.bufferedAmount;
  }
  get isOpen(): boolean {
    return this.ws.readyState === WebSocket.OPEN;
  }
  send(data: string | Uint8Array): void {
    if (this.isOpen) this.ws.send(data);
  }
  ping(): boolean {
    if (this.isOpen) this.ws.ping();
    return true;
  }
  close(code: number, reason?: string): void {
    if (this.ws.readyState === WebSocket.OPEN) this.ws.close(code, reason);
  }
  terminate(): void {
    if (this.ws.readyState !== WebSocket.CLOSED) this.ws.terminate();
  }
}

function bytesOf(data: WebSocket.RawData): Uint8Array {
  if (Array.isArray(data)) {
    const total = data.reduce((n, b) => n + b.byteLength, 0);
    const out = new Uint8Array(total);
    let o = 0;
    for (const b of data) {
      out.set(b, o);
      o += b.byteLength;
    }
    return out;
  }
  if (data instanceof ArrayBuffer) return new Uint8Array(data);
  const b = data as Buffer;
  return new Uint8Array(b.buffer, b.byteOffset, b.byteLength);
}

/** Seconds from a `Retry-After` header (delta seconds or an HTTP date), or null. */
export function parseRetryAfter(value: string | null | undefined, now = Date.now()): number | null {
  if (!value) return null;
  const v = value.trim();
  if (/^\d{1,9}$/.test(v)) return Number(v);
  const at = Date.parse(v);
  return Number.isNaN(at) ? null : Math.max(0, Math.ceil((at - now) / 1000));
}

/**
 * The npm `ws` client. With extra CAs, it trusts the bundled root certificates plus those (a `ca` option
 * replaces the default roots in this client, so they are added back).
 */
export function wsTransport(
  options: { caCerts?: readonly string[]; clock?: Clock } = {},
): SocketTransport {
  const caCerts = options.caCerts ?? [];
  const clock = options.clock ?? systemClock;
  const ca = caCerts.length ? [...tls.rootCertificates, ...caCerts] : undefined;
  return {
    open(o) {
      return new Promise((resolve, reject) => {
        let ws: WebSocket;
        try {
          ws = new WebSocket(o.url, o.protocols ?? [], {
            headers: o.headers,
            ...(ca ? { ca } : {}),
            perMessageDeflate: false,
            followRedirects: false,
            maxPayload: MAX_MESSAGE_BYTES,
          });
        } catch {
          reject(new WireError({ kind: "invalid" }));
          return;
        }
        let reached = false;
        let settled = false;
        const closed = new Promise<void>((r) => ws.once("close", () => r()));
        const fail = (err: unknown) => {
          if (settled) return;
          settled = true;
          o.signal.removeEventListener("abort", onAbort);
          ws.terminate();
          settlesWithin(clock, closed, RELEASE_WAIT_MS).then(() => reject(err));
        };
        const onAbort = () => fail(o.signal.reason);
        if (o.signal.aborted) return onAbort();
        o.signal.addEventListener("abort", onAbort, { once: true });
        ws.once("upgrade", (res) => {
          reached = true;
          // The response's headers are read by the client right after this event: an optional subprotocol the
          // peer did not select is taken as selected, so the client does not refuse the peer for it.
          const offered = o.protocols?.[0];
          if (o.protocolOptional && offered && res.headers["sec-websocket-protocol"] === undefined) {
            res.headers["sec-websocket-protocol"] = offered;
          }
        });
        ws.on("unexpected-response", (_req, res) => {
          const status = res.statusCode ?? null;
          const header = res.headers["retry-after"];
          res.resume();
          fail(new WireError({ kind: "refused", status, retryAfterS: parseRetryAfter(header) }));
        });
        ws.on("error", () => fail(new WireError({ kind: reached ? "protocol" : "unreachable" })));
        ws.once("open", () => {
          if (settled) return;
          settled = true;
          o.signal.removeEventListener("abort", onAbort);
          resolve(new WsEngineSocket(ws));
        });
      });
    },
  };
}

// ---------- Deno's built-in client ----------

/** Messages of Deno's WebSocket client meaning the server answered but refused the upgrade. */
const REFUSED_UPGRADE =
  /Didn't receive h2 alpn|NoApplicationProtocol|stream error received|HTTP\/2 not supported/i;

/**
 * What a failure message of Deno's built-in client means: a visible status (`ws://` only), a refused upgrade
 * whose status it hides (over `wss://` it retries a refused HTTP/1.1 upgrade over HTTP/2 and reports only
 * that retry's failure), or no answer at all.
 */
export function classifyNativeFailure(message: string): WireFailure {
  const status = /status code:?\s*(\d{3})/i.exec(message)?.[1];
  if (status !== undefined) return { kind: "refused", status: Number(status), retryAfterS: null };
  if (REFUSED_UPGRADE.test(message)) return { kind: "refused", status: null, retryAfterS: null };
  return { kind: "unreachable" };
}

class NativeEngineSocket extends EngineSocket {
  constructor(readonly ws: globalThis.WebSocket) {
    super();
    ws.onmessage = (e) =>
      this.deliver(typeof e.data === "string" ? e.data : new Uint8Array(e.data as ArrayBuffer));
    ws.onerror = () => {/* a close follows */};
    ws.onclose = (e) => this.released({ code: e.code || 1006, reason: e.reason });
  }
  get protocol(): string {
    return this.ws.protocol;
  }
  get bufferedAmount(): number {
    return this.ws.bufferedAmount;
  }
  get isOpen(): boolean {
    return this.ws.readyState === globalThis.WebSocket.OPEN;
  }
  send(data: string | Uint8Array): void {
    if (this.isOpen) this.ws.send(data);
  }
  ping(): boolean {
    return false;
  }
  close(code: number, reason?: string): void {
    const state = this.ws.readyState;
    if (state === globalThis.WebSocket.OPEN || state === globalThis.WebSocket.CONNECTING) {
      try {
        this.ws.close(code, reason);
      } catch { /* closing already */ }
    }
  }
  terminate(): void {
    this.close(1000);
  }
}

/** Deno's built-in WebSocket client (`httpClient` carries the trusted CAs). */
export function nativeTransport(httpClient?: Deno.HttpClient): SocketTransport {
  return {
    open(o) {
      return new Promise((resolve, reject) => {
        let ws: globalThis.WebSocket;
        try {
          ws = new globalThis.WebSocket(o.url, {
            protocols: o.protocols,
            headers: o.headers,
            client: httpClient,
          });
        } catch {
          reject(new WireError({ kind: "invalid" }));
          return;
        }
        ws.binaryType = "arraybuffer";
        let lastError = "";
        let abortReason: unknown = null;
        const onAbort = () => {
          abortReason = o.signal.reason;
          try {
            ws.close(1000);
          } catch { /* closing already */ }
        };
        if (o.signal.aborted) onAbort();
        else o.signal.addEventListener("abort", onAbort, { once: true });
        ws.onerror = (e) => {
          lastError = e instanceof ErrorEvent ? e.message : "error";
        };
        ws.onclose = () => {
          o.signal.removeEventListener("abort", onAbort);
          reject(abortReason ?? new WireError(classifyNativeFailure(lastError)));
        };
        ws.onopen = () => {
          o.signal.removeEventListener("abort", onAbort);
          if (abortReason !== null) return;
          resolve(new NativeEngineSocket(ws));
        };
      });
    },
  };
}
