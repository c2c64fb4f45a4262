/**
 * Request and response schemas of the API (zod, registered as OpenAPI components).
 *
 * @module
 */
import { z } from "@hono/zod-openapi";
import { SCOPES } from "../auth/scopes.ts";
import { ERROR_CODES } from "../errors.ts";
import { KEY_ID_PATTERN, MAX_ID_LENGTH, SESSION_ID_PATTERN } from "../ids.ts";
import { displayNameField, urlField } from "../text_fields.ts";
import { SESSION_STATUSES } from "../vocabulary/session_states.ts";
import { END_REASONS } from "../vocabulary/end_reasons.ts";
import { ProviderConfig } from "../providers/config_schema.ts";
import { PROVIDER_TYPES } from "../vocabulary/provider_types.ts";
import { REQUESTED_TRANSPORTS } from "../vocabulary/transports.ts";

const epochMs = () =>
  z.number().int().min(0).openapi({ format: "int64", description: "Unix epoch milliseconds" });

/** The flat error body. */
export const ErrorBody = z.object({
  code: z.enum(ERROR_CODES).openapi({
    description: "Machine-readable error code (see the error reference).",
  }),
  message: z.string().min(1).openapi({ description: "Human-readable, provider-agnostic message." }),
  request_id: z.uuid().openapi({ description: "Equals the X-Request-Id response header." }),
  doc_url: z.url().regex(/^https:\/\//).openapi({ description: "This code's entry in the error reference." }),
  retry_after: z.number().int().min(1).max(3600).optional().openapi({
    description: "Seconds to wait before retrying (with jitter). Present exactly for retryable codes.",
  }),
}).openapi("ErrorBody");

/** A scope name. */
export const Scope = z.enum(SCOPES).openapi("Scope");

const name = displayNameField(128).openapi({
  description:
    "1..128 characters; control, format (bidi, zero-width, BOM) and line/paragraph separator characters, unpaired surrogates and blank names are refused.",
});

/** POST /v1/api-keys body. */
export const CreateApiKeyBody = z.strictObject({
  name,
  scopes: z.array(Scope).min(1).max(SCOPES.length * 4),
}).openapi("CreateApiKeyRequest");

/** POST /v1/api-keys answer: the only place the plaintext key ever appears. */
export const CreatedApiKey = z.object({
  api_key: z.string().min(1).openapi({
    description: "The key's plaintext. Shown exactly once; store it now.",
  }),
  created_at: epochMs(),
  key_id: z.string().regex(KEY_ID_PATTERN),
  name: z.string(),
  scopes: z.array(Scope).min(1),
}).openapi("CreatedApiKey");

/** DELETE /v1/api-keys/{key_id} answer. */
export const RevokedApiKey = z.object({
  key_id: z.string().regex(KEY_ID_PATTERN),
  revoked_at: epochMs(),
  status: z.enum(["revoked"]),
}).openapi("RevokedApiKey");

/** One key in the (non-canonical) listing; never the plaintext. */
export const ApiKeySummary = z.object({
  key_id: z.string().regex(KEY_ID_PATTERN),
  name: z.string(),
  scopes: z.array(Scope),
  created_at: epochMs(),
  revoked_at: epochMs().nullable(),
  status: z.enum(["active", "revoked"]),
  hint: z.string().openapi({ description: "Last 4 characters of the key, to recognise it." }),
}).openapi("ApiKeySummary");

/** GET /v1/api-keys answer. */
export const ApiKeyList = z.object({
  data: z.array(ApiKeySummary),
  has_more: z.boolean(),
}).openapi("ApiKeyList");

/** key_id path parameter. */
export const KeyIdParam = z.object({
  key_id: z.string().min(1).max(MAX_ID_LENGTH).regex(KEY_ID_PATTERN).openapi({
    param: { name: "key_id", in: "path" },
  }),
});
/** session_id path parameter. */
export const SessionIdParam = z.object({
  session_id: z.string().min(1).max(MAX_ID_LENGTH).regex(SESSION_ID_PATTERN).openapi({
    param: { name: "session_id", in: "path" },
    example: "session:3kTMd9xq0bq1h7nYQ2Lw6A",
  }),
});

/** Session statuses. */
export const SessionStatus = z.enum(SESSION_STATUSES).openapi("SessionStatus");
/** End reasons. */
export const EndReason = z.enum(END_REASONS).openapi("EndReason", {
  description: `Why the session ended or failed: ${END_REASONS.join(", ")}. See docs/api.md#end-reasons.`,
});
/** Provider types. */
export const ProviderType = z.enum(PROVIDER_TYPES).openapi("ProviderType");
/** Requested transports. */
export const Transport = z.enum(REQUESTED_TRANSPORTS).openapi("Transport");

/** `avatar_config`. */
export const AvatarConfig = z.strictObject({
  avatar_id: z.string().min(1).max(64).optional().openapi({
    description:
      "An avatar of the catalog (GET /v1/catalog); default `ada`. Unknown → 400 SVC_RENDER_MISCONFIGURED.",
  }),
  bg_id: z.string().min(1).max(64).optional().openapi({
    description: "A background of the catalog; default `studio`. Unknown → 400 SVC_RENDER_MISCONFIGURED.",
  }),
}).openapi("AvatarConfig");

const CatalogEntry = z.object({
  id: z.string(),
  name: z.string(),
  description: z.string(),
});

/** GET /v1/catalog answer (non-canonical). */
export const CatalogList = z.object({
  avatars: z.array(CatalogEntry.openapi("CatalogAvatar")),
  backgrounds: z.array(CatalogEntry.openapi("CatalogBackground")),
  default_avatar_id: z.string(),
  default_bg_id: z.string(),
}).openapi("Catalog");

/** POST /v1/sessions body. */
export const CreateSessionBody = z.strictObject({
  provider_type: ProviderType,
  provider_config: ProviderConfig,
  avatar_config: AvatarConfig.optional(),
  transport: Transport.default("auto"),
  webhook_url: urlField("https", 2048).optional().openapi({
    description:
      "Where lifecycle events are POSTed (see the `webhooks` of this document and docs/webhooks.md). Must be https; hosts resolving to loopback, private, link-local or metadata addresses are refused (400).",
  }),
}).openapi("CreateSessionRequest");

/** One ICE server (RFC 7065 URLs). */
export const IceServer = z.object({
  urls: z.union([z.string(), z.array(z.string())]),
  username: z.string().optional(),
  credential: z.string().optional(),
}).openapi("IceServer");

/** `stream_metadata`. */
export const StreamMetadata = z.object({
  ice_servers: z.array(IceServer),
  session_token: z.string().min(1).openapi({
    description:
      "Purpose-scoped media-plane token (5 minutes), distinct from the API key and the client token.",
  }),
  sfu_endpoint: z.string().nullable().openapi({ description: "Null for websocket_fmp4 sessions." }),
  media_url: z.string().nullable().openapi({
    description:
      "Added by this service: the media WebSocket of a websocket_fmp4 session (`ws(s)://…/media/v0/sessions/{session_id}`), authorised by `client_token` or `session_token` (see docs/media-plane.md). Null when this deployment runs no media plane.",
    example: "ws://localhost:8787/media/v0/sessions/session:3kTMd9xq0bq1h7nYQ2Lw6A",
  }),
}).openapi("StreamMetadata");

/** POST /v1/sessions answer. */
export const CreatedSession = z.object({
  client_token: z.string().min(1).openapi({ description: "5-minute HMAC-signed media-plane token." }),
  expires_at: epochMs(),
  session_id: z.string().regex(SESSION_ID_PATTERN),
  status: SessionStatus,
  stream_metadata: StreamMetadata,
  transport: Transport,
}).openapi("CreatedSession");

/** GET /v1/sessions/{session_id} answer. */
export const Session = z.object({
  session_id: z.string().regex(SESSION_ID_PATTERN),
  status: SessionStatus,
  provider_type: ProviderType,
  transport: Transport,
  created_at: epochMs().optional(),
  started_at: epochMs().optional(),
  ended_at: epochMs().optional(),
  end_reason: EndReason.optional().openapi({
    description: "Added field (not in the specification): why the session ended. Absent while it is live.",
  }),
}).openapi("Session");

/** POST /v1/sessions/{session_id}/end query. */
export const EndQuery = z.object({
  force: z.enum(["true", "false"]).optional().openapi({
    param: { name: "force", in: "query" },
    description: "`true` skips the graceful disconnect handshake and terminates resources immediately.",
  }),
});

/** POST /v1/sessions/{session_id}/end answer. */
export const EndedSession = z.object({
  session_id: z.string().regex(SESSION_ID_PATTERN),
  status: SessionStatus,
  ended_at: epochMs(),
  chunks_rendered: z.number().int().min(0).optional(),
  duration_s: z.number().min(0).optional(),
  warning: z.string().optional().openapi({ description: "Present only with status ended_with_warnings." }),
  end_reason: EndReason.optional().openapi({
    description: "Added field (not in the specification): `ended_by_api` or `ended_by_api_forced`.",
  }),
}).openapi("EndedSession");

/** POST /v1/sessions/{session_id}/client-token answer. */
export const ClientToken = z.object({
  client_token: z.string().min(1),
  expires_at: epochMs(),
  stream_metadata: StreamMetadata,
  transport: Transport,
}).openapi("ClientToken");

/** Optional Idempotency-Key header of POST /v1/sessions. */
export const IdempotencyHeader = z.object({
  "Idempotency-Key": z.string().regex(/^[\x21-\x7e]{1,255}$/, "must be 1..255 printable ASCII characters")
    .optional().openapi({
      description:
        "1..255 printable ASCII characters (a UUID is recommended). Same key and body within 24 h → the same session (with fresh tokens); same key, other body → 422.",
    }),
});

/** The project's webhook signing secret (non-canonical routes). */
export const WebhookSecret = z.object({
  secret: z.string().regex(/^whsec_[A-Za-z0-9+/=]+$/).openapi({
    description: "`whsec_` + base64 of 32 random bytes: the HMAC-SHA256 key of `webhook-signature` (v1).",
  }),
  previous_secret: z.string().nullable().openapi({
    description:
      "The secret before the last rotation; deliveries carry its signature too until previous_valid_until.",
  }),
  previous_valid_until: epochMs().nullable(),
  created_at: epochMs(),
  rotated_at: epochMs().nullable(),
}).openapi("WebhookSecret");
