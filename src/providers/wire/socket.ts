/**
 * The engine bridges' network client: one HTTP/1.1 + WebSocket (RFC 6455) client over `Deno.connect` and
 * `Deno.startTls`, used by every bridge and by vendor3's signed-URL mint, written so that credentials go
 * to the wire as bytes and never become JavaScript strings. The request (line, headers, the URL's query) is
 * assembled from parts — non-secret text and borrowed credential bytes — into one buffer this module owns,
 * written to the socket once the TLS handshake is complete (so the TLS stack encrypts it at once rather
 * than queueing plaintext), and zeroed as soon as it is written.
 *
 * What it keeps of the npm `ws` client the vendor bridges used before: a refused upgrade's status and
 * `Retry-After` (a 401 and a 429 differ), no redirect followed (a 3xx is a refusal), subprotocol
 * negotiation (a subprotocol may be optional: a peer that selects none is accepted), WebSocket ping/pong,
 * close codes and reasons, fragmented messages, masked client frames, no extensions (no permessage-
 * deflate: a peer that answers with one is refused), messages up to {@link MAX_MESSAGE_BYTES}, the bundled
 * root certificates plus the configured extra CAs (`SVC_ENGINE_CA_FILE`, via `caCerts`), and failures that
 * say where they happened (before any answer: `unreachable`; a refusal; a broken handshake: `protocol`) and
 * never carry the URL, its query or a header. Every step honours the caller's abort signal (the session's
 * whole connect deadline): TCP connect, TLS handshake, the upgrade's answer.
 *
 * An {@link EngineSocket} gives frames as strings (text) or bytes (binary), queued until the owner installs
 * its handler, and a `closed` promise that resolves once the connection is released.
 *
 * @module
 */
import { type Clock, systemClock } from "../../clock.ts";
import { ByteBuffer, latin1Bytes } from "../../auth/credential_bytes.ts";
import { splitUrl, urlHost, writeTarget } from "../../auth/credential_url.ts";

/** A received frame: text as a string, binary as bytes. */
export type Frame = string | Uint8Array;

/** How a connection closed. */
export interface Closed {
  /** The close code (1006 when the connection dropped without a close frame, 1005 for one without code). */
  code: number;
  /** The close reason (never logged or returned: a peer may put anything in it). */
  reason: string;
}

/** Why a connection could not be opened. */
export type WireFailure =
  /** DNS, TCP or TLS failed: nothing answered the request. */
  | { kind: "unreachable" }
  /** The peer answered the upgrade with another status (null when the client hides it). */
  | { kind: "refused"; status: number | null; retryAfterS: number | null }
  /** The peer's 101 broke the WebSocket handshake rules (subprotocol, accept key, extensions). */
  | { kind: "protocol" }
  /** The URL or headers cannot be used at all. */
  | { kind: "invalid" };

/** Where a connection is. */
type SocketState = "open" | "closing" | "closed";

/** The read buffer an engine connection starts with (it grows for larger messages). */
const READ_BUFFER_BYTES = 16 * 1024;

/**
 * Engine input yields to the process's timers when it has kept the event loop busy. An engine that sends
 * a burst (a vendor's audio ahead of real time; engines catching up after a stall), and above all a
 * hundred sessions' engines whose reads complete in the same turn of the event loop, are processed as one
 * unbroken run of continuations (each message feeds the lip sync and the playout): measured at up to 250
 * ms, during which every session's media clock (its silence, its animation, its frames) waited. After
 * {@link InputTurns.budgetMs} of input processed without a gap, the next message waits for one shared
 * `setTimeout(0)`: the timers already due run first. Input that arrives now and then never waits.
 */
export class InputTurns {
  #busySince = 0;
  #last = -Infinity;
  #gate: Promise<void> | null = null;
  /** Times the input yielded (a counter). */
  yields = 0;

  constructor(
    readonly budgetMs = 4,
    /** Input this far apart (ms) is not one run: the event loop was free in between. */
    readonly gapMs = 1,
    readonly now: () => number = () => performance.now(),
  ) {}

