/**
 * How opening an engine connection fails: {@link WireFailure} (where it failed: before any answer, a refusal,
 * a broken handshake, a request that cannot be sent) and the one error the wire throws, {@link WireError},
 * whose message names no host, URL or header; with the two readings of a refusal shared by the WebSocket
 * upgrade and the plain request (`Retry-After`, a text-reporting client's failure message).
 *
 * @module
 */

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

/** A failure to open a connection (its message names no host, URL or header). */
export class WireError extends Error {
  override name = "WireError";
  constructor(readonly failure: WireFailure) {
    super(`engine connection failed: ${failure.kind}`);
  }
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
