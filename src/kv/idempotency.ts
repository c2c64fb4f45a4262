/**
 * Idempotency records for `POST /v1/sessions` (see docs/idempotency.md).
 *
 * Scope: (project, Idempotency-Key). Retention: 24 hours from the first request. The fingerprint is an
 * HMAC-SHA256 of the canonical request body under a key derived from the token signing secret, so the
 * record never holds the body or anything from which its credentials could be recovered.
 *
 * @module
 */
import { kvOp } from "./guard.ts";
import { idempotencyKey } from "./keys.ts";

/** How long a key is remembered. */
export const IDEMPOTENCY_RETENTION_MS = 24 * 3600_000;
/** How long an in-flight claim blocks others before it is considered abandoned (its process died). */
export const IDEMPOTENCY_LOCK_MS = 60_000;

/** A stored idempotency record. */
export interface IdempotencyRecord {
  state: "in_flight" | "done";
  /** Unique id of the request that holds (or held) the claim. */
  claim_id: string;
  fingerprint: string;
  /** Bound when the session record is written (in the same atomic operation). */
  session_id: string | null;
  created_at: number;
  /** For `in_flight`: when the claim is considered abandoned. */
  lock_until: number;
}

/** The outcome of trying to claim a key. */
export type ClaimResult =
  | { kind: "claimed"; versionstamp: string; record: IdempotencyRecord }
  | { kind: "mismatch" }
  | { kind: "done"; record: IdempotencyRecord; versionstamp: string }
  | { kind: "in_flight"; record: IdempotencyRecord; versionstamp: string };

/**
 * Claims `key` for a new request with `fingerprint`, or reports what holds it. An expired record, or an
 * abandoned in-flight claim, is taken over.
 */
export async function claimIdempotencyKey(
  kv: Deno.Kv,
  projectId: string,
  key: string,
  fingerprint: string,
  now: number,
): Promise<ClaimResult> {
  return await kvOp(async () => {
    for (;;) {
      const entry = await kv.get<IdempotencyRecord>(idempotencyKey(projectId, key));
      const cur = entry.value;
      const expired = cur !== null && cur.created_at + IDEMPOTENCY_RETENTION_MS <= now;
      if (cur && !expired) {
        if (cur.fingerprint !== fingerprint) return { kind: "mismatch" };
        if (cur.state === "done") return { kind: "done", record: cur, versionstamp: entry.versionstamp! };
        if (cur.lock_until > now) {
          return { kind: "in_flight", record: cur, versionstamp: entry.versionstamp! };
        }
        // The claim was abandoned (its process died). With a session already written, replay it;
        // before that, take the key over.
        if (cur.session_id !== null) return { kind: "done", record: cur, versionstamp: entry.versionstamp! };
      }
      const record: IdempotencyRecord = {
        state: "in_flight",
        claim_id: crypto.randomUUID(),
        fingerprint,
        session_id: null,
        created_at: now,
        lock_until: now + IDEMPOTENCY_LOCK_MS,
      };
      const res = await kv.atomic().check(entry).set(idempotencyKey(projectId, key), record, {
        expireIn: IDEMPOTENCY_RETENTION_MS + 2 * 3600_000,
      }).commit();
      if (res.ok) return { kind: "claimed", versionstamp: res.versionstamp, record };
    }
  });
}

/** Marks a claimed key done (its session became active). */
export async function completeIdempotencyKey(
  kv: Deno.Kv,
  projectId: string,
  key: string,
  sessionId: string,
): Promise<void> {
  await kvOp(async () => {
    const entry = await kv.get<IdempotencyRecord>(idempotencyKey(projectId, key));
    if (!entry.value || entry.value.session_id !== sessionId) return;
    await kv.atomic().check(entry).set(idempotencyKey(projectId, key), {
      ...entry.value,
      state: "done",
    }, { expireIn: IDEMPOTENCY_RETENTION_MS + 2 * 3600_000 }).commit();
  });
}

/**
 * Releases a claim after a failed request, so that a retry runs the request again. Only the claim of
 * `claimId` is deleted (another request may have taken the key over meanwhile).
 */
export async function releaseIdempotencyKey(
  kv: Deno.Kv,
  projectId: string,
  key: string,
  claimId: string,
): Promise<void> {
  await kvOp(async () => {
    const entry = await kv.get<IdempotencyRecord>(idempotencyKey(projectId, key));
    if (entry.value?.claim_id !== claimId) return;
    await kv.atomic().check(entry).delete(idempotencyKey(projectId, key)).commit();
  });
}

/** Deletes a record if it is still at `versionstamp` (its session failed: the key may be used again). */
export async function dropIdempotencyRecord(
  kv: Deno.Kv,
  projectId: string,
  key: string,
  versionstamp: string,
): Promise<void> {
  await kvOp(async () => {
    await kv.atomic().check({ key: idempotencyKey(projectId, key), versionstamp }).delete(
      idempotencyKey(projectId, key),
    )
      .commit();
  });
}

/** Canonical JSON: object keys sorted at every depth. */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(",")}]`;
  if (value !== null && typeof value === "object") {
    const entries = Object.keys(value as Record<string, unknown>).sort().map((k) =>
      `${JSON.stringify(k)}:${canonicalJson((value as Record<string, unknown>)[k])}`
    );
    return `{${entries.join(",")}}`;
  }
  return JSON.stringify(value);
}
