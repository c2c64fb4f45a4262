/**
 * The byte socket under every engine request: a TCP connection (`Deno.connect`, Nagle's algorithm off) to
 * an endpoint, TLS on top when the endpoint is secure (`tls.ts`), both dropped at once when the caller's
 * abort signal fires (the session's whole connect deadline), with failures that say only that nothing
 * answered (`unreachable`); and `writeAll`, which writes a buffer whole.
 *
 * @module
 */
import type { ByteBuffer } from "../../auth/credential_bytes.ts";
import type { Endpoint } from "./endpoint.ts";
import { WireError } from "./failure.ts";
import { startTls } from "./tls.ts";

/** A connection being set up, dropped at once when the signal aborts. */
export class Dialer {
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
      // Real-time input (a microphone's 20 ms frames, `websocket.ts`'s acknowledging Pongs) goes out when
      // written: Nagle's algorithm would hold a small write while the last is unacknowledged, and the peer's
      // kernel may delay that acknowledgement 40 ms.
      tcp.setNoDelay(true);
      if (!endpoint.secure) return tcp;
      return await startTls(tcp, endpoint.hostname, caCerts, (tls) => {
        this.conn = tls;
        // An abort during `startTls`: dropped (below) before the handshake.
        if (this.#aborted) throw this.signal.reason;
      });
    } catch (err) {
      this.drop();
      if (this.#aborted || this.signal.aborted) throw this.signal.reason;
      if (err instanceof WireError) throw err;
      throw new WireError({ kind: "unreachable" });
    }
  }

  #stop: () => void = () => {};

  /**
   * Dials the endpoint and writes `request` (a request head the caller assembled), zeroing it however that
   * goes; a failed write is `unreachable`.
   */
  async send(endpoint: Endpoint, caCerts: readonly string[], request: ByteBuffer): Promise<Deno.Conn> {
    try {
      const conn = await this.dial(endpoint, caCerts);
      try {
        await writeAll(conn, request.view());
      } catch {
        throw new WireError({ kind: "unreachable" });
      }
      return conn;
    } finally {
      request.zero();
    }
  }

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
export async function writeAll(conn: Deno.Conn, bytes: Uint8Array): Promise<void> {
  let off = 0;
  while (off < bytes.length) off += await conn.write(bytes.subarray(off));
}
