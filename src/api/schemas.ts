/**
 * Request schemas of the API and its answers outside the session contract (API keys, the webhook secret,
 * the catalog, the error body): zod, registered as OpenAPI components. The session answers and the webhook
 * payloads are in `src/vocabulary/schemas.ts`.
 *
 * @module
 */
import { z } from "@hono/zod-openapi";
import { SCOPES } from "../auth/scopes.ts";
import { ERROR_CODES } from "../errors.ts";
import { KEY_ID_PATTERN, MAX_ID_LENGTH, SESSION_ID_PATTERN } from "../ids.ts";
import { displayNameField, urlField } from "../text_fields.ts";
import { ProviderConfig } from "../providers/definitions/config_schema.ts";
import { epochMs, ProviderType, Transport } from "../vocabulary/schemas.ts";

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

/** POST /v1/sessions/{session_id}/end query. */
export const EndQuery = z.object({
  force: z.enum(["true", "false"]).optional().openapi({
    param: { name: "force", in: "query" },
    description: "`true` skips the graceful disconnect handshake and terminates resources immediately.",
  }),
});

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
