/**
 * Session records and the per-project live-session counter.
 *
 * A session holds a concurrency slot while it is `created`, `activating`, `active` or `ending`. The
 * counter is incremented in the same atomic operation that writes a new record and decremented in the same
 * atomic operation that moves a record to `ended`, `ended_with_warnings` or `failed`, so the ceiling holds
 * exactly under concurrent requests and across processes sharing one KV.
 *
 * The same atomic operations keep the owner index (`["owned_session", owner, pid, sid]`, present while the
 * session is live, see `owner_leases.ts`) and the webhook outbox (the event a transition causes is written
 * with it, see `src/webhooks/events.ts`), so a session's final state, its freed slot and its one terminal
 * event land together or not at all.
 *
 * @module
 */
import { ApiError, type ErrorCode } from "../errors.ts";
import type { ProviderType } from "../providers/types.ts";
import type { EndReason } from "../sessions/end_reasons.ts";
import { lifecycleEvent } from "../webhooks/events.ts";
import { casLoop, KeyedMutex, kvOp } from "./guard.ts";
import { idempotencyKey, liveSessionsKey, ownedSessionKey, sessionKey } from "./keys.ts";
import { addEventToOp } from "./webhook_outbox.ts";
import { forgetSession } from "./session_cache.ts";

/** Every session status. */
export const SESSION_STATUSES = [
  "created",
  "activating",
  "active",
  "ending",
  "ended",
  "ended_with_warnings",
  "failed",
] as const;
/** One session status. */
export type SessionStatus = (typeof SESSION_STATUSES)[number];
/** Statuses that hold a concurrency slot. */
export const LIVE_STATUSES: readonly SessionStatus[] = ["created", "activating", "active", "ending"];
/** Terminal statuses. */
export const TERMINAL_STATUSES: readonly SessionStatus[] = ["ended", "ended_with_warnings", "failed"];

/** Transports in effect for a session (`auto` is resolved at creation). */
export type ResolvedTransport = "websocket_fmp4" | "webrtc_sfu";

/** The stored session record. It never holds provider credentials or tokens. */
export interface SessionRecord {
  session_id: string;
  project_id: string;
  status: SessionStatus;
  provider_type: ProviderType;
  transport: ResolvedTransport;
  avatar_id: string | null;
  bg_id: string | null;
  webhook_url: string | null;
  created_at: number;
  started_at: number | null;
  ended_at: number | null;
  /** Set with `ended_with_warnings`. */
  warning: string | null;
  /** Set with `failed`. */
  error_code: ErrorCode | null;
  /** Machine-readable reason the session ended or failed. */
  end_reason: EndReason | null;
  /** Media chunks rendered over the session's life. */
  chunks_rendered: number;
  /** key_id of the API key that created it. */
  created_by: string;
  /** Instance id of the process running the session's runtime. */
  owner: string | null;
  /**
   * Set with `ending` when another process asked for the end (the API call reached a process that does not
   * run the session): the owner carries it out (see `SessionService.reconcileLocal`).
   */
  end_request?: { reason: EndReason; force: boolean; requested_by: string } | null;
}

const mutex = new KeyedMutex();

/** Reads a session of a project, or null (unknown, or another project's). */
export async function getSession(
  kv: Deno.Kv,
  projectId: string,
  sessionId: string,
): Promise<SessionRecord | null> {
  return await kvOp(async () => (await kv.get<SessionRecord>(sessionKey(projectId, sessionId))).value);
}

/**
 * Writes a new session record and takes a concurrency slot, atomically. Throws
 * `429 SVC_RATE_LIMIT_CONCURRENT_SESSIONS` when the project is at `maxLive`.
 * When `idempotency` is given, the in-flight idempotency record is bound to the session in the same
 * atomic operation (and the operation fails if that record changed since it was claimed).
 */
