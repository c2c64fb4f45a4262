/**
 * The skeleton of a bridge: the `connect()` every bridge shares (the three vendors' and the external
 * engine's) — the start-failure log line, the engine socket, the handshake with its failure maps, the
 * connection's context and its keepalive — around what a bridge fills in: where and how it connects
 * ({@link VendorBridge.prepare}: endpoint, headers, first message, the handshake's reading of the messages
 * before ready), how its failures read ({@link VendorBridge.startFailure}, {@link VendorBridge.afterClose}),
 * the live connection it makes once ready ({@link VendorBridge.open}) and how that connection is kept alive
 * ({@link VendorBridge.keepalive}).
 *
 * @module
 */
import type { ApiError } from "../../errors.ts";
import type { BridgeDeps, ConnectRequest, ProviderBridge, ProviderConnection } from "../types.ts";
import {
  type BridgeConnection,
  type ConnectionContext,
  type Keepalive,
  VENDOR_KEEPALIVE,
} from "./connection.ts";
import {
  handshake,
  type HandshakeSpec,
  refineByClose,
  type StartFailure,
  vendorStartFailure,
} from "./handshake.ts";
import type { Closed, WireSocket } from "./wire_socket.ts";
import { type WireClient, wireClient } from "./upgrade.ts";

/** What a vendor fills in of the handshake (the skeleton adds the socket, the clock and the failure maps). */
export type VendorHandshake<R> =
  & Omit<HandshakeSpec<R>, "client" | "clock" | "mapFailure" | "afterClose">
  & {
    /** Zeroes what the endpoint and headers borrowed, and stops what prepare started; run whatever happens. */
    release?(): void;
  };

/** Logs a start that failed (once, with the error's code and a short kind) and returns its error. */
export type FailStart = <E extends { code: string }>(err: E, kind: string) => E;

/**
 * A bridge: {@link VendorBridge.connect} is the skeleton; a bridge fills in the rest. `R`: what its
 * handshake's ready announces; `S`: its provider type's settings; `C`: its live connection.
 */
export abstract class VendorBridge<R, S = unknown, C extends BridgeConnection = BridgeConnection>
  implements ProviderBridge {
  readonly #client: WireClient;

  constructor(readonly deps: BridgeDeps<S>) {
    this.#client = wireClient({ caCerts: deps.caCerts, clock: deps.clock, inputTurns: deps.inputTurns });
  }

  /**
   * Where and how to connect for `request`: throw `fail(error, kind)` for a start that cannot be made
   * (e.g. a credential missing), before anything is opened.
   */
  protected abstract prepare(
    request: ConnectRequest,
    fail: FailStart,
  ): Promise<VendorHandshake<R>> | VendorHandshake<R>;

  /** The service's error for a failure before ready (default: the vendors' common map). */
  protected startFailure(failure: StartFailure): ApiError {
    return vendorStartFailure(failure);
  }

  /**
   * The final error of a start an engine's message failed, once the close that follows is known (see
   * `HandshakeSpec.afterClose`). Default: refined by the close ({@link refineByClose}), then logged with the
   * kind `error` (a vendor's handshake returns its failures unlogged).
   */
  protected afterClose(error: ApiError, closed: Closed | null, fail: FailStart): ApiError {
    return fail(refineByClose(error, closed), "error");
  }

  /** The live connection over the ready socket (`ready`: what the handshake read). */
  protected abstract open(socket: WireSocket, ctx: ConnectionContext, ready: R): C;

  /**
   * How the live connection is kept alive. Default: WebSocket ping frames, at the deps' `keepalive` (a ping
   * every 15 s, the peer dead after 45 s of silence).
   */
  protected keepalive(socket: WireSocket, _connection: C): Keepalive {
    return { ...(this.deps.keepalive ?? VENDOR_KEEPALIVE), ping: () => socket.ping() };
  }

  async connect(request: ConnectRequest): Promise<ProviderConnection> {
    const { logger, clock } = this.deps;
    const fail: FailStart = (err, kind) => {
      logger.info("engine start failed", { session_id: request.sessionId, code: err.code, kind });
      return err;
    };
    const spec = await this.prepare(request, fail);
    let started;
    try {
      started = await handshake<R>({
        ...spec,
        client: this.#client,
        clock,
        // Logged once the close that follows the vendor's error is known (its reason may say quota).
        afterClose: (err, closed) => this.afterClose(err, closed, fail),
        mapFailure: (f) => fail(this.startFailure(f), f.kind),
      });
    } finally {
      spec.release?.();
    }
    const { socket, ready } = started;
    const ctx: ConnectionContext = { sessionId: request.sessionId, events: request.events, logger, clock };
    const connection = this.open(socket, ctx, ready);
    return connection.attach(this.keepalive(socket, connection));
  }
}
