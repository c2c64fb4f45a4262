/**
 * The start of every engine bridge: open the socket, send the bridge's first message, and wait for the
 * engine's ready message, all within the session's connect deadline (on the injected clock). Whatever goes
 * wrong before ready (no answer, a refused upgrade, a close, an error message, the deadline) is handed to
 * the bridge's failure map, which turns it into the service's error; the socket is released before the
 * error is thrown.
 *
 * @module
 */
import type { Clock } from "../../clock.ts";
import { ApiError } from "../../errors.ts";
import type { Endpoint, HeaderLine } from "./endpoint.ts";
import type { Closed, Frame, WireSocket } from "./wire_socket.ts";
import type { WireFailure } from "./failure.ts";
import type { WireClient } from "./upgrade.ts";
import { WireError } from "./failure.ts";
import { deadline as startDeadline, DeadlineExceeded, settlesWithin } from "./wait.ts";

/** Something that ended a start before the engine was ready. */
export type StartFailure =
  | WireFailure
  /** The engine closed the connection. */
  | { kind: "closed"; code: number; reason: string }
  /** The deadline passed. */
  | { kind: "timeout" };

/** What a message before ready means: ready (with what it announced), a failure, or nothing yet. */
export type HandshakeStep<R> = { ready: R } | { fail: ApiError } | undefined;

/** One bridge's handshake. */
export interface HandshakeSpec<R> {
  client: WireClient;
  clock: Clock;
  /** The whole deadline: connection, upgrade and handshake... */
  timeoutMs: number;
  /** ...or a deadline already running (steps before the socket, such as minting a URL, took part of it). */
  deadline?: AbortSignal;
  /** Where to connect (its request target may borrow credential bytes: see `endpoint.ts`). */
  endpoint: Endpoint;
  /** Headers of the upgrade (values may borrow credential bytes). */
  headers?: HeaderLine[];
  protocols?: string[];
  /** A peer may select none of `protocols` (see `OpenOptions.protocolOptional` in socket.ts). */
  protocolOptional?: boolean;
  /** The socket is open: check it and send the bridge's first message (or return the failure). */
  opened(socket: WireSocket): ApiError | void;
  /** Reads one message before ready. */
  message(frame: Frame, socket: WireSocket): HandshakeStep<R>;
  /** Maps a failure to the service's error. */
  mapFailure(failure: StartFailure): ApiError;
  /**
   * The final error of a start an engine's message failed, once the close that follows it is known (vendors
   * close right after their error, and some say why only in the close reason; `closed` is null when the
   * socket was not released in time). Default: {@link refineByClose}.
   */
  afterClose?(error: ApiError, closed: Closed | null): ApiError;
}

/**
 * How long a failed start waits for the peer to complete the close handshake, then (after dropping the
 * connection) for the socket's release. A start that fails at its deadline drops the connection at once and
 * waits for its release once: it answers within `SVC_PROVIDER_CONNECT_TIMEOUT_MS` + this.
 */
const RELEASE_WAIT_MS = 200;

/**
 * Runs a handshake. Resolves with the open socket (its frames after ready are queued for the connection's
 * handler) and what ready announced; rejects with an {@link ApiError}.
 *
 * Whatever fails before ready is mapped (and so logged by the bridge's map) once, and only when it ends the
 * start: a close of a socket that became ready belongs to the live connection, not to the start.
 */
export async function handshake<R>(
  spec: HandshakeSpec<R>,
): Promise<{ socket: WireSocket; ready: R }> {
  const own = spec.deadline ? null : startDeadline(spec.clock, spec.timeoutMs);
  const signal = spec.deadline ?? own!.signal;
  const stopTimer = { abort: () => own?.stop() };
  let socket: WireSocket;
  try {
    socket = await spec.client.open({
      endpoint: spec.endpoint,
      headers: spec.headers,
      protocols: spec.protocols,
      protocolOptional: spec.protocolOptional,
      signal,
    });
  } catch (err) {
    stopTimer.abort();
    if (err instanceof DeadlineExceeded) throw spec.mapFailure({ kind: "timeout" });
    if (err instanceof WireError) throw spec.mapFailure(err.failure);
    throw err;
  }
  const open = socket;
  return await new Promise((resolve, reject) => {
    let settled = false;
    const onAbort = () => fail({ kind: "timeout" });
    /** Ends the start with `failure` (mapped now) or with the bridge's own error. */
    const fail = async (failure: StartFailure | { kind: "error"; error: ApiError }) => {
      if (settled) return;
      settled = true;
      stopTimer.abort();
      signal.removeEventListener("abort", onAbort);
      open.setHandler(null);
      const error = "error" in failure ? failure.error : spec.mapFailure(failure);
      let released: boolean;
      if (failure.kind === "timeout") {
        // A peer that let the deadline pass is not waited for: the connection is dropped at once.
        open.terminate();
        released = await settlesWithin(spec.clock, open.closed, RELEASE_WAIT_MS);
      } else {
        open.close(1000);
        released = await settlesWithin(spec.clock, open.closed, RELEASE_WAIT_MS);
        if (!released) {
          open.terminate();
          released = await settlesWithin(spec.clock, open.closed, RELEASE_WAIT_MS);
        }
      }
      if (failure.kind === "error") {
        reject((spec.afterClose ?? refineByClose)(error, released ? await open.closed : null));
        return;
      }
      reject(error);
    };
    if (signal.aborted) return void fail({ kind: "timeout" });
    signal.addEventListener("abort", onAbort, { once: true });
    open.closed.then((c: Closed) => fail({ kind: "closed", code: c.code, reason: c.reason }));
    open.setHandler((frame) => {
      if (settled) return;
      let step: HandshakeStep<R>;
      try {
        step = spec.message(frame, open);
      } catch {
        return void fail({ kind: "protocol" });
      }
      if (step === undefined) return;
      if ("fail" in step) return void fail({ kind: "error", error: step.fail });
      settled = true;
      stopTimer.abort();
      signal.removeEventListener("abort", onAbort);
      open.setHandler(null);
      resolve({ socket: open, ready: step.ready });
    });
    const problem = spec.opened(open);
    if (problem) void fail({ kind: "error", error: problem });
  });
}

