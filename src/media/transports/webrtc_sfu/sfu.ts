/**
 * The worker's SFU: one connection to Janus shared by every `webrtc_sfu` session of the process, opened
 * when the first session needs it, watched for loss (Janus stopped, crashed or restarted: its socket
 * closes), and re-opened in the background while sessions wait for it. Sessions subscribe to hear when it
 * is lost and when it is back (they then recreate their mountpoint and room: Janus keeps neither across a
 * restart). Also maps Janus failures to the contract's error codes.
 *
 * @module
 */
import type { SfuConfig } from "../../../config.ts";
import { ApiError } from "../../../errors.ts";
import type { Logger } from "../../../log.ts";
import { JanusConnection, JanusError, JanusUnreachableError } from "./janus.ts";

/** What a session hears from the SFU connection. */
export interface SfuListener {
  /** The connection to Janus was lost (every Janus object of the session is gone with it). */
  lost(): void;
  /** A new connection is open. */
  restored(connection: JanusConnection): void;
}

/** Delay between reconnection attempts while sessions wait for Janus, ms. */
const RECONNECT_DELAYS_MS = [250, 500, 1000, 2000];
/**
 * How often an open connection is checked, and how long Janus has to answer: a Janus that hangs (its socket
 * open, nothing answering) is treated as lost.
 */
const HEALTH_INTERVAL_MS = 5000;
const HEALTH_TIMEOUT_MS = 5000;

/** The SFU (Janus) of a worker process. */
export class JanusSfu {
  #connection: JanusConnection | null = null;
  #connecting: Promise<JanusConnection> | null = null;
  readonly #listeners = new Set<SfuListener>();
  #retry: ReturnType<typeof setTimeout> | undefined;
  #attempt = 0;
  #closed = false;
  #health: ReturnType<typeof setInterval> | undefined;

  constructor(
    readonly config: SfuConfig,
    readonly logger: Logger,
    readonly options: {
      connectTimeoutMs?: number;
      /** CA certificates (PEM) trusted for a `wss://` Janus beside the default roots (`SVC_SFU_CA_FILE`). */
      caCerts?: readonly string[];
    } = {},
  ) {}

  /** The secret Janus's API and plugins are configured with. */
  get secret(): string {
    return this.config.adminSecret ?? "";
  }

  /** Whether a connection to Janus is open now. */
  get connected(): boolean {
    return this.#connection?.open ?? false;
  }

  /**
   * The open connection, connecting first when there is none. Throws `503 SVC_SFU_CONNECTION_FAILED` when
   * Janus cannot be reached.
   */
  async connection(): Promise<JanusConnection> {
    if (this.#connection?.open) return this.#connection;
    if (this.#closed) throw new ApiError("SVC_SFU_CONNECTION_FAILED");
    this.#connecting ??= this.#connect().finally(() => this.#connecting = null);
    try {
      return await this.#connecting;
    } catch {
      throw new ApiError("SVC_SFU_CONNECTION_FAILED");
    }
  }

  async #connect(): Promise<JanusConnection> {
    const conn = await JanusConnection.open(
      this.config.janusUrl,
      this.config.adminSecret,
      this.options.connectTimeoutMs ?? 5000,
      this.options.caCerts,
    );
    // A socket that opens but is not Janus (or has another api_secret) fails here.
    try {
      await conn.request({ janus: "info" }, { timeoutMs: this.options.connectTimeoutMs ?? 5000 });
    } catch (err) {
      await conn.close();
      throw err;
    }
    if (this.#closed) {
      await conn.close();
      throw new JanusUnreachableError("closed");
    }
    this.#connection = conn;
    this.#attempt = 0;
    this.logger.info("sfu connected");
    conn.closed.then(() => this.#onClosed(conn));
    clearInterval(this.#health);
    this.#health = setInterval(() => {
      conn.request({ janus: "info" }, { timeoutMs: HEALTH_TIMEOUT_MS }).catch((err) => {
        if (err instanceof JanusUnreachableError && conn.open) {
          this.logger.warn("sfu not answering: dropping the connection");
          conn.drop();
        }
      });
    }, HEALTH_INTERVAL_MS);
    return conn;
  }

  #onClosed(conn: JanusConnection): void {
    if (this.#connection !== conn) return;
    this.#connection = null;
    clearInterval(this.#health);
    this.#health = undefined;
    if (this.#closed) return;
    this.logger.warn("sfu connection lost", { sessions: this.#listeners.size });
    for (const l of [...this.#listeners]) l.lost();
    this.#scheduleReconnect();
  }

  #scheduleReconnect(): void {
    if (this.#closed || this.#retry !== undefined || this.#listeners.size === 0) return;
    const delay = RECONNECT_DELAYS_MS[Math.min(this.#attempt++, RECONNECT_DELAYS_MS.length - 1)];
    this.#retry = setTimeout(async () => {
      this.#retry = undefined;
      if (this.#closed || this.#listeners.size === 0) return;
      let conn: JanusConnection;
      try {
        conn = await this.connection();
      } catch {
        this.#scheduleReconnect();
        return;
      }
      this.logger.info("sfu connection restored", { sessions: this.#listeners.size });
      for (const l of [...this.#listeners]) l.restored(conn);
    }, delay);
  }

  /** Subscribes a session to loss and recovery; returns the unsubscribe function. */
  subscribe(listener: SfuListener): () => void {
    this.#listeners.add(listener);
    if (!this.connected) this.#scheduleReconnect();
    return () => {
      this.#listeners.delete(listener);
      if (this.#listeners.size === 0 && this.#retry !== undefined) {
        clearTimeout(this.#retry);
        this.#retry = undefined;
      }
    };
  }

  /** Closes the connection (process shutdown). */
  async close(): Promise<void> {
    this.#closed = true;
    clearInterval(this.#health);
    clearTimeout(this.#retry);
    this.#retry = undefined;
    await this.#connecting?.catch(() => {});
    const conn = this.#connection;
    this.#connection = null;
    await conn?.close();
  }
}

/**
 * The contract's error for a failed SFU set-up: Janus unreachable or not answering → 503
 * `SVC_SFU_CONNECTION_FAILED`; no free port for a mountpoint → 503 `SVC_SFU_ROOM_FULL`; anything else
 * Janus refused → 502 `SVC_SFU_NEGOTIATION_FAILED`.
 */
export function sfuError(err: unknown): ApiError {
  if (err instanceof ApiError) return err;
  if (err instanceof JanusError) {
    // The Streaming plugin answers 456 "error creating data source" when no RTP port is free.
    if (err.code === 456 && /data source|port/i.test(err.message)) return new ApiError("SVC_SFU_ROOM_FULL");
    return new ApiError("SVC_SFU_NEGOTIATION_FAILED");
  }
  return new ApiError("SVC_SFU_CONNECTION_FAILED");
}
