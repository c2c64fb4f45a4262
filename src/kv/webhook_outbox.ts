/**
 * The webhook outbox: one record per event, written in the same atomic operation as the session
 * transition that causes it, plus an entry in the global due index `["webhook_due", due_at, pid, id]`.
 *
 * A delivery worker claims a due event by moving its index entry to `now + lease` (compare-and-set on the
 * record), so an event whose worker dies becomes due again when the lease runs out, in any process. After an
 * attempt the worker records the outcome (delivered, rescheduled, or given up) with a compare-and-set
 * against its claim; if the claim was lost meanwhile the outcome is dropped and the new claimant's stands.
 *
 * @module
 */
import type { LifecycleEventType } from "../vocabulary/session_states.ts";
import { kvOp } from "./guard.ts";
import {
  webhookDueKey,
  webhookDuePrefix,
  webhookEventKey,
  webhookEventPrefix,
  webhookGoneKey,
} from "./keys.ts";

/** Where an event is in its delivery. */
export type WebhookEventState =
  /** waiting for an attempt (or being attempted) */
  | "pending"
  /** the receiver answered 2xx */
  | "delivered"
  /** every attempt of the retry schedule failed */
  | "failed"
  /** the URL answered 410 Gone (this event or an earlier one): deliveries to it stopped */
  | "gone"
  /** the URL resolved to an address that is not allowed (loopback, private, link-local, metadata) */
  | "refused";

/** How long finished events are kept for inspection: 7 days. */
export const FINISHED_EVENT_RETENTION_MS = 7 * 24 * 3600_000;
/** How long a 410 Gone answer stops deliveries to its URL: 30 days. */
export const GONE_RETENTION_MS = 30 * 24 * 3600_000;

/** An outbox entry. Its body never contains credentials, tokens or API keys. */
export interface WebhookEventRecord {
  event_id: string;
  project_id: string;
  session_id: string;
  /** One of the lifecycle events (see `src/vocabulary/session_states.ts`). */
  type: LifecycleEventType;
  url: string;
  /** The exact JSON body sent (signed as is on every attempt). */
  body: string;
  created_at: number;
  state: WebhookEventState;
  /** Attempts made so far. */
  attempts: number;
  /** Position of the event in the due index while pending. */
  due_at: number;
  /** Instance holding the current claim, and until when. */
  lease_owner: string | null;
  lease_until: number | null;
  last_attempt_at: number | null;
  /** HTTP status of the last attempt, or null if it got none. */
  last_status: number | null;
  /** Provider-agnostic reason the last attempt failed. */
  last_error: string | null;
  finished_at: number | null;
}

/** A URL that answered 410 Gone. */
export interface GoneUrlRecord {
  url: string;
  at: number;
  event_id: string;
}

/** Adds a new pending event, due at `now`, to an atomic operation. */
export function addEventToOp(
  op: Deno.AtomicOperation,
  event: Pick<WebhookEventRecord, "event_id" | "project_id" | "session_id" | "type" | "url" | "body">,
  now: number,
): void {
  const rec: WebhookEventRecord = {
    ...event,
    created_at: now,
    state: "pending",
    attempts: 0,
    due_at: now,
    lease_owner: null,
    lease_until: null,
    last_attempt_at: null,
    last_status: null,
    last_error: null,
    finished_at: null,
  };
  op.set(webhookEventKey(event.project_id, event.event_id), rec)
    .set(webhookDueKey(now, event.project_id, event.event_id), true);
}

/** One entry of the due index. */
export interface DueEntry {
  dueAt: number;
  projectId: string;
  eventId: string;
}

/** Up to `limit` events due at or before `now`, earliest first. */
export async function listDueEvents(kv: Deno.Kv, now: number, limit: number): Promise<DueEntry[]> {
  return await kvOp(async () => {
    const out: DueEntry[] = [];
    const iter = kv.list({ start: webhookDuePrefix, end: [...webhookDuePrefix, now + 1] }, { limit });
    for await (const e of iter) {
      out.push({ dueAt: Number(e.key[1]), projectId: String(e.key[2]), eventId: String(e.key[3]) });
    }
    return out;
  });
}

/** Number of pending events (due now or later, claimed or not). */
export async function countPendingEvents(kv: Deno.Kv): Promise<number> {
  return await kvOp(async () => {
    let n = 0;
    for await (const _ of kv.list({ prefix: webhookDuePrefix })) n++;
    return n;
  });
}

/** A claimed event: the record as claimed and the versionstamp the outcome must match. */
export interface ClaimedEvent {
  record: WebhookEventRecord;
  versionstamp: string;
}

/**
 * Claims a due event for `leaseMs`. Returns null when the entry is stale (the event is finished, or was
 * claimed or rescheduled by someone else); a stale index entry is removed.
 */
