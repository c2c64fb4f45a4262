/**
 * A client of Janus's WebSocket API (subprotocol `janus-protocol`), as the worker uses it: one socket per
 * worker, Janus sessions and plugin handles over it, requests matched to replies by transaction, and
 * events routed to the handle they concern. Every request carries the `api_secret`; the socket closing is
 * how a Janus that died or restarted is noticed at once.
 *
 * Reply model (Janus 1.1): core requests answer `success` or `error`; a plugin request answers `success`
 * with `plugindata` when the plugin handles it synchronously (create, destroy, rtp_forward…), or `ack`
 * followed by an `event` with the same transaction (watch, start, join, publish…). A plugin refusal is a
 * `success`/`event` whose `plugindata.data` has `error_code`.
 *
 * The socket is the project's own WebSocket client (`providers/wire/`, as the engines' bridges use), not
 * Deno's `WebSocket`: Deno 2.9.6's client writes a frame of more than 1 KiB as two writes (its header, then
 * its payload) on a socket with Nagle's algorithm on, so the payload waited for Janus to acknowledge the
 * header, which a Linux peer with nothing to answer delays up to 40 ms. Every viewer's SDP answer (~1.6 KB)
 * waited so: Janus's `start` took 41–48 ms to answer on loopback (a packet capture showed the 8-byte header
 * alone, the payload 46 ms later, right after Janus's delayed acknowledgement), and each `webrtc_sfu` connect
 * was that much slower. The wire client dials with `TCP_NODELAY` and writes each frame at once.
 *
 * @module
 */
import { endpointOf } from "../../../providers/wire/endpoint.ts";
import { wireClient } from "../../../providers/wire/upgrade.ts";
import type { WireSocket } from "../../../providers/wire/wire_socket.ts";

/** A Janus core or plugin error (a refusal: Janus is reachable). */
export class JanusError extends Error {
  override name = "JanusError";
  constructor(readonly code: number, message: string) {
    super(message);
  }
}

/** Janus could not be reached, or the connection was lost before the answer. */
export class JanusUnreachableError extends Error {
  override name = "JanusUnreachableError";
}

/** A session description. */
export interface Jsep {
  type: "offer" | "answer";
  sdp: string;
}

/** One message from Janus. */
export interface JanusMessage {
  janus: string;
  transaction?: string;
  session_id?: number;
  sender?: number;
  data?: { id?: number };
  error?: { code: number; reason: string };
  plugindata?: { plugin: string; data: Record<string, unknown> };
  jsep?: Jsep;
  [key: string]: unknown;
}

/** Default deadline of a request, ms. */
const REQUEST_TIMEOUT_MS = 10_000;
/** Janus sessions are kept alive this often (Janus drops them after `session_timeout`, 60 s by default). */
const KEEPALIVE_MS = 20_000;

/** The subprotocol of Janus's WebSocket API. */
const JANUS_PROTOCOL = "janus-protocol";

/** One WebSocket connection to Janus. */
export class JanusConnection {
  readonly #ws: WireSocket;
  readonly #secret: string | null;
  readonly #pending = new Map<
    string,
    {
      resolve(m: JanusMessage): void;
      reject(e: Error): void;
      waitEvent: boolean;
      timer: ReturnType<typeof setTimeout>;
    }
  >();
  readonly #sessions = new Map<number, JanusSession>();
  #tx = 0;
  #open = true;
  /** Resolves when the connection has closed (for whatever reason). */
  readonly closed: Promise<void>;

  readonly #resolveClosed: () => void;

