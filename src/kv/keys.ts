/**
 * Every Deno KV key shape of the service, in one place.
 *
 * Project data lives under `["project", project_id, …]`, so a lookup with another project's id is
 * structurally a miss (cross-project access answers 404). Keys outside a project are indexes read before the
 * project is known: the API-key hash index (authentication), and the process-wide indexes of the lifecycle
 * machinery (owner leases, the sessions each process owns, the webhook due index), which hold ids only and
 * point back into project data.
 *
 * | key | value |
 * |---|---|
 * | `["api_key_hash", sha256_hex]` | {@link import("./api_key_cache.ts").ApiKeyIndex} |
 * | `["project", pid, "api_key", key_id]` | {@link import("./api_keys.ts").ApiKeyRecord} |
 * | `["project", pid, "session", session_id]` | {@link import("../vocabulary/session_record.ts").SessionRecord} |
 * | `["project", pid, "session_index", status, provider_type, transport, created_at, session_id]` | {@link import("./session_index.ts").IndexValue}: with its key, the session's listing item; 4 entries a session (its facets, or `"*"` for any: `(s,p,t)`, `(s,*,*)`, `(*,p,t)`, `(*,*,*)`), see `session_index.ts` |
 * | `["project", pid, "session_metrics", session_id]` | {@link import("../vocabulary/schemas.ts").SessionMetricsSnapshot}: a live session's figures, flushed by its worker (expire after a day), see `session_metrics.ts` |
 * | `["project", pid, "live_sessions"]` | number of sessions holding a concurrency slot |
 * | `["project", pid, "idempotency", idempotency_key]` | {@link import("./idempotency.ts").IdempotencyRecord} |
 * | `["project", pid, "webhook_secret"]` | {@link import("./webhook_secrets.ts").WebhookSecretRecord} |
 * | `["project", pid, "webhook_event", event_id]` | {@link import("./webhook_outbox.ts").WebhookEventRecord} |
 * | `["project", pid, "webhook_gone", url_sha256_hex]` | {@link import("./webhook_outbox.ts").GoneUrlRecord} |
 * | `["api_key_revocation"]` | time of the last revocation; its versionstamp is the revocation epoch (see `api_key_cache.ts`) |
 * | `["rate_demand", instance_id]` | {@link import("./rate_limit.ts").DemandRecord}: an API instance's recent request rates per key |
 * | `["owner_lease", instance_id]` | {@link import("./owner_leases.ts").OwnerLease} |
 * | `["owned_session", instance_id, pid, session_id]` | `true`: a live session the instance runs |
 * | `["owner_load", instance_id]` | number of live sessions placed on the instance (its load) |
 * | `["webhook_due", due_at_ms, pid, event_id]` | `true`: the event is due for an attempt at `due_at_ms` |
 * | `["project", pid, "avatar", avatar_id]` | {@link import("./avatars.ts").AvatarRecord}: a project avatar (kept as a tombstone for a while after its deletion, for the sessions that run it) |
 * | `["project", pid, "avatar_svg", avatar_id, part]` | `Uint8Array`: part `part` (0, 1, …) of an uploaded avatar's sanitised drawing (UTF-8), written atomically with its record |
 * | `["project", pid, "avatar_index", created_at, avatar_id]` | `true`: the listing of the project's avatars, newest first (removed on deletion) |
 * | `["project", pid, "avatar_count"]` | `Deno.KvU64`: the project's avatars (the quota's count) |
 * | `["list_cursor_key"]` | {@link import("./list_cursor_key.ts").CursorKeyRecord}: the HMAC key that signs listing cursors |
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
/** Key of a live session's figures, as its worker last flushed them (see `session_metrics.ts`). */
export const sessionMetricsKey = (projectId: string, sessionId: string): Deno.KvKey => [
  "project",
  projectId,
  "session_metrics",
  sessionId,
];
/** Prefix of a project's session records. */
export const sessionPrefix = (projectId: string): Deno.KvKey => ["project", projectId, "session"];
/** The "any value" facet of a listing index key. */
export const ANY_FACET = "*";
/**
 * Key of a session's entry in the listing index. `status`, `providerType` and `transport` are the session's
 * values or {@link ANY_FACET}; entries sort by `createdAt`, then `sessionId`.
 */