  /** Called before each message is handled: a promise to wait for first, or null to go on. */
  next(): Promise<void> | null {
    if (this.#gate) return this.#gate;
    const now = this.now();
    if (now - this.#last > this.gapMs) this.#busySince = now;
    this.#last = now;
    if (now - this.#busySince < this.budgetMs) return null;
    this.yields++;
    this.#gate = new Promise((resolve) =>
      setTimeout(() => {
        this.#gate = null;
        this.#busySince = this.#last = this.now();
        resolve();
      }, 0)
    );
    return this.#gate;
  }
}

/** The process's engine input (every engine connection's messages). */
export const inputTurns = new InputTurns();

/** A failure to open a connection (its message names no host, URL or header). */
export class WireError extends Error {
  override name = "WireError";
  constructor(readonly failure: WireFailure) {
    super(`engine connection failed: ${failure.kind}`);
  }
}

/**
 * A piece of a request: non-secret ASCII text, or bytes — borrowed from a credential holder, copied into
 * the request buffer and never kept.
 */
export type Part = string | Uint8Array;

/** Where a request goes. The host and port are text (they are where the client connects). */
export interface Endpoint {
  /** TLS (`wss:`, `https:`) or plain TCP (`ws:`, `http:`; loopback engines in tests). */
  secure: boolean;
  /** The host to connect to (a name or an IP address; IPv6 without brackets). */
  hostname: string;
  port: number;
  /** The `Host` header (`url.host`). */
  host: string;
  /** The request target (path and query), its byte parts written as they are (already URL-encoded). */
  target: Part[];
}

/** One request header: a name (text) and its value's parts (bytes are UTF-8, sent as Latin-1 bytes). */
export interface HeaderLine {
  name: string;
  value: Part[];
}

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
export interface VendorSocket {
  /** Opens a connection (resolves once the upgrade completed). */
  open(options: OpenOptions): Promise<EngineSocket>;
}

/** Largest message accepted from an engine (vendors send base64 audio inside JSON). */
export const MAX_MESSAGE_BYTES = 16 * 1024 * 1024;
/** Largest response head accepted. */
const MAX_HEAD_BYTES = 64 * 1024;
/** How long a closing connection waits for the peer to end the TCP connection after the close frames. */
const CLOSE_WAIT_MS = 1000;
const GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";

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

/** Seconds from a `Retry-After` header (delta seconds or an HTTP date), or null. */
export function parseRetryAfter(value: string | null | undefined, now = Date.now()): number | null {
  if (!value) return null;
  const v = value.trim();
  if (/^\d{1,9}$/.test(v)) return Number(v);
  const at = Date.parse(v);
  return Number.isNaN(at) ? null : Math.max(0, Math.ceil((at - now) / 1000));
}

/** Messages of a WebSocket client meaning the server answered but refused the upgrade over HTTP/2. */
const REFUSED_UPGRADE =
  /Didn't receive h2 alpn|NoApplicationProtocol|stream error received|HTTP\/2 not supported/i;

/**
 * What a failure message of a WebSocket client that reports failures as text (Deno's built-in one) means:
 * a visible status, a refused upgrade whose status it hides, or no answer at all. (The bridges' own client
 * reports a {@link WireFailure}; this reads what other clients report, for `mapStartFailure` of the V0
 * bridge.)
 */
export function classifyNativeFailure(message: string): WireFailure {
  const status = /status code:?\s*(\d{3})/i.exec(message)?.[1];
  if (status !== undefined) return { kind: "refused", status: Number(status), retryAfterS: null };
  if (REFUSED_UPGRADE.test(message)) return { kind: "refused", status: null, retryAfterS: null };
  return { kind: "unreachable" };
}

// ---------- endpoints ----------

/** The endpoint of a URL that holds no credential (a configured vendor URL, a public agent's URL). */
export function endpointOf(url: string): Endpoint {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    throw new WireError({ kind: "invalid" });
  }
  const secure = u.protocol === "wss:" || u.protocol === "https:";
  if (!secure && u.protocol !== "ws:" && u.protocol !== "http:") throw new WireError({ kind: "invalid" });
  return {
    secure,
    hostname: u.hostname.replace(/^\[(.*)\]$/, "$1"),
    port: u.port ? Number(u.port) : secure ? 443 : 80,
    host: u.host,
    target: [u.pathname + u.search],
  };
}

/**
 * The endpoint of a `wss://` URL given as bytes (a credential: an engine's URL, a signed URL). The request
 * target is written into a buffer the caller owns: `zero()` it once the request is sent. Throws a
 * {@link WireError} (`invalid`) when the URL does not parse.
 */
export function endpointOfBytes(bytes: Uint8Array): { endpoint: Endpoint; zero(): void } {
  const split = splitUrl(bytes, "wss");
  const host = split && urlHost(bytes, split);
  if (!split || !host) throw new WireError({ kind: "invalid" });
  const target = new ByteBuffer(256);
  writeTarget(bytes, split, target);
  return {
    endpoint: {
      secure: true,
      hostname: host.hostname.replace(/^\[(.*)\]$/, "$1"),
      port: host.port,
      host: host.host,
      target: [target.view()],
    },
    zero: () => target.zero(),
  };
}

// ---------- the request ----------

function randomKey(): string {
  return crypto.getRandomValues(new Uint8Array(16)).toBase64();
}

/** Writes the request head into an owned buffer; throws `invalid` for a header value that cannot be sent. */
function writeHead(into: ByteBuffer, method: string, endpoint: Endpoint, headers: HeaderLine[]): void {
  into.ascii(`${method} `);
  for (const p of endpoint.target) typeof p === "string" ? into.ascii(p) : into.bytes(p);
  into.ascii(` HTTP/1.1\r\nHost: ${endpoint.host}\r\n`);
  for (const h of headers) {
    into.ascii(`${h.name}: `);
    for (const p of h.value) {
      if (typeof p === "string") into.ascii(p);
      else if (!latin1Bytes(p, into)) {
        into.zero();
        throw new WireError({ kind: "invalid" });
      }
    }
    into.ascii("\r\n");
  }
  into.ascii("\r\n");
}

/** Whether any part of a URL target or header holds a character no HTTP/1.1 request line may carry. */
function plainText(parts: Part[]): boolean {
  return parts.every((p) => {
    if (typeof p !== "string") return true;
    for (let i = 0; i < p.length; i++) {
      const c = p.charCodeAt(i);
      if (c <= 0x20 || c >= 0x7f) return false;
    }
    return true;
  });
}

// ---------- connecting ----------

/** A connection being set up, dropped at once when the signal aborts. */
class Dialer {
  conn: Deno.Conn | null = null;
  readonly #connecting = new AbortController();
  #aborted = false;