  private constructor(ws: WireSocket, secret: string | null) {
    this.#ws = ws;
    this.#secret = secret;
    const { promise, resolve } = Promise.withResolvers<void>();
    this.closed = promise;
    this.#resolveClosed = resolve;
    void ws.closed.then(() => this.#lost());
    ws.setHandler((frame) => {
      if (typeof frame === "string") this.#onMessage(frame);
    });
  }

  /** The connection is over: pending requests fail, sessions are disposed, `closed` resolves. */
  #lost(): void {
    if (!this.#open) return;
    this.#open = false;
    for (const p of this.#pending.values()) {
      clearTimeout(p.timer);
      p.reject(new JanusUnreachableError("the connection to the media server was lost"));
    }
    this.#pending.clear();
    for (const s of this.#sessions.values()) s.dispose();
    this.#sessions.clear();
    this.#resolveClosed();
  }

  /**
   * Connects (`ws:` or `wss:`, trusting `caCerts` — PEM — beside the default roots); throws
   * {@link JanusUnreachableError} when Janus does not accept within `timeoutMs` (or its certificate is not
   * trusted).
   */
  static async open(
    url: string,
    secret: string | null,
    timeoutMs = 5000,
    caCerts: readonly string[] = [],
  ): Promise<JanusConnection> {
    const abort = new AbortController();
    const timer = setTimeout(() => abort.abort(new Error("timeout")), timeoutMs);
    try {
      const ws = await wireClient({ caCerts }).open({
        endpoint: endpointOf(url),
        protocols: [JANUS_PROTOCOL],
        signal: abort.signal,
      });
      if (ws.protocol !== JANUS_PROTOCOL) {
        ws.terminate();
        await ws.closed;
        throw new Error("no janus-protocol");
      }
      return new JanusConnection(ws, secret);
    } catch {
      throw new JanusUnreachableError("the media server did not accept a connection");
    } finally {
      clearTimeout(timer);
    }
  }

  /** Whether the socket is still open. */
  get open(): boolean {
    return this.#open;
  }

  /**
   * Sends a request and resolves with its answer: the `success` reply, or with `waitEvent` the `event`
   * that follows an `ack`. Throws {@link JanusError} on a Janus or plugin error and
   * {@link JanusUnreachableError} when the connection is lost or the answer does not come in time.
   */
  request(
    body: Record<string, unknown>,
    options: { waitEvent?: boolean; timeoutMs?: number } = {},
  ): Promise<JanusMessage> {
    if (!this.#open) return Promise.reject(new JanusUnreachableError("not connected to the media server"));
    const transaction = `t${++this.#tx}`;
    return new Promise<JanusMessage>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.#pending.delete(transaction);
        reject(new JanusUnreachableError("the media server did not answer in time"));
      }, options.timeoutMs ?? REQUEST_TIMEOUT_MS);
      this.#pending.set(transaction, { resolve, reject, waitEvent: options.waitEvent ?? false, timer });
      try {
        this.#ws.send(
          JSON.stringify({ ...body, transaction, ...(this.#secret ? { apisecret: this.#secret } : {}) }),
        );
      } catch (err) {
        clearTimeout(timer);
        this.#pending.delete(transaction);
        reject(new JanusUnreachableError(String(err)));
      }
    });
  }

  /** Creates a Janus session (kept alive until {@link JanusSession.destroy}). */
  async createSession(): Promise<JanusSession> {
    const reply = await this.request({ janus: "create" });
    const id = reply.data?.id;
    if (typeof id !== "number") throw new JanusError(0, "no session id in the answer");
    const session = new JanusSession(this, id, () => this.#sessions.delete(id));
    this.#sessions.set(id, session);
    return session;
  }

  /** Closes the socket (Janus then times its sessions out); the wire client bounds the wait for Janus. */
  async close(): Promise<void> {
    this.#ws.close(1000);
    await this.#ws.closed;
    this.#lost();
  }

  /**
   * Gives the connection up at once (Janus is not answering): `closed` resolves now and the socket is
   * dropped (a hung peer may never complete the closing handshake).
   */
  drop(): void {
    this.#lost();
    this.#ws.terminate();
  }

  #onMessage(raw: string): void {
    let m: JanusMessage;
    try {
      m = JSON.parse(raw);
    } catch {
      return;
    }
    const p = m.transaction ? this.#pending.get(m.transaction) : undefined;
    if (p) {
      if (m.janus === "ack" && p.waitEvent) return; // the answer follows as an event
      this.#pending.delete(m.transaction!);
      clearTimeout(p.timer);
      if (m.janus === "error") {
        p.reject(new JanusError(m.error?.code ?? 0, m.error?.reason ?? "error"));
        return;
      }
      const data = m.plugindata?.data;
      if (data && typeof data.error_code === "number") {
        p.reject(new JanusError(data.error_code, String(data.error ?? "plugin error")));
        return;
      }
      p.resolve(m);
      return;
    }
    if (typeof m.session_id === "number") this.#sessions.get(m.session_id)?.dispatch(m);
  }
}

/** A Janus session: a container of plugin handles, kept alive while it is used. */
export class JanusSession {
  readonly #handles = new Map<number, JanusHandle>();
  readonly #keepalive: ReturnType<typeof setInterval>;
  #gone = false;

