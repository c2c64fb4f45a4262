/**
 * Every Deno KV key shape of the service, in one place.
 *
 * Project data lives under `["project", project_id, …]`, so a lookup with another project's id is
 * structurally a miss (cross-project access answers 404). The only key outside a project is the API-key
 * hash index, which authentication reads before the project is known.
 *
 * | key | value |
 * |---|---|
 * | `["api_key_hash", sha256_hex]` | {@link import("./api_keys.ts").ApiKeyIndex} |
 * | `["project", pid, "api_key", key_id]` | {@link import("./api_keys.ts").ApiKeyRecord} |
 * | `["project", pid, "session", session_id]` | {@link import("./sessions.ts").SessionRecord} |
 * | `["project", pid, "live_sessions"]` | number of sessions holding a concurrency slot |
 * | `["project", pid, "idempotency", idempotency_key]` | {@link import("./idempotency.ts").IdempotencyRecord} |
 * | `["project", pid, "rate_limit", key_id]` | GCRA theoretical arrival time (ms) |
 *
 * @module
 */

/** Key of the global API-key hash index entry. */
export const apiKeyHashKey = (hashHex: string): Deno.KvKey => ["api_key_hash", hashHex];
/** Key of an API key record. */
export const apiKeyKey = (projectId: string, keyId: string): Deno.KvKey => [
  "project",
  projectId,
  "api_key",
  keyId,
];
/** Prefix of a project's API key records. */
export const apiKeyPrefix = (projectId: string): Deno.KvKey => ["project", projectId, "api_key"];
/** Key of a session record. */
export const sessionKey = (projectId: string, sessionId: string): Deno.KvKey => [
  "project",
  projectId,
  "session",
  sessionId,
];
/** Prefix of a project's session records. */
export const sessionPrefix = (projectId: string): Deno.KvKey => ["project", projectId, "session"];
/** Key of a project's live-session counter. */
export const liveSessionsKey = (projectId: string): Deno.KvKey => ["project", projectId, "live_sessions"];
/** Key of an idempotency record. */
export const idempotencyKey = (projectId: string, key: string): Deno.KvKey => [
  "project",
  projectId,
  "idempotency",
  key,
];
/** Key of an API key's rate-limiter state. */
export const rateLimitKey = (projectId: string, keyId: string): Deno.KvKey => [
  "project",
  projectId,
  "rate_limit",
  keyId,
];
