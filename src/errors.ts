/**
 * The error catalog and the one error type of the service.
 *
 * Every 4xx/5xx answer carries the flat body `{code, message, request_id, doc_url, retry_after?}`.
 * `retry_after` (and the `Retry-After` header) is present for exactly the retryable codes.
 * The catalog is the single source of truth for status, retryability and the error reference page
 * (`/docs/errors`), and feeds the OpenAPI enum.
 *
 * @module
 */

/** What the catalog knows of one code. */
export interface ErrorSpec {
  /** HTTP status the code is always answered with. */
  status: number;
  /** Whether clients may retry (the body then carries `retry_after`). */
  retryable: boolean;
  /** Default `retry_after` in seconds for retryable codes. */
  retryAfter?: number;
  /** `true` for codes from the interface specification, `false` for the ones this service added. */
  spec: boolean;
  /** When the service answers with the code, for the error reference. */
  when: string;
  /** The default, provider-agnostic message. */
  message: string;
}

/** Every error code with its status, retryability and description. */
export const ERROR_CATALOG = {
  SVC_INVALID_REQUEST: {
    status: 400,
    retryable: false,
    spec: false,
    when:
      "The body, a query parameter or a header is invalid: malformed JSON, a missing or mistyped field, an unknown field, an unknown scope, a name out of 1..128 characters, a webhook_url that is not https or whose host is (or resolves to) a loopback, private, link-local or metadata address, or a malformed Idempotency-Key.",
    message: "The request is invalid.",
  },
  SVC_PROVIDER_MISCONFIGURED: {
    status: 400,
    retryable: false,
    spec: true,
    when:
      "provider_type is unknown, provider_config does not hold exactly the key matching provider_type, a provider field breaks its rules, provider_connection_id is present anywhere in the body, or the conversation engine refused the session's audio format or protocol version, or said the model the deployment asks for (SVC_VENDOR1_REALTIME_MODEL) is missing or unknown.",
    message: "The provider configuration is invalid.",
  },
  SVC_RENDER_MISCONFIGURED: {
    status: 400,
    retryable: false,
    spec: true,
    when: "avatar_config names an avatar or background that is not in the catalog.",
    message: "The avatar configuration is invalid.",
  },
  SVC_INVALID_AVATAR: {
    status: 400,
    retryable: false,
    spec: false,
    when:
      "A project avatar was refused: an unknown or invalid style parameter, or an uploaded drawing that is not well-formed SVG, breaks the rig, exceeds a limit or carries something the allow-list refuses (script, external reference, DTD …); the message names what. Nothing of it is stored. See docs/avatars.md.",
    message: "The avatar is invalid.",
  },
  SVC_AUTH_MISSING_CREDENTIALS: {
    status: 401,
    retryable: false,
    spec: true,
    when: "Neither `Authorization: Bearer <key>` nor `x-api-key: <key>` was sent.",
    message: "No API key was provided.",
  },
  SVC_AUTH_INVALID_KEY: {
    status: 401,
    retryable: false,
    spec: true,
    when: "The API key is malformed (wrong prefix, length or checksum), unknown, or revoked.",
    message: "The API key is invalid or revoked.",
  },
  SVC_AUTH_EXPIRED_TOKEN: {
    status: 401,
    retryable: false,
    spec: true,
    when:
      "A media-plane connection presented a client_token or session_token past its expiry (5 minutes); the media WebSocket closes with 4401 and this code as its reason. Mint a fresh one with POST /v1/sessions/{session_id}/client-token.",
    message: "The token has expired.",
  },
  SVC_AUTH_INVALID_TOKEN: {
    status: 401,
    retryable: false,
    spec: false,
    when:
      "A media-plane connection presented no token, a malformed or forged one, or one minted for another session or purpose (the media WebSocket closes with 4403 and this code as its reason; see docs/media-plane.md).",
    message: "The token is invalid for this session.",
  },
  SVC_AUTH_MISSING_SCOPE: {
    status: 403,
    retryable: false,
    spec: true,
    when: "The API key is valid but lacks the scope the route requires.",
    message: "The API key lacks the scope this operation requires.",
  },
  SVC_AUTH_FORBIDDEN: {
    status: 403,
    retryable: false,
    spec: true,
    when:
      "An API key tried to create a key with a scope it does not hold itself (no privilege escalation), or a request to the demo page's backend (`/demo/api/*`) did not come from the demo page.",
    message: "The API key may not grant scopes it does not hold.",
  },
  SVC_API_KEY_NOT_FOUND: {
    status: 404,
    retryable: false,
    spec: false,
    when: "The key_id is unknown, malformed, or belongs to another project.",
    message: "No such API key.",
  },
  SVC_SESSION_NOT_FOUND: {
    status: 404,
    retryable: false,
    spec: true,
    when: "The session_id is unknown, malformed, or belongs to another project.",
    message: "No such session.",
  },
  SVC_AVATAR_NOT_FOUND: {
    status: 404,
    retryable: false,
    spec: false,
    when:
      "No project avatar of the caller's project has this id (deleted, never created, or another project's).",
    message: "No such avatar.",
  },
  SVC_ROUTE_NOT_FOUND: {
    status: 404,
    retryable: false,
    spec: false,
    when: "No route matches the method and path.",
    message: "No such route.",
  },
  SVC_METHOD_NOT_ALLOWED: {
    status: 405,
    retryable: false,
    spec: false,
    when:
      "The path exists but none of its routes serves the request's method (methods are case-sensitive: `get` is not `GET`); the `Allow` header lists the methods it serves. A method no route serves on a path no route has answers 404 SVC_ROUTE_NOT_FOUND.",
    message: "This route does not serve the request's method.",
  },
  SVC_REQUEST_TIMEOUT: {
    status: 408,
    retryable: false,
    spec: false,
    when:
      "The request body did not arrive in full within SVC_BODY_TIMEOUT_S (30 s by default) of the request's start.",
    message: "The request body did not arrive in time.",
  },
  SVC_SESSION_ENDED: {
    status: 409,
    retryable: false,
    spec: true,
    when:
      "The session has already ended (`ended` or `ended_with_warnings`): a second end, or a client token for an ended session.",
    message: "The session has already ended.",
  },
  SVC_SESSION_CONFLICT: {
    status: 409,
    retryable: false,
    spec: true,
    when:
      "The session is `created`, `activating`, `ending` or `failed`, so it cannot be ended or given a client token now.",
    message: "The session is not active.",
  },
  SVC_SESSION_CANCELLED: {
    status: 409,
    retryable: false,
    spec: true,
    when: "The session was cancelled while it was starting (for example the service began shutting down).",
    message: "The session was cancelled before it became active.",
  },
  SVC_IDEMPOTENCY_IN_PROGRESS: {
    status: 409,
    retryable: true,
    retryAfter: 1,
    spec: false,
    when:
      "Another request with the same Idempotency-Key and body is still being processed and did not finish within 15 s.",
    message: "A request with this Idempotency-Key is still in progress.",
  },
  SVC_PAYLOAD_TOO_LARGE: {
    status: 413,
    retryable: false,
    spec: false,
    when: "The request body exceeds the limit (64 KiB by default, SVC_MAX_BODY_BYTES), on any route.",
    message: "The request body is too large.",
  },
  SVC_UNSUPPORTED_MEDIA_TYPE: {
    status: 415,
    retryable: false,
    spec: false,
    when: "A body was sent with a Content-Type other than application/json.",
    message: "The request body must be application/json.",
  },
  SVC_IDEMPOTENCY_KEY_REUSED: {
    status: 422,
    retryable: false,
    spec: false,
    when: "The Idempotency-Key was already used in the last 24 hours with a different request body.",
    message: "This Idempotency-Key was already used with a different request.",
  },
  SVC_RATE_LIMIT_EXCEEDED: {
    status: 429,
    retryable: true,
    retryAfter: 1,
    spec: true,
    when:
      "The API key exceeded its request rate (SVC_RATE_LIMIT_PER_MINUTE with burst SVC_RATE_LIMIT_BURST).",
    message: "Too many requests for this API key.",
  },
  SVC_RATE_LIMIT_CONCURRENT_SESSIONS: {
    status: 429,
    retryable: true,
    retryAfter: 10,
    spec: true,
    when: "The project already has its ceiling of live sessions (SVC_MAX_CONCURRENT_SESSIONS).",
    message: "The project has reached its ceiling of concurrent sessions.",
  },
  SVC_RATE_LIMIT_PROVIDER_QUOTA: {
    status: 429,
    retryable: true,
    retryAfter: 30,
    spec: true,
    when:
      "The conversation engine refused the session because its quota or rate limit is exhausted; retry_after is the engine's Retry-After when it sent one (see docs/providers.md).",
    message: "The conversation provider's quota is exhausted.",
  },
  SVC_INTERNAL_ERROR: {
    status: 500,
    retryable: false,
    spec: false,
    when: "An unexpected internal error. The request_id identifies it in the service's logs.",
    message: "An unexpected internal error occurred.",
  },
  SVC_PROVIDER_DOWNSTREAM_FAILED: {
    status: 502,
    retryable: true,
    retryAfter: 5,
    spec: true,
    when:
      "The conversation engine refused the session's credentials or failed during start (see docs/engine-protocol-v0.md §8 and docs/providers.md).",
    message: "The conversation provider failed to start the session.",
  },
  SVC_RENDER_FAILED: {
    status: 502,
    retryable: false,
    spec: true,
    when:
      "The avatar renderer or its encoder (ffmpeg) could not start, or failed before the session's first frame.",
    message: "The avatar renderer failed.",
  },
  SVC_SFU_NEGOTIATION_FAILED: {
    status: 502,
    retryable: true,
    retryAfter: 5,
    spec: true,
    when:
      "transport webrtc_sfu: the SFU (media server) refused to set up the session's mountpoint or microphone room.",
    message: "Media negotiation failed.",
  },
  SVC_PROVIDER_UNAVAILABLE: {
    status: 503,
    retryable: true,
    retryAfter: 5,
    spec: true,
    when:
      "The conversation engine could not be reached (connection refused, DNS or TLS failure), or the provider type is not available in this deployment.",
    message: "The conversation provider is unavailable.",
  },
  SVC_SESSION_STATE_UNAVAILABLE: {
    status: 503,
    retryable: true,
    retryAfter: 2,
    spec: true,
    when: "The session store (Deno KV) failed during the request. Nothing was half-written; retry.",
    message: "Session state is temporarily unavailable.",
  },
  SVC_RENDER_CAPACITY: {
    status: 503,
    retryable: true,
    retryAfter: 10,
    spec: true,
    when: "Every render slot of the process is in use (SVC_RENDER_CAPACITY concurrent renders).",
    message: "No avatar rendering capacity is available.",
  },
  SVC_SFU_CONNECTION_FAILED: {
    status: 503,
    retryable: true,
    retryAfter: 5,
    spec: true,
    when:
      "transport webrtc_sfu: the SFU (media server) could not be reached or did not answer while the session was set up.",
    message: "The media server connection failed.",
  },
  SVC_SFU_ROOM_FULL: {
    status: 503,
    retryable: true,
    retryAfter: 10,
    spec: true,
    when:
      "transport webrtc_sfu: the SFU (media server) has no capacity left for another session (no free media port).",
    message: "The media room is full.",
  },
  SVC_SFU_NOT_CONFIGURED: {
    status: 503,
    retryable: false,
    spec: true,
    when:
      "transport webrtc_sfu was requested but no SFU is configured. The service fails closed and never falls back to websocket_fmp4.",
    message: "The webrtc_sfu transport is not configured.",
  },
  SVC_TOKEN_SECRET_NOT_CONFIGURED: {
    status: 503,
    retryable: false,
    spec: false,
    when:
      "No token signing secret is configured (SVC_TOKEN_SECRET unset and SVC_TOKEN_SECRET_EPHEMERAL=false), so client tokens cannot be minted.",
    message: "Client tokens cannot be issued: no signing secret is configured.",
  },
  SVC_PROVIDER_TIMEOUT: {
    status: 504,
    retryable: true,
    retryAfter: 5,
    spec: true,
    when: "The conversation engine did not complete its handshake within SVC_PROVIDER_CONNECT_TIMEOUT_MS.",
    message: "The conversation provider did not respond in time.",
  },
  SVC_RENDER_TIMEOUT: {
    status: 504,
    retryable: true,
    retryAfter: 5,
    spec: true,
    when:
      "The avatar renderer did not produce its first encoded frame within SVC_RENDER_FIRST_FRAME_TIMEOUT_MS (5 s by default).",
    message: "The avatar renderer did not start in time.",
  },
} as const satisfies Record<string, ErrorSpec>;

