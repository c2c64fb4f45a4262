/**
 * Named request and response types of the API, taken from the types generated from `openapi.json`
 * (`schema.d.ts`). Field names are the API's own (snake_case), exactly as on the wire.
 *
 * @module
 */
import type { components } from "./schema.d.ts";

/** Body of `createApiKey` (`POST /v1/api-keys`). */
export type CreateApiKeyRequest = components["schemas"]["CreateApiKeyRequest"];
/** Answer of `createApiKey`: the only place a key's plaintext (`api_key`) ever appears. */
export type CreatedApiKey = components["schemas"]["CreatedApiKey"];
/** Answer of `revokeApiKey` (`DELETE /v1/api-keys/{key_id}`). */
export type RevokedApiKey = components["schemas"]["RevokedApiKey"];
/** One page of `listApiKeys` (`GET /v1/api-keys`, non-canonical). */
export type ApiKeyList = components["schemas"]["ApiKeyList"];
/** One key of {@link ApiKeyList}: never its plaintext, only a 4-character `hint`. */
export type ApiKeySummary = components["schemas"]["ApiKeySummary"];
/** An API key scope. */
export type Scope = components["schemas"]["Scope"];

/** Body of `createSession` (`POST /v1/sessions`). */
export type CreateSessionRequest = components["schemas"]["CreateSessionRequest"];
/** Answer of `createSession`: the session is `active`, with a 5-minute client token. */
export type CreatedSession = components["schemas"]["CreatedSession"];
/** Answer of `getSession` (`GET /v1/sessions/{session_id}`): never the client token. */
export type Session = components["schemas"]["Session"];
/** One page of `listSessions` (`GET /v1/sessions`, non-canonical): sessions as `getSession` answers them. */
export type SessionList = components["schemas"]["SessionList"];
/** Answer of `endSession` (`POST /v1/sessions/{session_id}/end`). */
export type EndedSession = components["schemas"]["EndedSession"];
/**
 * Answer of `getSessionMetrics` (`GET /v1/sessions/{session_id}/metrics`, non-canonical), and the
 * `metrics` of the `session.ended` webhook.
 */
export type SessionMetrics = components["schemas"]["SessionMetrics"];
/** Count, median and 95th percentile of one measured figure (null until measured). */
export type MetricFigure = components["schemas"]["MetricFigure"];
/** Answer of `createClientToken` (`POST /v1/sessions/{session_id}/client-token`). */
export type ClientToken = components["schemas"]["ClientToken"];
/** A session's state. */
export type SessionStatus = components["schemas"]["SessionStatus"];
/** A transport (`auto` is only ever requested; answers carry the one in effect). */
export type Transport = components["schemas"]["Transport"];
/** The media-plane details of a session. */
export type StreamMetadata = components["schemas"]["StreamMetadata"];
/** A conversation engine type. */
export type ProviderType = components["schemas"]["ProviderType"];
/** `provider_config`: exactly one key, matching `provider_type`. */
export type ProviderConfig = components["schemas"]["ProviderConfig"];
/** `provider_config.external_engine`. */
export type ExternalEngineConfig = components["schemas"]["ExternalEngineConfig"];
/** `provider_config.vendor1_realtime`. */
export type Vendor1RealtimeConfig = components["schemas"]["Vendor1RealtimeConfig"];
/** `provider_config.vendor2`. */
export type Vendor2Config = components["schemas"]["Vendor2Config"];
/** `provider_config.vendor3`. */
export type Vendor3Config = components["schemas"]["Vendor3Config"];
/** `avatar_config`. */
export type AvatarConfig = components["schemas"]["AvatarConfig"];

/** Answer of `getWebhookSecret` / `rotateWebhookSecret` (`/v1/webhooks/secret`, non-canonical). */
export type WebhookSecret = components["schemas"]["WebhookSecret"];

/** The flat error body of every 4xx/5xx answer of the service. */
export type ErrorBody = components["schemas"]["ErrorBody"];
/** Every error code the service answers with (see the error reference). */
export type ServiceErrorCode = ErrorBody["code"];
