/**
 * The client: one method per endpoint of the API, on top of openapi-fetch and the types generated from
 * `openapi.json`.
 *
 * @module
 */
import type { Client as FetchClient } from "openapi-fetch";
import type { paths } from "./schema.d.ts";
import type { RetryOptions } from "./retry.d.ts";
import type { ListSessionsQuery, SessionPages } from "./session_pages.d.ts";
import type {
  ApiKeyList,
  Avatar,
  AvatarList,
  ClientToken,
  CreateApiKeyRequest,
  CreateAvatarRequest,
  CreatedApiKey,
  CreatedSession,
  CreateSessionRequest,
  EndedSession,
  RevokedApiKey,
  Session,
  SessionMetrics,
  WebhookSecret,
} from "./types.d.ts";

/** Options of {@link createClient}. */
export interface ClientOptions {
  /** Origin (and optional path prefix) of the service, e.g. `"https://avatar.example.com"`. */
  baseUrl: string;
  /** A project API key (`svc_sk_…`), sent as `Authorization: Bearer <key>`. Keep it on servers. */
  apiKey: string;
  /**
   * The `fetch` used for every request (default: the global `fetch`, looked up at call time). Inject one to
   * add a proxy or TLS settings, to log, or to call an app in-process in tests.
   */
  fetch?: (request: Request) => Promise<Response>;
  /**
   * The retry policy: off unless given. `true` uses the defaults; an object overrides them (see
   * {@link RetryOptions} for what is retried and when).
   */
  retry?: boolean | RetryOptions;
}

/** Options every method takes. */
export interface RequestOptions {
  /** Aborts the call (an attempt in flight and any retry wait); the call rejects with the signal's reason. */
  signal?: AbortSignal;
  /** Overrides the client's retry policy for this call (`false` disables it). */
  retry?: boolean | RetryOptions;
}

/** Options of {@link Client.createSession}. */
export interface CreateSessionOptions extends RequestOptions {
  /**
   * The `Idempotency-Key` (1..255 printable ASCII characters). Default: a fresh UUID v4 per call, reused by
   * every retry of that call. Pass your own to repeat a create safely across calls or processes for 24 h.
   */
  idempotencyKey?: string;
}

/** Options of {@link Client.endSession}. */
export interface EndSessionOptions extends RequestOptions {
  /** `true` skips the graceful disconnect handshake and closes the engine at once. */
  force?: boolean;
}

/** Query of {@link Client.listApiKeys}. */
export interface ListApiKeysQuery {
  /** Page size, 1..100 (default 20). */
  limit?: number;
  /** Cursor: the last `key_id` of the previous page. */
  starting_after?: string;
}

/** Query of `listAvatars`. */
export interface ListAvatarsQuery {
  /** Page size, 1..100 (default 20). */
  limit?: number;
  /** `next_cursor` of the previous page. */
  cursor?: string;
}

/** Query of `previewAvatar`. */
export interface PreviewAvatarQuery {
  /** The mouth to draw (one of the 15 visemes; default `sil`, at rest). */
  viseme?:
    | "sil"
    | "PP"
    | "FF"
    | "TH"
    | "DD"
    | "kk"
    | "CH"
    | "SS"
    | "nn"
    | "RR"
    | "aa"
    | "E"
    | "ih"
    | "oh"
    | "ou";
}

/**
 * A client of the service. Every method resolves with the answer's body (typed from `openapi.json`) or
 * rejects with an {@link import("./api_error.d.ts").ApiError}. Invalid arguments reject with a `TypeError`
 * before anything is sent.
 */