/** The service's errors for engine start failures (provider-agnostic messages). */
export const startErrors = {
  /** The engine refused the credentials or failed to start the session. */
  downstream: () =>
    new ApiError(
      "SVC_PROVIDER_DOWNSTREAM_FAILED",
      "The conversation engine refused or failed to start the session.",
    ),
  /** The engine could not be reached (or is temporarily unavailable). */
  unavailable: (retryAfterS?: number | null) =>
    new ApiError(
      "SVC_PROVIDER_UNAVAILABLE",
      "The conversation engine could not be reached.",
      retryAfterS ? { retryAfter: retryAfterS } : {},
    ),
  /** The engine's quota or rate limit is exhausted. */
  quota: (retryAfterS?: number | null) =>
    new ApiError(
      "SVC_RATE_LIMIT_PROVIDER_QUOTA",
      "The conversation engine's quota is exhausted.",
      retryAfterS ? { retryAfter: retryAfterS } : {},
    ),
  /** No ready within the deadline. */
  timeout: () =>
    new ApiError("SVC_PROVIDER_TIMEOUT", "The conversation engine did not complete its handshake in time."),
  /** The engine's audio format or protocol version is not one the service speaks. */
  unsupported: () =>
    new ApiError(
      "SVC_PROVIDER_MISCONFIGURED",
      "The conversation engine does not accept the session's protocol version or audio format.",
    ),
  /** The engine says the model the deployment asks for is missing or unknown (not worth retrying). */
  model: () =>
    new ApiError(
      "SVC_PROVIDER_MISCONFIGURED",
      "The conversation engine does not accept the configured model.",
    ),
  /** The URL or credentials cannot be used at all. */
  unusable: () =>
    new ApiError("SVC_PROVIDER_MISCONFIGURED", "The conversation engine URL or headers are unusable."),
};

/** Close reasons and error texts that speak of quotas or rate limits (vendors say so in words only). */
const QUOTA_WORDS =
  /quota|rate[ _-]?limit|too many|concurren|insufficient[ _-]?(credit|fund|balance)|credits?\b/i;

/** Whether a vendor's error code or text speaks of a quota or rate limit. */
export function mentionsQuota(...texts: unknown[]): boolean {
  return texts.some((t) => typeof t === "string" && QUOTA_WORDS.test(t));
}

/**
 * A downstream failure whose close reason speaks of a quota is the quota's (429): the engine's error said
 * only that something failed.
 */
export function refineByClose(error: ApiError, closed: Closed | null): ApiError {
  return error.code === "SVC_PROVIDER_DOWNSTREAM_FAILED" && mentionsQuota(closed?.reason)
    ? startErrors.quota()
    : error;
}

/**
 * The mapping every vendor bridge shares: unreachable → 503; a refused upgrade → 429 for 429 (its
 * `Retry-After` kept), 503 for 502/503/504, 502 for anything else (401, 403, 404, …); a close before ready →
 * 503 for 1013, 429 when its reason speaks of a quota, else 502; a broken handshake → 502; the deadline →
 * 504.
 */
export function vendorStartFailure(f: StartFailure): ApiError {
  switch (f.kind) {
    case "unreachable":
      return startErrors.unavailable();
    case "refused":
      if (f.status === 429) return startErrors.quota(f.retryAfterS);
      if (f.status === 502 || f.status === 503 || f.status === 504) {
        return startErrors.unavailable(f.retryAfterS);
      }
      return startErrors.downstream();
    case "closed":
      if (f.code === 1013) return startErrors.unavailable();
      if (mentionsQuota(f.reason)) return startErrors.quota();
      return startErrors.downstream();
    case "timeout":
      return startErrors.timeout();
    case "invalid":
      return startErrors.unusable();
    case "protocol":
      return startErrors.downstream();
  }
}