  constructor(readonly connection: JanusConnection, readonly id: number, readonly onGone: () => void) {
    this.#keepalive = setInterval(() => {
      connection.request({ janus: "keepalive", session_id: id }).catch(() => {});
    }, KEEPALIVE_MS);
  }

  /** Attaches a handle to `plugin` (e.g. `janus.plugin.streaming`). */
  async attach(plugin: string): Promise<JanusHandle> {
    const reply = await this.connection.request({ janus: "attach", session_id: this.id, plugin });
    const id = reply.data?.id;
    if (typeof id !== "number") throw new JanusError(0, "no handle id in the answer");
    const handle = new JanusHandle(this, id);
    this.#handles.set(id, handle);
    return handle;
  }

  /** Routes an event to its handle. */
  dispatch(m: JanusMessage): void {
    if (typeof m.sender === "number") this.#handles.get(m.sender)?.dispatch(m);
  }

  /** Forgets a handle. */
  forget(handleId: number): void {
    this.#handles.delete(handleId);
  }

  /** Stops keeping the session alive (the connection closed). */
  dispose(): void {
    if (this.#gone) return;
    this.#gone = true;
    clearInterval(this.#keepalive);
    for (const h of this.#handles.values()) h.dispatch({ janus: "detached" });
    this.#handles.clear();
    this.onGone();
  }

  /** Destroys the session (its handles go with it). Never throws. */
  async destroy(): Promise<void> {
    if (this.#gone) return;
    this.dispose();
    if (this.connection.open) {
      await this.connection.request({ janus: "destroy", session_id: this.id }, { timeoutMs: 3000 }).catch(
        () => {},
      );
    }
  }
}

/** A plugin handle. */
export class JanusHandle {
  readonly #listeners = new Set<(m: JanusMessage) => void>();
  #detached = false;

  constructor(readonly session: JanusSession, readonly id: number) {}

  /** A synchronous plugin request; resolves with the plugin's data. */
  async request(body: Record<string, unknown>): Promise<Record<string, unknown>> {
    const reply = await this.session.connection.request({
      janus: "message",
      session_id: this.session.id,
      handle_id: this.id,
      body,
    });
    return reply.plugindata?.data ?? {};
  }

  /** An asynchronous plugin request (with an optional JSEP); resolves with the plugin's event and its JSEP. */
  async message(
    body: Record<string, unknown>,
    jsep?: Jsep,
    timeoutMs?: number,
  ): Promise<{ data: Record<string, unknown>; jsep?: Jsep }> {
    const reply = await this.session.connection.request({
      janus: "message",
      session_id: this.session.id,
      handle_id: this.id,
      body,
      ...(jsep ? { jsep } : {}),
    }, { waitEvent: true, timeoutMs });
    return { data: reply.plugindata?.data ?? {}, jsep: reply.jsep };
  }

  /** Listens to the handle's events (`webrtcup`, `hangup`, `media`, plugin events, `detached`). */
  onEvent(listener: (m: JanusMessage) => void): void {
    this.#listeners.add(listener);
  }

  /** Delivers an event to the listeners. */
  dispatch(m: JanusMessage): void {
    if (m.janus === "detached") this.#detached = true;
    for (const l of [...this.#listeners]) {
      try {
        l(m);
      } catch { /* a listener's own problem */ }
    }
  }

  /** Detaches the handle (closing its PeerConnection). Never throws. */
  async detach(): Promise<void> {
    if (this.#detached) return;
    this.#detached = true;
    this.session.forget(this.id);
    if (!this.session.connection.open) return;
    await this.session.connection.request(
      { janus: "detach", session_id: this.session.id, handle_id: this.id },
      { timeoutMs: 3000 },
    ).catch(() => {});
  }
}