export async function claimEvent(
  kv: Deno.Kv,
  due: DueEntry,
  owner: string,
  now: number,
  leaseMs: number,
): Promise<ClaimedEvent | null> {
  return await kvOp(async () => {
    const dueKey = webhookDueKey(due.dueAt, due.projectId, due.eventId);
    const [entry, dueEntry] = await kv.getMany<[WebhookEventRecord, boolean]>([
      webhookEventKey(due.projectId, due.eventId),
      dueKey,
    ]);
    if (dueEntry.versionstamp === null) return null;
    if (!entry.value || entry.value.state !== "pending" || entry.value.due_at !== due.dueAt) {
      await kv.atomic().check(dueEntry).check(entry).delete(dueKey).commit();
      return null;
    }
    const until = now + leaseMs;
    const record: WebhookEventRecord = {
      ...entry.value,
      due_at: until,
      lease_owner: owner,
      lease_until: until,
    };
    const res = await kv.atomic().check(entry).check(dueEntry)
      .delete(dueKey)
      .set(webhookDueKey(until, due.projectId, due.eventId), true)
      .set(entry.key, record)
      .commit();
    return res.ok ? { record, versionstamp: res.versionstamp } : null;
  });
}

/** The outcome of one attempt. */
export type AttemptOutcome =
  | { kind: "delivered"; status: number }
  | { kind: "retry"; at: number; status: number | null; error: string }
  | { kind: "give_up"; state: "failed" | "gone" | "refused"; status: number | null; error: string };

/**
 * Records an attempt's outcome if the claim still holds. A 410 also records the URL as gone, in the same
 * atomic operation. Returns false when the claim was lost (the outcome is dropped).
 */
export async function recordAttempt(
  kv: Deno.Kv,
  claim: ClaimedEvent,
  outcome: AttemptOutcome,
  now: number,
  goneUrlHash?: string,
): Promise<boolean> {
  return await kvOp(async () => {
    const rec = claim.record;
    const key = webhookEventKey(rec.project_id, rec.event_id);
    const op = kv.atomic().check({ key, versionstamp: claim.versionstamp })
      .delete(webhookDueKey(rec.due_at, rec.project_id, rec.event_id));
    const base = { ...rec, lease_owner: null, lease_until: null };
    if (outcome.kind === "retry") {
      op.set(key, {
        ...base,
        attempts: rec.attempts + 1,
        due_at: outcome.at,
        last_attempt_at: now,
        last_status: outcome.status,
        last_error: outcome.error,
      }).set(webhookDueKey(outcome.at, rec.project_id, rec.event_id), true);
    } else {
      const finished: WebhookEventRecord = {
        ...base,
        state: outcome.kind === "delivered" ? "delivered" : outcome.state,
        attempts: rec.attempts + 1,
        last_attempt_at: now,
        last_status: outcome.status,
        last_error: outcome.kind === "delivered" ? null : outcome.error,
        finished_at: now,
      };
      op.set(key, finished, { expireIn: FINISHED_EVENT_RETENTION_MS });
      if (outcome.kind === "give_up" && outcome.state === "gone" && goneUrlHash) {
        const gone: GoneUrlRecord = { url: rec.url, at: now, event_id: rec.event_id };
        op.set(webhookGoneKey(rec.project_id, goneUrlHash), gone, { expireIn: GONE_RETENTION_MS });
      }
    }
    return (await op.commit()).ok;
  });
}

/**
 * Drops a claimed event without an attempt because its URL is gone (recorded as `gone`, 0 more attempts).
 */
export async function dropForGoneUrl(kv: Deno.Kv, claim: ClaimedEvent, now: number): Promise<boolean> {
  return await kvOp(async () => {
    const rec = claim.record;
    const key = webhookEventKey(rec.project_id, rec.event_id);
    const finished: WebhookEventRecord = {
      ...rec,
      lease_owner: null,
      lease_until: null,
      state: "gone",
      last_error: "an earlier delivery to this URL answered 410 Gone",
      finished_at: now,
    };
    const res = await kv.atomic().check({ key, versionstamp: claim.versionstamp })
      .delete(webhookDueKey(rec.due_at, rec.project_id, rec.event_id))
      .set(key, finished, { expireIn: FINISHED_EVENT_RETENTION_MS })
      .commit();
    return res.ok;
  });
}

/** The 410 record of a URL, if it answered 410 within {@link GONE_RETENTION_MS} of `now`. */
export async function goneUrl(
  kv: Deno.Kv,
  projectId: string,
  urlHash: string,
  now: number,
): Promise<GoneUrlRecord | null> {
  return await kvOp(async () => {
    const v = (await kv.get<GoneUrlRecord>(webhookGoneKey(projectId, urlHash))).value;
    // expireIn is lazy: enforce the retention by the stored time.
    return v && now - v.at < GONE_RETENTION_MS ? v : null;
  });
}

/** The events of a project (for tests and operators), optionally of one session. */
export async function listEvents(
  kv: Deno.Kv,
  projectId: string,
  sessionId?: string,
): Promise<WebhookEventRecord[]> {
  return await kvOp(async () => {
    const out: WebhookEventRecord[] = [];
    for await (const e of kv.list<WebhookEventRecord>({ prefix: webhookEventPrefix(projectId) })) {
      if (!sessionId || e.value.session_id === sessionId) out.push(e.value);
    }
    return out;
  });
}