  constructor(readonly signal: AbortSignal) {}

  /** TCP (and TLS) to the endpoint; rejects with the signal's reason once aborted. */
  async dial(endpoint: Endpoint, caCerts: readonly string[]): Promise<Deno.Conn> {
    const onAbort = () => {
      this.#aborted = true;
      this.#connecting.abort();
      this.drop();
    };
    if (this.signal.aborted) throw this.signal.reason;
    this.signal.addEventListener("abort", onAbort, { once: true });
    this.#stop = () => this.signal.removeEventListener("abort", onAbort);
    try {
      const tcp = await Deno.connect({
        hostname: endpoint.hostname,
        port: endpoint.port,
        signal: this.#connecting.signal,
      });
      this.conn = tcp;
      if (this.#aborted) throw this.signal.reason;
      if (!endpoint.secure) return tcp;
      const tls = await Deno.startTls(tcp, { hostname: endpoint.hostname, caCerts: [...caCerts] });
      this.conn = tls;
      if (this.#aborted) {
        this.drop();
        throw this.signal.reason;
      }
      // The request is written once the handshake is done: the TLS stack then encrypts it at once.
      await tls.handshake();
      return tls;
    } catch (err) {
      this.drop();
      if (this.#aborted || this.signal.aborted) throw this.signal.reason;
      if (err instanceof WireError) throw err;
      throw new WireError({ kind: "unreachable" });
    }
  }

  #stop: () => void = () => {};

  /** Stops following the signal (the connection is set up). */
  done(): void {
    this.#stop();
  }

  /** Closes the connection, if any. */
  drop(): void {
    try {
      this.conn?.close();
    } catch { /* closed already */ }
  }

  /** Whether the signal ended the attempt. */
  get aborted(): boolean {
    return this.#aborted;
  }
}

/** Writes all of `bytes`. */
async function writeAll(conn: Deno.Conn, bytes: Uint8Array): Promise<void> {
  let off = 0;
  while (off < bytes.length) off += await conn.write(bytes.subarray(off));
}

/** A response head: status, headers (lower-case names), and the bytes read past it. */
interface Head {
  status: number;
  headers: Map<string, string>;
  rest: Uint8Array;
}

/** Reads a response head (throws `unreachable` when the peer ends before one, `protocol` for a bad one). */
async function readHead(conn: Deno.Conn): Promise<Head> {
  const acc = new ByteBuffer(4096);
  const buf = new Uint8Array(16 * 1024);
  try {
    for (;;) {
      const v = acc.view();
      const end = indexOfCrlfCrlf(v);
      if (end >= 0) {
        const head = parseHead(v.subarray(0, end));
        return { ...head, rest: v.slice(end + 4) };
      }
      if (v.length > MAX_HEAD_BYTES) throw new WireError({ kind: "protocol" });
      let n: number | null;
      try {
        n = await conn.read(buf);
      } catch {
        throw new WireError({ kind: acc.length ? "protocol" : "unreachable" });
      }
      if (n === null) throw new WireError({ kind: acc.length ? "protocol" : "unreachable" });
      acc.bytes(buf.subarray(0, n));
    }
  } finally {
    acc.zero();
    buf.fill(0);
  }
}

function indexOfCrlfCrlf(v: Uint8Array): number {
  for (let i = v.indexOf(0x0d); i >= 0 && i + 3 < v.length; i = v.indexOf(0x0d, i + 1)) {
    if (v[i + 1] === 0x0a && v[i + 2] === 0x0d && v[i + 3] === 0x0a) return i;
  }
  return -1;
}

function parseHead(bytes: Uint8Array): { status: number; headers: Map<string, string> } {
  // An engine's answer is not a credential: read as Latin-1 text.
  const lines = new TextDecoder("latin1").decode(bytes).split("\r\n");
  const m = /^HTTP\/1\.[01] (\d{3})(?: |$)/.exec(lines[0]);
  if (!m) throw new WireError({ kind: "protocol" });
  const headers = new Map<string, string>();
  for (const line of lines.slice(1)) {
    const colon = line.indexOf(":");
    if (colon <= 0) continue;
    const name = line.slice(0, colon).trim().toLowerCase();
    const value = line.slice(colon + 1).trim();
    headers.set(name, headers.has(name) ? `${headers.get(name)}, ${value}` : value);
  }
  return { status: Number(m[1]), headers };
}

// ---------- the WebSocket client ----------

/** Options of {@link engineTransport}. */
export interface TransportOptions {
  /** Extra CA certificates (PEM) trusted besides the bundled roots (`SVC_ENGINE_CA_FILE`). */
  caCerts?: readonly string[];
  /** Clock of the close waits. */
  clock?: Clock;
}

/** The WebSocket client every bridge uses. */
export function engineTransport(options: TransportOptions = {}): VendorSocket {
  const caCerts = options.caCerts ?? [];
  const clock = options.clock ?? systemClock;
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
        conn = await dialer.dial(o.endpoint, caCerts);
        try {
          await writeAll(conn, request.view());
        } catch {
          throw new WireError({ kind: "unreachable" });
        } finally {
          request.zero();
        }
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
      return new ByteSocket(conn, head.rest, selected ?? "", clock);
    },
  };
}

async function acceptOf(key: string): Promise<string> {
  const digest = await crypto.subtle.digest("SHA-1", new TextEncoder().encode(key + GUID));
  return new Uint8Array(digest).toBase64();
}

/** Close codes a peer may send (RFC 6455 §7.4; 1004–1006 and 1015 are never sent). */
function validCloseCode(code: number): boolean {
  return (code >= 1000 && code <= 1014 && code !== 1004 && code !== 1005 && code !== 1006) ||
    (code >= 3000 && code <= 4999);
}

const utf8 = new TextDecoder("utf-8", { fatal: true });

/** A WebSocket connection over a Deno connection. */
class ByteSocket extends EngineSocket {
  #state: SocketState = "open";
  #closeSent = false;
  #received: Closed | null = null;
  readonly #out: Uint8Array[] = [];
  #buffered = 0;
  #writing = false;
  /** Fragments of the message being received. */
  #fragments: Uint8Array[] = [];
  #fragmentBytes = 0;
  #fragmentOpcode = 0;
  readonly #stopWait = new AbortController();