export const sessionIndexKey = (
  projectId: string,
  status: string,
  providerType: string,
  transport: string,
  createdAt: number,
  sessionId: string,
): Deno.KvKey => [
  "project",
  projectId,
  "session_index",
  status,
  providerType,
  transport,
  createdAt,
  sessionId,
];
/** Prefix of one stream of the listing index (one combination of facet values). */
export const sessionIndexPrefix = (
  projectId: string,
  status: string,
  providerType: string,
  transport: string,
): Deno.KvKey => ["project", projectId, "session_index", status, providerType, transport];
/** Key of the HMAC key that signs listing cursors (one per deployment, created on first use). */
export const listCursorKeyKey: Deno.KvKey = ["list_cursor_key"];
/** Key of a project's live-session counter. */
export const liveSessionsKey = (projectId: string): Deno.KvKey => ["project", projectId, "live_sessions"];
/** Key of an idempotency record. */
export const idempotencyKey = (projectId: string, key: string): Deno.KvKey => [
  "project",
  projectId,
  "idempotency",
  key,
];
/**
 * Key written in the same atomic operation as every API key revocation: its versionstamp tells each
 * process's key cache that cached entries may be stale.
 */
export const apiKeyRevocationKey: Deno.KvKey = ["api_key_revocation"];
/** Key of an API instance's published request rates (the rate limiter's shared view). */
export const rateDemandKey = (instanceId: string): Deno.KvKey => ["rate_demand", instanceId];
/** Prefix of every instance's published request rates. */
export const rateDemandPrefix: Deno.KvKey = ["rate_demand"];
/** Key of a project's webhook signing secret. */
export const webhookSecretKey = (projectId: string): Deno.KvKey => ["project", projectId, "webhook_secret"];
/** Key of a webhook event (the outbox entry). */
export const webhookEventKey = (projectId: string, eventId: string): Deno.KvKey => [
  "project",
  projectId,
  "webhook_event",
  eventId,
];
/** Prefix of a project's webhook events. */
export const webhookEventPrefix = (projectId: string): Deno.KvKey => ["project", projectId, "webhook_event"];
/** Key of a webhook URL that answered 410 Gone (deliveries to it stop). */
export const webhookGoneKey = (projectId: string, urlHashHex: string): Deno.KvKey => [
  "project",
  projectId,
  "webhook_gone",
  urlHashHex,
];
/** Key of a process's owner lease. */
export const ownerLeaseKey = (instanceId: string): Deno.KvKey => ["owner_lease", instanceId];
/** Prefix of every owner lease. */
export const ownerLeasePrefix: Deno.KvKey = ["owner_lease"];
/** Key of the index entry recording that `instanceId` runs a live session. */
export const ownedSessionKey = (instanceId: string, projectId: string, sessionId: string): Deno.KvKey => [
  "owned_session",
  instanceId,
  projectId,
  sessionId,
];
/** Key of an instance's load counter (live sessions placed on it). */
export const ownerLoadKey = (instanceId: string): Deno.KvKey => ["owner_load", instanceId];
/** Prefix of the live sessions a process runs. */
export const ownedSessionPrefix = (instanceId: string): Deno.KvKey => ["owned_session", instanceId];
/** Key of a webhook event's entry in the due index. */
export const webhookDueKey = (dueAt: number, projectId: string, eventId: string): Deno.KvKey => [
  "webhook_due",
  dueAt,
  projectId,
  eventId,
];
/** Prefix of the webhook due index (ordered by due time). */
export const webhookDuePrefix: Deno.KvKey = ["webhook_due"];

/** Key of a project avatar's record. */
export const avatarKey = (projectId: string, avatarId: string): Deno.KvKey => [
  "project",
  projectId,
  "avatar",
  avatarId,
];

/** Key of one part of a project avatar's drawing. */
export const avatarSvgPartKey = (projectId: string, avatarId: string, part: number): Deno.KvKey => [
  "project",
  projectId,
  "avatar_svg",
  avatarId,
  part,
];

/** Key of a project avatar's listing entry. */
export const avatarIndexKey = (projectId: string, createdAt: number, avatarId: string): Deno.KvKey => [
  "project",
  projectId,
  "avatar_index",
  createdAt,
  avatarId,
];

/** Prefix of a project's avatar listing. */
export const avatarIndexPrefix = (projectId: string): Deno.KvKey => ["project", projectId, "avatar_index"];

/** Key of a project's avatar count. */
export const avatarCountKey = (projectId: string): Deno.KvKey => ["project", projectId, "avatar_count"];
