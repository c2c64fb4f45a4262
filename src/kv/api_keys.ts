/**
 * API key storage. Only the SHA-256 of a key's plaintext is stored: as the key of the global hash
 * index (for authentication) and inside the record. Index and record are written in one atomic operation.
 *
 * @module
 */
import { generateApiKey, hashApiKey } from "../auth/api_key_format.ts";
import type { Scope } from "../auth/scopes.ts";
import { newKeyId } from "../ids.ts";
import { casLoop, kvOp } from "./guard.ts";
import { apiKeyHashKey, apiKeyKey, apiKeyPrefix, apiKeyRevocationKey } from "./keys.ts";
import type { ApiKeyIndex } from "./api_key_cache.ts";
import { apiKeyCacheFor } from "./handle_state.ts";

/** A stored API key (never the plaintext). */
export interface ApiKeyRecord {
  key_id: string;
  project_id: string;
  name: string;
  scopes: Scope[];
  created_at: number;
  revoked_at: number | null;
  /** SHA-256 hex of the plaintext. */
  key_hash: string;
  /** Last 4 characters of the plaintext, to help operators recognise a key. */
  hint: string;
  /** key_id of the key that created it, or `"bootstrap"`. */
  created_by: string;
}

/**
 * Creates an API key and returns its record and the plaintext (which is not stored anywhere).
 *
 * @example Usage
 * ```ts
 * import { createApiKey } from "./api_keys.ts";
 * const kv = await Deno.openKv(":memory:");
 * const { plaintext, record } = await createApiKey(kv, {
 *   projectId: "proj_1", name: "ci", scopes: ["sessions:read"], now: Date.now(), createdBy: "bootstrap",
 * });
 * kv.close();
 * ```
 */
export async function createApiKey(
  kv: Deno.Kv,
  input: { projectId: string; name: string; scopes: Scope[]; now: number; createdBy: string },
): Promise<{ record: ApiKeyRecord; plaintext: string }> {
  return await kvOp(async () => {
    for (let attempt = 0; attempt < 5; attempt++) {
      const plaintext = generateApiKey();
      const key_hash = hashApiKey(plaintext);
      const record: ApiKeyRecord = {
        key_id: newKeyId(),
        project_id: input.projectId,
        name: input.name,
        scopes: [...new Set(input.scopes)],
        created_at: input.now,
        revoked_at: null,
        key_hash,
        hint: plaintext.slice(-4),
        created_by: input.createdBy,
      };
      const index: ApiKeyIndex = {
        project_id: record.project_id,
        key_id: record.key_id,
        scopes: record.scopes,
        revoked_at: null,
      };
      const res = await kv.atomic()
        .check({ key: apiKeyHashKey(key_hash), versionstamp: null })
        .check({ key: apiKeyKey(input.projectId, record.key_id), versionstamp: null })
        .set(apiKeyHashKey(key_hash), index)
        .set(apiKeyKey(input.projectId, record.key_id), record)
        .commit();
      if (res.ok) return { record, plaintext };
    }
    throw new Error("could not allocate a unique API key");
  });
}

/**
 * Revokes a key permanently. Idempotent: revoking a revoked key returns the original `revoked_at`.
 * Returns null when the project has no such key. The same atomic operation writes the revocation epoch
 * (`["api_key_revocation"]`), which every process's key cache polls; this process's cache drops the key
 * at once.
 */
export async function revokeApiKey(
  kv: Deno.Kv,
  projectId: string,
  keyId: string,
  now: number,
): Promise<ApiKeyRecord | null> {
  return await kvOp(async () => {
    let result: ApiKeyRecord | null = null;
    await casLoop(async () => {
      const entry = await kv.get<ApiKeyRecord>(apiKeyKey(projectId, keyId));
      if (!entry.value) {
        result = null;
        return true;
      }
      if (entry.value.revoked_at !== null) {
        result = entry.value;
        return true;
      }
      const revoked: ApiKeyRecord = { ...entry.value, revoked_at: now };
      const indexKey = apiKeyHashKey(entry.value.key_hash);
      const index = await kv.get<ApiKeyIndex>(indexKey);
      const res = await kv.atomic()
        .check(entry)
        .check(index)
        .set(apiKeyKey(projectId, keyId), revoked)
        .set(
          indexKey,
          {
            project_id: projectId,
            key_id: keyId,
            scopes: revoked.scopes,
            revoked_at: now,
          } satisfies ApiKeyIndex,
        )
        .set(apiKeyRevocationKey, now)
        .commit();
      result = revoked;
      if (res.ok) apiKeyCacheFor(kv).noteRevocation(res.versionstamp);
      return res.ok;
    });
    return result;
  });
}

/** Lists a project's keys in key_id order, `limit` at a time, after the cursor `startingAfter`. */
export async function listApiKeys(
  kv: Deno.Kv,
  projectId: string,
  options: { limit: number; startingAfter?: string },
): Promise<{ keys: ApiKeyRecord[]; hasMore: boolean }> {
  return await kvOp(async () => {
    const prefix = apiKeyPrefix(projectId);
    const selector: Deno.KvListSelector = options.startingAfter
      ? { prefix, start: [...prefix, options.startingAfter + "\0"] }
      : { prefix };
    const keys: ApiKeyRecord[] = [];
    for await (const e of kv.list<ApiKeyRecord>(selector, { limit: options.limit + 1 })) keys.push(e.value);
    const hasMore = keys.length > options.limit;
    return { keys: keys.slice(0, options.limit), hasMore };
  });
}