  constructor(readonly conn: Deno.Conn, rest: Uint8Array, readonly protocol: string, readonly clock: Clock) {
    super();
    void this.#readLoop(rest);
  }

  get bufferedAmount(): number {
    return this.#buffered;
  }

  get isOpen(): boolean {
    return this.#state === "open";
  }

  send(data: string | Uint8Array): void {
    if (!this.isOpen) return;
    if (typeof data === "string") this.#frame(0x1, new TextEncoder().encode(data));
    else this.#frame(0x2, data);
  }

  ping(): boolean {
    if (this.isOpen) this.#frame(0x9, new Uint8Array(0));
    return true;
  }

  close(code: number, reason = ""): void {
    if (this.#state !== "open") return;
    this.#state = "closing";
    this.#sendClose(code, reason);
    // A peer that never ends the connection is dropped after a while.
    void this.clock.sleep(CLOSE_WAIT_MS * 2, this.#stopWait.signal).then(() => this.terminate(), () => {});
  }

  terminate(): void {
    this.#state = "closed";
    try {
      this.conn.close();
    } catch { /* closed already */ }
  }

  #sendClose(code: number, reason: string): void {
    if (this.#closeSent) return;
    this.#closeSent = true;
    const r = new TextEncoder().encode(reason).subarray(0, 123);
    const payload = new Uint8Array(code === 1005 ? 0 : 2 + r.length);
    if (code !== 1005) {
      new DataView(payload.buffer).setUint16(0, code);
      payload.set(r, 2);
    }
    this.#frame(0x8, payload, true);
  }

  /** Queues one masked frame. */
  #frame(opcode: number, payload: Uint8Array, force = false): void {
    if (!force && this.#closeSent) return;
    const len = payload.length;
    const extra = len < 126 ? 0 : len < 65536 ? 2 : 8;
    const out = new Uint8Array(2 + extra + 4 + len);
    out[0] = 0x80 | opcode;
    if (extra === 0) out[1] = 0x80 | len;
    else if (extra === 2) {
      out[1] = 0x80 | 126;
      new DataView(out.buffer).setUint16(2, len);
    } else {
      out[1] = 0x80 | 127;
      new DataView(out.buffer).setBigUint64(2, BigInt(len));
    }
    const maskAt = 2 + extra;
    crypto.getRandomValues(out.subarray(maskAt, maskAt + 4));
    const m0 = out[maskAt], m1 = out[maskAt + 1], m2 = out[maskAt + 2], m3 = out[maskAt + 3];
    const body = maskAt + 4;
    let i = 0;
    for (; i + 4 <= len; i += 4) {
      out[body + i] = payload[i] ^ m0;
      out[body + i + 1] = payload[i + 1] ^ m1;
      out[body + i + 2] = payload[i + 2] ^ m2;
      out[body + i + 3] = payload[i + 3] ^ m3;
    }
    for (; i < len; i++) out[body + i] = payload[i] ^ out[maskAt + (i & 3)];
    this.#out.push(out);
    this.#buffered += out.length;
    if (!this.#writing) void this.#flush();
  }

  async #flush(): Promise<void> {
    this.#writing = true;
    try {
      while (this.#out.length) {
        const next = this.#out[0];
        try {
          await writeAll(this.conn, next);
        } catch {
          this.#out.length = 0;
          this.#buffered = 0;
          this.terminate();
          return;
        }
        this.#out.shift();
        this.#buffered -= next.length;
      }
    } finally {
      this.#writing = false;
    }
  }

  /** A protocol violation of the peer: say why (close code) and drop the connection. */
  #violation(code: number): void {
    if (this.#state === "closed") return;
    this.#state = "closing";
    this.#sendClose(code, "");
    // Dropped once the close frame is out (or at once when nothing can be written).
    const drop = async () => {
      while (this.#writing) await new Promise((r) => setTimeout(r, 1));
      this.terminate();
    };
    void drop();
  }

  async #readLoop(rest: Uint8Array): Promise<void> {
    // Received bytes not parsed yet: acc[start, end), grown by doubling, compacted before growing (16 KB to
    // start: one per engine connection, and a session's engine sends 20–100 ms of audio at a time).
    let acc = new Uint8Array(Math.max(READ_BUFFER_BYTES, rest.length));
    acc.set(rest);
    let start = 0, end = rest.length;
    try {
      for (;;) {
        for (;;) {
          const n = this.#parse(acc.subarray(0, end), start);
          if (n < 0) break;
          start = n;
          if (this.#state === "closed") break;
          // A burst of input must not keep the process's timers (the sessions' media clocks) waiting.
          const turn = inputTurns.next();
          if (turn) {
            await turn;
            // It may have been closed meanwhile (the state is read again after the wait).
            if ((this.#state as SocketState) === "closed") break;
          }
        }
        if (this.#state === "closed") break;
        if (start === end) start = end = 0;
        if (acc.length - end < READ_BUFFER_BYTES / 4) {
          const live = end - start;
          if (live + READ_BUFFER_BYTES / 4 > acc.length) {
            const next = new Uint8Array(acc.length * 2);
            next.set(acc.subarray(start, end));
            acc = next;
          } else acc.copyWithin(0, start, end);
          start = 0;
          end = live;
        }
        let n: number | null;
        try {
          n = await this.conn.read(acc.subarray(end));
        } catch {
          n = null;
        }
        if (n === null) break;
        end += n;
      }
    } finally {
      this.#state = "closed";
      this.#stopWait.abort();
      try {
        this.conn.close();
      } catch { /* closed already */ }
      this.released(this.#received ?? { code: 1006, reason: "" });
    }
  }

  /** Parses one frame of `acc` at `at`; returns where the next begins, or -1 when more bytes are needed. */
  #parse(acc: Uint8Array, at: number): number {
    if (acc.length - at < 2) return -1;
    const b0 = acc[at], b1 = acc[at + 1];
    const fin = (b0 & 0x80) !== 0, opcode = b0 & 0x0f;
    let len = b1 & 0x7f;
    let i = at + 2;
    if (len === 126) {
      if (acc.length - i < 2) return -1;
      len = (acc[i] << 8) | acc[i + 1];
      i += 2;
    } else if (len === 127) {
      if (acc.length - i < 8) return -1;
      const big = new DataView(acc.buffer, acc.byteOffset + i, 8).getBigUint64(0);
      if (big > BigInt(MAX_MESSAGE_BYTES)) return this.#violation(1009), acc.length;
      len = Number(big);
      i += 8;
    }
    if ((b0 & 0x70) !== 0 || (b1 & 0x80) !== 0) return this.#violation(1002), acc.length;
    const control = opcode >= 0x8;
    if (control && (!fin || len > 125)) return this.#violation(1002), acc.length;
    if (![0x0, 0x1, 0x2, 0x8, 0x9, 0xa].includes(opcode)) return this.#violation(1002), acc.length;
    if (!control && len + this.#fragmentBytes > MAX_MESSAGE_BYTES) return this.#violation(1009), acc.length;
    if (acc.length - i < len) return -1;
    // A view of the read buffer: control frames are answered or read at once, a message's piece is copied
    // when kept for the next ones, and a whole message is handed over as it is (see `setHandler`).
    const payload = acc.subarray(i, i + len);
    const next = i + len;
    if (this.#state === "closed") return next;
    switch (opcode) {
      case 0x9:
        if (this.#state === "open") this.#frame(0xa, payload);
        return next;
      case 0xa:
        this.onPong?.();
        return next;
      case 0x8:
        this.#onClose(payload);
        return next;
    }
    if (opcode === 0x0 ? this.#fragmentOpcode === 0 : this.#fragmentOpcode !== 0) {
      return this.#violation(1002), acc.length;
    }
    if (opcode !== 0x0) this.#fragmentOpcode = opcode;
    if (!fin) {
      this.#fragments.push(payload.slice());
      this.#fragmentBytes += payload.length;
      return next;
    }
    const kind = this.#fragmentOpcode;
    const parts = this.#fragments;
    this.#fragments = [];
    this.#fragmentOpcode = 0;
    const total = this.#fragmentBytes + payload.length;
    this.#fragmentBytes = 0;
    const message = parts.length === 0 ? payload : concat([...parts, payload], total);
    if (this.#state !== "open" && this.#state !== "closing") return next;
    if (kind === 0x1) {
      let text: string;
      try {
        text = utf8.decode(message);
      } catch {
        return this.#violation(1007), acc.length;
      }
      this.deliver(text);
    } else this.deliver(message);
    return next;
  }

  #onClose(payload: Uint8Array): void {
    if (payload.length === 1) return this.#violation(1002);
    let code = 1005, reason = "";
    if (payload.length >= 2) {
      code = (payload[0] << 8) | payload[1];
      if (!validCloseCode(code)) return this.#violation(1002);
      try {
        reason = utf8.decode(payload.subarray(2));
      } catch {
        return this.#violation(1007);
      }
    }
    this.#received = { code, reason };
    if (this.#state === "open") this.#state = "closing";
    // The echo, then the peer ends the connection (or it is dropped after a while).
    this.#sendClose(code === 1005 ? 1005 : code, "");
    void this.clock.sleep(CLOSE_WAIT_MS, this.#stopWait.signal).then(() => this.terminate(), () => {});
  }
}

function concat(parts: Uint8Array[], total: number): Uint8Array {
  const out = new Uint8Array(total);
  let o = 0;
  for (const p of parts) {
    out.set(p, o);
    o += p.length;
  }
  return out;
}

// ---------- plain HTTP requests (vendor3's signed-URL mint) ----------

/** A response read by {@link httpRequest}: the body in a buffer the caller zeroes. */
export interface HttpAnswer {
  status: number;
  headers: Map<string, string>;
  /** The body (dechunked). Zero it once read. */
  body: ByteBuffer;
}

/**
 * One HTTP/1.1 request (`Connection: close`) whose headers may carry credential bytes, with the same
 * connecting, TLS and abort rules as the WebSocket client; no redirect is followed. Reads a body of at most
 * `maxBody` bytes (`protocol` beyond). Throws {@link WireError}s, or the signal's reason once aborted.
 */
export async function httpRequest(o: {
  method: string;
  endpoint: Endpoint;
  headers: HeaderLine[];
  signal: AbortSignal;
  caCerts?: readonly string[];
  maxBody: number;
}): Promise<HttpAnswer> {
  if (!plainText(o.endpoint.target) || !plainText([o.endpoint.host])) {
    throw new WireError({ kind: "invalid" });
  }
  const request = new ByteBuffer(512);
  writeHead(request, o.method, o.endpoint, [...o.headers, { name: "Connection", value: ["close"] }]);
  const dialer = new Dialer(o.signal);
  const body = new ByteBuffer(1024);
  let raw: ByteBuffer | null = null;
  try {
    const conn = await dialer.dial(o.endpoint, o.caCerts ?? []);
    try {
      await writeAll(conn, request.view());
    } catch {
      throw new WireError({ kind: "unreachable" });
    } finally {
      request.zero();
    }
    // The abort signal keeps dropping the connection while the answer is read.
    const onAbort = () => dialer.drop();
    o.signal.addEventListener("abort", onAbort, { once: true });
    try {
      const head = await readHead(conn);
      raw = new ByteBuffer(1024);
      raw.bytes(head.rest);
      head.rest.fill(0);
      const length = head.headers.get("content-length");
      const chunked = /\bchunked\b/i.test(head.headers.get("transfer-encoding") ?? "");
      const want = !chunked && length !== undefined && /^\d+$/.test(length) ? Number(length) : null;
      if (want !== null && want > o.maxBody) throw new WireError({ kind: "protocol" });
      const buf = new Uint8Array(16 * 1024);
      try {
        for (;;) {
          if (want !== null && raw.length >= want) break;
          if (chunked && dechunk(raw.view(), body, o.maxBody) !== null) break;
          if (raw.length > o.maxBody + 64 * 1024) throw new WireError({ kind: "protocol" });
          let n: number | null;
          try {
            n = await conn.read(buf);
          } catch {
            n = null;
            if (o.signal.aborted) throw o.signal.reason;
          }
          if (n === null) break;
          raw.bytes(buf.subarray(0, n));
        }
      } finally {
        buf.fill(0);
      }
      if (chunked) {
        body.zero();
        if (dechunk(raw.view(), body, o.maxBody) === null) throw new WireError({ kind: "protocol" });
      } else {
        const v = raw.view();
        if (want !== null && v.length < want) throw new WireError({ kind: "protocol" });
        const n = want ?? v.length;
        if (n > o.maxBody) throw new WireError({ kind: "protocol" });
        body.bytes(v.subarray(0, n));
      }
      return { status: head.status, headers: head.headers, body };
    } finally {
      o.signal.removeEventListener("abort", onAbort);
    }
  } catch (err) {
    body.zero();
    if (dialer.aborted || o.signal.aborted) throw o.signal.reason;
    throw err;
  } finally {
    request.zero();
    raw?.zero();
    dialer.drop();
    dialer.done();
  }
}

/**
 * Decodes a complete chunked body from `raw` into `into` (bytes written: their count), or null when it is
 * not complete yet (or larger than `max`).
 */
function dechunk(raw: Uint8Array, into: ByteBuffer, max: number): number | null {
  into.zero();
  let i = 0;
  for (;;) {
    let eol = -1;
    for (let j = i; j + 1 < raw.length; j++) {
      if (raw[j] === 0x0d && raw[j + 1] === 0x0a) {
        eol = j;
        break;
      }
    }
    if (eol < 0) return null;
    let size = 0;
    let k = i;
    for (; k < eol; k++) {
      const c = raw[k];
      const v = c >= 0x30 && c <= 0x39
        ? c - 0x30
        : (c | 0x20) >= 0x61 && (c | 0x20) <= 0x66
        ? (c | 0x20) - 0x57
        : -1;
      if (v < 0) break;
      size = size * 16 + v;
      if (size > max) return null;
    }
    if (k === i) return null;
    const start = eol + 2;
    if (size === 0) return into.length;
    if (raw.length < start + size + 2) return null;
    into.bytes(raw.subarray(start, start + size));
    if (into.length > max) return null;
    i = start + size + 2;
  }
}
