/**
 * The WebSocket client every bridge opens its engine with: the HTTP/1.1 upgrade (RFC 6455 §4) over the byte
 * socket (`dial.ts`: TCP, TLS), its request assembled from parts — non-secret text and borrowed credential
 * bytes — into one buffer written once the TLS handshake is complete and zeroed as soon as it is written
 * (`http1.ts`), and its answer checked: a refusal keeps its status and `Retry-After` (a 401 and a 429
 * differ), no redirect is followed (a 3xx is a refusal), a subprotocol is negotiated (it may be optional: a
 * peer that selects none is accepted), no extension is accepted (no permessage-deflate), and the accept key
 * must match. The open connection is a framed socket (`websocket.ts`). Every step honours the caller's abort
 * signal; failures say where they happened (`failure.ts`) and never carry the URL, its query or a header.
 *
 * @module
 */
import { type Clock, systemClock } from "../../clock.ts";
import { ByteBuffer } from "../../auth/credential_bytes.ts";
import { Dialer } from "./dial.ts";
import { type Endpoint, type HeaderLine, plainText } from "./endpoint.ts";
import type { WireSocket } from "./wire_socket.ts";
import { parseRetryAfter, WireError, type WireFailure } from "./failure.ts";
import { type Head, readHead, writeHead } from "./http1.ts";
import { InputTurns } from "./input_turns.ts";
import { ClientWebSocket } from "./websocket.ts";

/** What opening a connection takes. */
export interface OpenOptions {
  endpoint: Endpoint;
  headers?: HeaderLine[];
  protocols?: string[];
  /** The subprotocol is offered, but a peer that selects none is accepted too (as browsers do). */
  protocolOptional?: boolean;
  /** Aborts the attempt; `open` then rejects with the signal's reason once the socket is released. */
  signal: AbortSignal;
}

/** A WebSocket client. */
export interface WireClient {
  /** Opens a connection (resolves once the upgrade completed). */
  open(options: OpenOptions): Promise<WireSocket>;
}

const GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";

/** A fresh `Sec-WebSocket-Key`. */
function randomKey(): string {
  return crypto.getRandomValues(new Uint8Array(16)).toBase64();
}

/** Options of {@link wireClient}. */
export interface WireClientOptions {
  /** Extra CA certificates (PEM) trusted besides the bundled roots (`SVC_ENGINE_CA_FILE`). */
  caCerts?: readonly string[];
  /** Clock of the close waits. */
  clock?: Clock;
  /**
   * The fairness gate every socket of this client reads through: the process's one (`BridgeDeps.inputTurns`).
   * Default: a gate of this client's own.
   */
  inputTurns?: InputTurns;
}

/** The WebSocket client every bridge uses. */
export function wireClient(options: WireClientOptions = {}): WireClient {
  const caCerts = options.caCerts ?? [];
  const clock = options.clock ?? systemClock;
  const turns = options.inputTurns ?? new InputTurns();
  return {
    async open(o) {
      if (!plainText(o.endpoint.target) || !plainText([o.endpoint.host])) {
        throw new WireError({ kind: "invalid" });
      }
      const key = randomKey();
      const headers: HeaderLine[] = [
        { name: "Upgrade", value: ["websocket"] },
        { name: "Connection", value: ["Upgrade"] },
        { name: "Sec-WebSocket-Key", value: [key] },
        { name: "Sec-WebSocket-Version", value: ["13"] },
        ...(o.protocols?.length ? [{ name: "Sec-WebSocket-Protocol", value: [o.protocols.join(", ")] }] : []),
        ...(o.headers ?? []),
      ];
      const request = new ByteBuffer(1024);
      // Built before connecting: a header that cannot be sent fails the attempt before any traffic.
      writeHead(request, "GET", o.endpoint, headers);
      const dialer = new Dialer(o.signal);
      let conn: Deno.Conn;
      let head: Head;
      try {
        conn = await dialer.send(o.endpoint, caCerts, request);
        head = await readHead(conn);
      } catch (err) {
        request.zero();
        dialer.drop();
        dialer.done();
        if (dialer.aborted || o.signal.aborted) throw o.signal.reason;
        throw err;
      }
      dialer.done();
      const selected = head.headers.get("sec-websocket-protocol");
      const offered = o.protocols ?? [];
      let failure: WireFailure | null = null;
      if (head.status !== 101) {
        failure = {
          kind: "refused",
          status: head.status,
          retryAfterS: parseRetryAfter(head.headers.get("retry-after")),
        };
      } else if (
        head.headers.get("upgrade")?.toLowerCase() !== "websocket" ||
        head.headers.get("sec-websocket-accept") !== await acceptOf(key) ||
        head.headers.has("sec-websocket-extensions") ||
        (selected !== undefined && !offered.includes(selected)) ||
        (selected === undefined && offered.length > 0 && !o.protocolOptional)
      ) failure = { kind: "protocol" };
      if (failure) {
        head.rest.fill(0);
        dialer.drop();
        throw new WireError(failure);
      }
      return new ClientWebSocket(conn, head.rest, selected ?? "", clock, turns);
    },
  };
}

/** The `Sec-WebSocket-Accept` a peer must answer for `key` (RFC 6455 §4.2.2). */
async function acceptOf(key: string): Promise<string> {
  const digest = await crypto.subtle.digest("SHA-1", new TextEncoder().encode(key + GUID));
  return new Uint8Array(digest).toBase64();
}