export interface Client {
  /**
   * `POST /v1/api-keys`: creates a project API key with at most the scopes of the calling key. The answer's
   * `api_key` is the plaintext, returned this once. Scope `api_keys:write`. Never retried after a network
   * error (a repeat could mint a second key).
   */
  createApiKey(body: CreateApiKeyRequest, options?: RequestOptions): Promise<CreatedApiKey>;
  /**
   * `DELETE /v1/api-keys/{key_id}`: revokes a key, permanently and idempotently. Scope `api_keys:write`.
   */
  revokeApiKey(keyId: string, options?: RequestOptions): Promise<RevokedApiKey>;
  /**
   * `GET /v1/api-keys` (non-canonical): one page of the project's keys, revoked ones included, never their
   * plaintext. Scope `api_keys:read`.
   */
  listApiKeys(query?: ListApiKeysQuery, options?: RequestOptions): Promise<ApiKeyList>;
  /**
   * `POST /v1/sessions`: creates a session and starts it; resolves once it is `active`, with a 5-minute client
   * token. Always sends an `Idempotency-Key` (see {@link CreateSessionOptions.idempotencyKey}), so a retried
   * create never starts two sessions. Scope `sessions:write`.
   */
  createSession(body: CreateSessionRequest, options?: CreateSessionOptions): Promise<CreatedSession>;
  /**
   * `GET /v1/sessions` (non-canonical): the project's sessions, newest first, filtered by `status` (one or
   * more), `provider_type`, `transport` and `created_after`/`created_before`. Await the result for the first
   * page (`{ data, next_cursor }`), or iterate it with `for await` for every page (see {@link SessionPages}).
   * Scope `sessions:read`.
   */
  listSessions(query?: ListSessionsQuery, options?: RequestOptions): SessionPages;
  /** `GET /v1/sessions/{session_id}`: a session's status (never its token). Scope `sessions:read`. */
  getSession(sessionId: string, options?: RequestOptions): Promise<Session>;
  /**
   * `GET /v1/sessions/{session_id}/metrics` (non-canonical): the session's measured figures — first frame,
   * turn latency (the engine's share and the avatar's), mouth vs sound offset, frame latency, stalls and
   * catch-ups; live while it runs, final once it ended. A figure not measured yet is null. Scope
   * `sessions:read`.
   */
  getSessionMetrics(sessionId: string, options?: RequestOptions): Promise<SessionMetrics>;
  /**
   * `POST /v1/sessions/{session_id}/end`: ends an `active` session (gracefully, or at once with
   * `force: true`). Not idempotent: a second end rejects with `SVC_SESSION_ENDED`, so it is never retried
   * after a network error. Scope `sessions:write`.
   */
  endSession(sessionId: string, options?: EndSessionOptions): Promise<EndedSession>;
  /**
   * `POST /v1/sessions/{session_id}/client-token`: mints a fresh 5-minute client token and session token for
   * an `active` session. Scope `sessions:write`.
   */
  createClientToken(sessionId: string, options?: RequestOptions): Promise<ClientToken>;
  /**
   * `GET /v1/webhooks/secret` (non-canonical): the project's webhook signing secret (created on first use),
   * and the previous one while it still signs after a rotation. Scope `api_keys:write`.
   */
  getWebhookSecret(options?: RequestOptions): Promise<WebhookSecret>;
  /**
   * `POST /v1/webhooks/secret/rotate` (non-canonical): replaces the signing secret; for 24 hours deliveries
   * are signed with both. Scope `api_keys:write`. Never retried after a network error (a repeat would
   * rotate again and end the grace period of the secret receivers still hold).
   */
  rotateWebhookSecret(options?: RequestOptions): Promise<WebhookSecret>;
  /**
   * `POST /v1/avatars` (non-canonical): creates a project avatar from a style or a layered SVG drawing
   * (docs/avatars.md); a refused drawing rejects with `SVC_INVALID_AVATAR` naming what. Scope
   * `avatars:write`. Never retried after a network error (a repeat could make a second avatar).
   */
  createAvatar(body: CreateAvatarRequest, options?: RequestOptions): Promise<Avatar>;
  /** `GET /v1/avatars`: one page of the project's avatars, newest first. Scope `avatars:read`. */
  listAvatars(query?: ListAvatarsQuery, options?: RequestOptions): Promise<AvatarList>;
  /** `GET /v1/avatars/{avatar_id}`: one avatar (another project's id: 404). Scope `avatars:read`. */
  getAvatar(avatarId: string, options?: RequestOptions): Promise<Avatar>;
  /** `DELETE /v1/avatars/{avatar_id}`: deletes it; sessions running it keep it. Scope `avatars:write`. */
  deleteAvatar(avatarId: string, options?: RequestOptions): Promise<void>;
  /**
   * `GET /v1/avatars/{avatar_id}/preview.png`: the PNG bytes (512×512, transparent) at rest or saying
   * `viseme`. Scope `avatars:read`.
   */
  previewAvatar(avatarId: string, query?: PreviewAvatarQuery, options?: RequestOptions): Promise<Uint8Array>;
  /**
   * The underlying openapi-fetch client, authenticated, for anything the methods do not cover. Its calls
   * resolve with `{ data, error, response }` and are never retried.
   */
  readonly raw: FetchClient<paths, "application/json">;
}

/**
 * Creates a client.
 *
 * @example A backend creates a session on an external engine
 * ```ts
 * import { createClient } from "@avatar-svc/sdk";
 *
 * const svc = createClient({ baseUrl: "https://avatar.example.com", apiKey: "svc_sk_…", retry: true });
 * const session = await svc.createSession({
 *   provider_type: "external_engine",
 *   provider_config: {
 *     external_engine: { url: "wss://engine.example.com/v0", auth_headers: { Authorization: "Bearer …" } },
 *   },
 * });
 * console.log(session.session_id, session.client_token);
 * ```
 */
export declare function createClient(options: ClientOptions): Client;
