/**
 * Close codes of the media-plane WebSocket (documented in docs/media-plane.md). 4xxx codes are this
 * service's; the close reason is the error code a client should act on.
 *
 * @module
 */

/** Close codes and the error code each maps to. */
export const MEDIA_CLOSE = {
  /** The session ended (through the API or by the engine). */
  SESSION_ENDED: { code: 1000, reason: "session_ended" },
  /** The service is shutting down. */
  GOING_AWAY: { code: 1001, reason: "going_away" },
  /** An upstream frame broke the rules (not binary PCM16, odd length, over 64 KiB). */
  BAD_FRAME: { code: 1003, reason: "invalid_audio_frame" },
  /** The session's media plane failed (an encoder died); the session ends with a warning. */
  MEDIA_FAILED: { code: 1011, reason: "media_failed" },
  /** The token has expired: fetch a fresh one (client-token route) and reconnect. */
  TOKEN_EXPIRED: { code: 4401, reason: "SVC_AUTH_EXPIRED_TOKEN" },
  /** No token, a malformed or forged one, or one for another session or purpose. */
  TOKEN_REFUSED: { code: 4403, reason: "SVC_AUTH_INVALID_TOKEN" },
  /** The session does not exist, is not active, or does not run on this instance. */
  SESSION_NOT_FOUND: { code: 4404, reason: "SVC_SESSION_NOT_FOUND" },
  /** The client fell too far behind (its unsent backlog passed the limit). */
  TOO_SLOW: { code: 4408, reason: "client_too_slow" },
  /** The session already has its maximum number of media clients. */
  TOO_MANY_CLIENTS: { code: 4429, reason: "too_many_clients" },
} as const;
