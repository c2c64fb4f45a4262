/**
 * Named request and response types of the API, taken from the types generated from `openapi.json`
 * (`schema.d.ts`). Field names are the API's own (snake_case), exactly as on the wire.
 *
 * @module
 */
import type { components } from "./schema.d.ts";

type Schemas = components["schemas"];

/** Body of `createApiKey` (`POST /v1/api-keys`). */
export type CreateApiKeyRequest = Schemas["CreateApiKeyRequest"];
/** Answer of `createApiKey`: the only place a key's plaintext (`api_key`) ever appears. */
export type CreatedApiKey = Schemas["CreatedApiKey"];
/** Answer of `revokeApiKey` (`DELETE /v1/api-keys/{key_id}`). */
export type RevokedApiKey = Schemas["RevokedApiKey"];
/** One page of `listApiKeys` (`GET /v1/api-keys`, non-canonical). */
export type ApiKeyList = Schemas["ApiKeyList"];
/** One key of {@link ApiKeyList}: never its plaintext, only a 4-character `hint`. */
export type ApiKeySummary = Schemas["ApiKeySummary"];
/** An API key scope. */
export type Scope = Schemas["Scope"];

/** Body of `createSession` (`POST /v1/sessions`). */
export type CreateSessionRequest = Schemas["CreateSessionRequest"];
/** Answer of `createSession`: the session is `active`, with a 5-minute client token. */
export type CreatedSession = Schemas["CreatedSession"];
/** Answer of `getSession` (`GET /v1/sessions/{session_id}`): never the client token. */
export type Session = Schemas["Session"];
/** Answer of `endSession` (`POST /v1/sessions/{session_id}/end`). */
export type EndedSession = Schemas["EndedSession"];
/** Answer of `createClientToken` (`POST /v1/sessions/{session_id}/client-token`). */
export type ClientToken = Schemas["ClientToken"];
/** A session's state. */
export type SessionStatus = Schemas["SessionStatus"];
/** A transport (`auto` is only ever requested; answers carry the one in effect). */
export type Transport = Schemas["Transport"];
/** The media-plane details of a session. */
export type StreamMetadata = Schemas["StreamMetadata"];
/** A conversation engine type. */
export type ProviderType = Schemas["ProviderType"];
/** `provider_config`: exactly one key, matching `provider_type`. */
export type ProviderConfig = Schemas["ProviderConfig"];
/** `provider_config.external_engine`. */
export type ExternalEngineConfig = Schemas["ExternalEngineConfig"];
/** `provider_config.vendor1_realtime`. */
export type Vendor1RealtimeConfig = Schemas["Vendor1RealtimeConfig"];
/** `provider_config.vendor2`. */
export type Vendor2Config = Schemas["Vendor2Config"];
/** `provider_config.vendor3`. */
export type Vendor3Config = Schemas["Vendor3Config"];
/** `avatar_config`. */
export type AvatarConfig = Schemas["AvatarConfig"];

/** The flat error body of every 4xx/5xx answer of the service. */
export type ErrorBody = Schemas["ErrorBody"];
/** Every error code the service answers with (see the error reference). */
export type ServiceErrorCode = ErrorBody["code"];