/** Every error code the service can answer with. */
export type ErrorCode = keyof typeof ERROR_CATALOG;

/** All codes, in catalog order (for the OpenAPI enum). */
export const ERROR_CODES = Object.keys(ERROR_CATALOG) as [ErrorCode, ...ErrorCode[]];

/** The catalog entry of a code. */
export function errorSpec(code: ErrorCode): ErrorSpec {
  return ERROR_CATALOG[code];
}

/**
 * The one error type: thrown anywhere, turned into the flat error body by the app's `onError`.
 *
 * @example Usage
 * ```ts
 * import { ApiError } from "./errors.ts";
 * const err = new ApiError("SVC_RATE_LIMIT_CONCURRENT_SESSIONS", "The project has reached its ceiling.");
 * err.status; // 429, from the catalog
 * err.retryAfter; // set: the code is retryable
 * // thrown from a handler, the app's onError answers it with the flat error body
 * ```
 */
export class ApiError extends Error {
  /** The error code. */
  declare readonly code: ErrorCode;
  /** HTTP status from the catalog. */
  declare readonly status: number;
  /** Seconds to wait before retrying; set exactly for retryable codes. */
  declare readonly retryAfter: number | undefined;

  constructor(code: ErrorCode, message?: string, options: { retryAfter?: number; cause?: unknown } = {}) {
    const spec: ErrorSpec = ERROR_CATALOG[code];
    const fields = {
      code,
      status: spec.status,
      retryAfter: spec.retryable
        ? Math.min(3600, Math.max(1, Math.ceil(options.retryAfter ?? spec.retryAfter ?? 1)))
        : undefined,
    };
    if (spec.status < 500 && options.cause === undefined) {
      // A client error is an answer, not a fault: it is built without running Error's constructor, which
      // in Deno walks the stack even with Error.stackTraceLimit = 0 (1.6 µs at the top of a stack, ~5.6 µs
      // eight async frames down: more than the rest of a 401 answer). It is still an Error and an ApiError
      // (`instanceof` holds, so Hono's onError receives it); it has no `stack`, which nothing reads for a
      // client error (only 5xx and unexpected errors are logged).
      const self = Object.create(new.target.prototype) as ApiError;
      self.message = message ?? spec.message;
      return Object.assign(self, fields);
    }
    super(message ?? spec.message, { cause: options.cause });
    Object.assign(this, fields);
  }
}
ApiError.prototype.name = "ApiError";

/** The flat error body of every 4xx/5xx answer. */
export interface ErrorBody {
  code: ErrorCode;
  message: string;
  request_id: string;
  doc_url: string;
  retry_after?: number;
}

/** Builds the error body for an {@link ApiError}. */
export function errorBody(err: ApiError, requestId: string, docsUrl: string): ErrorBody {
  const body: ErrorBody = {
    code: err.code,
    message: err.message,
    request_id: requestId,
    doc_url: docUrl(docsUrl, err.code),
  };
  if (err.retryAfter !== undefined) body.retry_after = err.retryAfter;
  return body;
}

/** The absolute URL of a code's entry in the error reference. */
export function docUrl(docsUrl: string, code: ErrorCode): string {
  return `${docsUrl}/errors#${code.toLowerCase()}`;
}
