/**
 * What every live engine connection shares, whatever the engine: keepalive (a ping every interval, the
 * peer declared dead after a silence), the session's close (graceful: the bridge's goodbye, then the close
 * handshake awaited within the teardown budget; forced: closed at once), the mapping of a close the session
 * did not ask for to a {@link ProviderClosure}, and backpressure on user audio. Timers run on the injected
 * clock and stop when the socket is released.
 *
 * A bridge extends it with its message handling ({@link BridgeConnection.onFrame}), its close mapping
 * ({@link BridgeConnection.closure}) and, when the engine has one, its goodbye message.
 *
 * @module
 */
import type { Clock } from "../../clock.ts";
import type { Logger } from "../../log.ts";
import type { CloseResult, ProviderClosure, ProviderConnection, ProviderEvents } from "../types.ts";
import { mentionsQuota } from "./handshake.ts";
import type { Closed, Frame, WireSocket } from "./wire_socket.ts";
import { every, settlesWithin } from "./wait.ts";

/** What a connection works with. */
export interface ConnectionContext {
  sessionId: string;
  events: ProviderEvents;
  logger: Logger;
  clock: Clock;
}

/** How a connection keeps its engine alive and notices a dead one. */
export interface Keepalive {
  /** A ping every `intervalMs`... */
  intervalMs: number;
  /** ...and the peer is dead after this long without any frame (or pong). */
  deadAfterMs: number;
  /** Sends one ping (an application message or a WebSocket ping frame). */
  ping(): void;
}

/** How long a close waits for the socket's release before dropping it. */
const RELEASE_WAIT_MS = 2000;
/** User audio queued beyond this many seconds is dropped (a stalled engine must not grow memory). */
const MAX_QUEUED_AUDIO_S = 2;

/**
 * Keepalive of the vendor sockets: a WebSocket ping frame every 15 s (their servers answer pings; their
 * SDKs' clients ping too), the peer dead after 45 s without any frame.
 */
export const VENDOR_KEEPALIVE = { intervalMs: 15_000, deadAfterMs: 45_000 } as const;

/**
 * A close this soon after a quota error is the quota's doing (vendors send the error, then close at once;
 * an error the session outlived was a recoverable one).
 */
export const QUOTA_CLOSE_WINDOW_MS = 10_000;

/** Close code the bridge uses when its peer went silent (protocol V0 §5). */
export const KEEPALIVE_CLOSE_CODE = 4008;

/** A live connection to an engine over an {@link WireSocket}. */
export abstract class BridgeConnection implements ProviderConnection {
  abstract readonly inputSampleRate: number;
  abstract readonly outputSampleRate: number;
  /** Resolves once the socket is released. */
  readonly released: Promise<void>;
  /** Aborted once the socket is released: stops every timer of the connection. */
  protected readonly stopped = new AbortController();
  /** Set once the session closes the connection (its close is then not reported as the engine's). */
  protected closing: { graceful: boolean } | null = null;
  #sawFrame = true;
  #silentTicks = 0;
  #dead = false;
  /** When the engine last said its quota is exhausted (clock time). */
  #quotaAt = -Infinity;

  constructor(protected readonly socket: WireSocket, protected readonly ctx: ConnectionContext) {
    this.released = socket.closed.then((c) => {
      this.stopped.abort();
      if (this.closing) return;
      this.ctx.events.onClosed(
        this.#dead
          ? { kind: "failed", reason: "engine_keepalive_timeout" }
          // The engine said its quota is spent (an error, or the close reason itself): not a normal end.
          : this.ctx.clock.now() - this.#quotaAt <= QUOTA_CLOSE_WINDOW_MS || mentionsQuota(c.reason)
          ? { kind: "quota_exhausted", reason: "engine_quota_exhausted" }
          : this.closure(c),
      );
    });
  }

  /**
   * Starts the connection: takes the frames (those queued since the handshake first) and starts the
   * keepalive. Called once the subclass is constructed.
   */
  attach(keepalive: Keepalive): this {
    const deadTicks = Math.max(1, Math.ceil(keepalive.deadAfterMs / keepalive.intervalMs));
    this.socket.onPong = () => this.#sawFrame = true;
    every(this.ctx.clock, keepalive.intervalMs, this.stopped.signal, () => {
      if (!this.socket.isOpen || this.closing) return;
      if (this.#sawFrame) {
        this.#sawFrame = false;
        this.#silentTicks = 0;
      } else if (++this.#silentTicks >= deadTicks) {
        this.#dead = true;
        this.socket.close(KEEPALIVE_CLOSE_CODE, "keepalive timeout");
        this.#dropUnlessReleased();
        return;
      }
      keepalive.ping();
    });
    this.socket.setHandler((frame) => {
      this.#sawFrame = true;
      this.onFrame(frame);
    });
    return this;
  }

  /**
   * The engine reported that its quota or rate limit is exhausted: when the connection then closes (with
   * whatever code, within {@link QUOTA_CLOSE_WINDOW_MS}), the session ends as `engine_quota_exceeded`, not
   * as a normal end or a failure.
   */
  protected noteQuota(): void {
    this.#quotaAt = this.ctx.clock.now();
  }

  /** Handles one frame from the engine. */
  protected abstract onFrame(frame: Frame): void;

  /** What a close the session did not ask for means (normal end or failure). */
  protected abstract closure(closed: Closed): ProviderClosure;

  /** Says goodbye before a graceful close; the default closes with 1000 (engines without an end message). */
  protected goodbye(_reason: string): void {
    this.socket.close(1000, "session ended");
  }

  abstract sendUserAudio(pcm: Uint8Array): void;

  /** Playout reports: engines without a use for them ignore them. */
  reportPlayed(_responseId: string, _playedMs: number, _interrupted: boolean): void {}

  /** Whether user audio can go out now (open, not closing, under the queue bound at `bytesPerSecond`). */
  protected canSendAudio(bytesPerSecond: number): boolean {
    return this.socket.isOpen && !this.closing &&
      this.socket.bufferedAmount <= bytesPerSecond * MAX_QUEUED_AUDIO_S;
  }

  /** Sends one JSON message (dropped when the socket is not open). */
  protected sendJson(message: unknown): void {
    this.socket.send(JSON.stringify(message));
  }

  async close(options: { graceful: boolean; timeoutMs: number; reason: string }): Promise<CloseResult> {
    if (this.stopped.signal.aborted) return { clean: true };
    this.closing = { graceful: options.graceful };
    if (!options.graceful) {
      this.socket.close(1000, "session ended");
      this.#dropUnlessReleased();
      return { clean: true };
    }
    this.goodbye(options.reason);
    if (await settlesWithin(this.ctx.clock, this.released, options.timeoutMs)) return { clean: true };
    this.socket.close(1000, "teardown timeout");
    this.#dropUnlessReleased();
    return { clean: false, detail: "The conversation engine did not close within the teardown timeout." };
  }

  #dropUnlessReleased(): void {
    void settlesWithin(this.ctx.clock, this.released, RELEASE_WAIT_MS).then((ok) => {
      if (!ok) this.socket.terminate();
    });
  }
}