export async function insertSession(
  kv: Deno.Kv,
  record: SessionRecord,
  maxLive: number,
  idempotency?: { key: string; versionstamp: string; value: unknown },
): Promise<void> {
  await kvOp(() =>
    mutex.run(record.project_id, async () => {
      await casLoop(async () => {
        const counter = await kv.get<number>(liveSessionsKey(record.project_id));
        const live = counter.value ?? 0;
        if (live >= maxLive) {
          throw new ApiError(
            "SVC_RATE_LIMIT_CONCURRENT_SESSIONS",
            `The project has reached its ceiling of ${maxLive} concurrent sessions.`,
          );
        }
        const op = kv.atomic()
          .check(counter)
          .check({ key: sessionKey(record.project_id, record.session_id), versionstamp: null })
          .set(liveSessionsKey(record.project_id), live + 1)
          .set(sessionKey(record.project_id, record.session_id), record);
        if (record.owner) op.set(ownedSessionKey(record.owner, record.project_id, record.session_id), true);
        if (idempotency) {
          const k = idempotencyKey(record.project_id, idempotency.key);
          op.check({ key: k, versionstamp: idempotency.versionstamp }).set(k, idempotency.value, {
            expireIn: 26 * 3600_000,
          });
        }
        const res = await op.commit().finally(() => forgetSession(kv, record.project_id, record.session_id));
        if (!res.ok && idempotency) {
          const cur = await kv.get(idempotencyKey(record.project_id, idempotency.key));
          if (cur.versionstamp !== idempotency.versionstamp) {
            throw new Error("idempotency claim was lost before the session was written");
          }
        }
        return res.ok;
      });
    })
  );
}

/**
 * Moves a session from one of `from` to `to`, applying `patch`, with compare-and-set. Leaving the live
 * statuses for a terminal one frees the concurrency slot and removes the owner index entry in the same
 * atomic operation, which also writes the webhook event the transition causes (due at `now`).
 *
 * Returns `{ ok: true, record }` with the new record, or `{ ok: false, record }` with the current record
 * (null if the session does not exist) when its status is not in `from`.
 */
export async function transitionSession(
  kv: Deno.Kv,
  projectId: string,
  sessionId: string,
  from: readonly SessionStatus[],
  to: SessionStatus,
  patch: Partial<SessionRecord>,
  now: number,
): Promise<{ ok: boolean; record: SessionRecord | null }> {
  return await kvOp(async () => {
    let outcome: { ok: boolean; record: SessionRecord | null } = { ok: false, record: null };
    await casLoop(async () => {
      const [entry, counter] = await kv.getMany<[SessionRecord, number]>([
        sessionKey(projectId, sessionId),
        liveSessionsKey(projectId),
      ]);
      if (!entry.value || !from.includes(entry.value.status)) {
        outcome = { ok: false, record: entry.value };
        return true;
      }
      const next: SessionRecord = { ...entry.value, ...patch, status: to };
      const op = kv.atomic().check(entry).set(sessionKey(projectId, sessionId), next);
      const freesSlot = LIVE_STATUSES.includes(entry.value.status) && TERMINAL_STATUSES.includes(to);
      if (freesSlot) {
        op.check(counter).set(liveSessionsKey(projectId), Math.max(0, (counter.value ?? 1) - 1));
        if (entry.value.owner) op.delete(ownedSessionKey(entry.value.owner, projectId, sessionId));
      }
      const event = lifecycleEvent(entry.value.status, next, now);
      if (event) addEventToOp(op, event, now);
      // Reads through this process's session cache must see this write (read-your-own-writes).
      const res = await op.commit().finally(() => forgetSession(kv, projectId, sessionId));
      outcome = { ok: true, record: next };
      return res.ok;
    });
    return outcome;
  });
}

/** The number of sessions of a project holding a concurrency slot. */
export async function countLiveSessions(kv: Deno.Kv, projectId: string): Promise<number> {
  return await kvOp(async () => (await kv.get<number>(liveSessionsKey(projectId))).value ?? 0);
}
