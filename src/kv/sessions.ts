/**
 * Session records, the per-project live-session counter and the per-worker load counter.
 *
 * A session holds a concurrency slot while it is live (`created`, `activating`, `active`, `ending`). The
 * project counter and its worker's load counter are incremented in the same atomic operation that writes a
 * new record, and decremented in the same atomic operation that moves it to a terminal status, so the
 * project ceiling and each worker's capacity hold exactly under concurrent requests and across processes
 * sharing one KV.
 *
 * The same atomic operations keep the listing index (`session_index.ts`: 4 entries a session, standing for
 * its public view) and set the retention of an ended session (`session_retention.ts`) on the record and its
 * entries. The same atomic operations keep the owner index (`["owned_session", owner, pid, sid]`, present while the
 * session is live, see `owner_leases.ts`) and the webhook outbox (the event the state table names for the
 * transition, see `src/vocabulary/session_states.ts`), so a session's final state, its freed slots and its
 * one terminal event land together or not at all.
 *
 * @module
 */
import { ApiError } from "../errors.ts";
import { endAnswer } from "../vocabulary/end_answer.ts";
import type { EndedSession } from "../vocabulary/schemas.ts";
import { lifecycleEvent } from "../vocabulary/lifecycle_events.ts";
import type { SessionRecord } from "../vocabulary/session_record.ts";
import { edge, freesSlot, type SessionStatus } from "../vocabulary/session_states.ts";
import { casLoop, KeyedMutex, kvOp } from "./guard.ts";
import { idempotencyKey, liveSessionsKey, ownedSessionKey, ownerLoadKey, sessionKey } from "./keys.ts";
import { addEventToOp } from "./webhook_outbox.ts";
import { forgetSession } from "./handle_state.ts";
import { addIndexToOp, expiryOf } from "./session_index.ts";
import { sessionRetentionOf } from "./session_retention.ts";
import { recordEnd } from "../telemetry/metrics.ts";

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
 * The records of up to 10 sessions in one read (KV's `getMany` limit), in the order asked; null where a
 * record is gone. Throws `KvUnavailableError` when storage is unavailable.
 */
export async function getSessions(
  kv: Deno.Kv,
  refs: readonly { projectId: string; sessionId: string }[],
): Promise<(SessionRecord | null)[]> {
  if (refs.length > 10) throw new RangeError("getSessions reads at most 10 records at once");
  const entries = await kvOp(() =>
    kv.getMany<SessionRecord[]>(refs.map((r) => sessionKey(r.projectId, r.sessionId)))
  );
  return entries.map((e) => e.value);
}

/**
 * {@link insertSession} refused: the owner is at its capacity (the caller places the session elsewhere; if
 * it escapes, it answers 503 SVC_RENDER_CAPACITY).
 */
export class PlacementFullError extends ApiError {
  override name = "PlacementFullError";
  constructor() {
    super("SVC_RENDER_CAPACITY");
  }
}

/**
 * Writes a new session record and takes a concurrency slot, atomically. Throws
 * `429 SVC_RATE_LIMIT_CONCURRENT_SESSIONS` when the project is at `maxLive`. When `ownerCapacity` is
 * given, the owner's load counter must stay within it, or {@link PlacementFullError} is thrown (the caller
 * places the session elsewhere). When `idempotency` is given, the in-flight idempotency record is bound to
 * the session in the same atomic operation (and the operation fails if that record changed since it was
 * claimed).
 */
export async function insertSession(
  kv: Deno.Kv,
  record: SessionRecord,
  maxLive: number,
  options: {
    idempotency?: { key: string; versionstamp: string; value: unknown };
    ownerCapacity?: number;
  } = {},
): Promise<void> {
  const { idempotency, ownerCapacity } = options;
  await kvOp(() =>
    mutex.run(record.project_id, async () => {
      await casLoop(async () => {
        const [counter, load] = await kv.getMany<[number, number]>([
          liveSessionsKey(record.project_id),
          ownerLoadKey(record.owner ?? ""),
        ]);
        const live = counter.value ?? 0;
        if (live >= maxLive) {
          throw new ApiError(
            "SVC_RATE_LIMIT_CONCURRENT_SESSIONS",
            `The project has reached its ceiling of ${maxLive} concurrent sessions.`,
          );
        }
        if (ownerCapacity !== undefined && (load.value ?? 0) >= ownerCapacity) {
          throw new PlacementFullError();
        }
        const op = kv.atomic()
          .check(counter)
          .check({ key: sessionKey(record.project_id, record.session_id), versionstamp: null })
          .set(liveSessionsKey(record.project_id), live + 1)
          .set(sessionKey(record.project_id, record.session_id), record);
        addIndexToOp(op, null, record);
        if (record.owner) {
          op.check(load)
            .set(ownerLoadKey(record.owner), (load.value ?? 0) + 1)
            .set(ownedSessionKey(record.owner, record.project_id, record.session_id), true);
        }
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

/** Outcome of a transition. */
export interface TransitionResult {
  /** True when the record moved. */
  ok: boolean;
  /** The new record when `ok`; otherwise the current one (null if the session does not exist). */
  record: SessionRecord | null;
}

/**
 * Moves a session from one of `from` to `to`, applying `patch`, with compare-and-set. Only transitions of
 * the state table are allowed (anything else is a programming error and throws). Leaving the live
 * statuses for a terminal one frees the project slot and the owner's load and removes the owner index
 * entry in the same atomic operation, which also writes the lifecycle event the table names (due at `now`).
 */
export async function transitionSession(
  kv: Deno.Kv,
  projectId: string,
  sessionId: string,
  from: readonly SessionStatus[],
  to: SessionStatus,
  patch: Partial<SessionRecord>,
  now: number,
): Promise<TransitionResult> {
  for (const f of from) {
    if (!edge(f, to)) throw new Error(`transition ${f} → ${to} is not in the state table`);
  }
  return await kvOp(async () => {
    let outcome: TransitionResult = { ok: false, record: null };
    await casLoop(async () => {
      const [entry, counter] = await kv.getMany<[SessionRecord, number]>([
        sessionKey(projectId, sessionId),
        liveSessionsKey(projectId),
      ]);
      if (!entry.value || !from.includes(entry.value.status)) {
        outcome = { ok: false, record: entry.value };
        return true;
      }
      const prev = entry.value;
      const next: SessionRecord = { ...prev, ...patch, status: to };
      const expireIn = expiryOf(to, sessionRetentionOf(kv));
      const op = kv.atomic().check(entry).set(
        sessionKey(projectId, sessionId),
        next,
        expireIn === undefined ? undefined : { expireIn },
      );
      addIndexToOp(op, prev, next, expireIn);
      if (freesSlot(prev.status, to)) {
        op.check(counter).set(liveSessionsKey(projectId), Math.max(0, (counter.value ?? 1) - 1));
        if (prev.owner) {
          const load = await kv.get<number>(ownerLoadKey(prev.owner));
          op.check(load).set(ownerLoadKey(prev.owner), Math.max(0, (load.value ?? 1) - 1))
            .delete(ownedSessionKey(prev.owner, projectId, sessionId));
        }
      }
      const event = lifecycleEvent(prev.status, next, now);
      if (event) addEventToOp(op, event, now);
      // Reads through this process's session cache must see this write (read-your-own-writes).
      const res = await op.commit().finally(() => forgetSession(kv, projectId, sessionId));
      outcome = { ok: true, record: next };
      // Exactly one process writes a session's terminal transition (compare-and-set): it counts the end.
      if (res.ok && freesSlot(prev.status, to)) recordEnd(next);
      return res.ok;
    });
    return outcome;
  });
}

/** The number of sessions of a project holding a concurrency slot. */
export async function countLiveSessions(kv: Deno.Kv, projectId: string): Promise<number> {
  return await kvOp(async () => (await kv.get<number>(liveSessionsKey(projectId))).value ?? 0);
}

/** The number of live sessions placed on each of `owners` (their load counters). */
export async function ownerLoads(kv: Deno.Kv, owners: string[]): Promise<Map<string, number>> {
  const out = new Map<string, number>();
  for (let i = 0; i < owners.length; i += 10) {
    const batch = owners.slice(i, i + 10);
    const entries = await kvOp(() => kv.getMany<number[]>(batch.map((o) => ownerLoadKey(o))));
    batch.forEach((o, k) => out.set(o, entries[k].value ?? 0));
  }
  return out;
}

/** How long a retried end may still collect the answer of an end that got 503. */
export const UNANSWERED_END_TTL_MS = 15 * 60_000;

/**
 * Takes the undelivered answer of an ended session: the retry of an end answered 503 because storage was out
 * when its teardown finished (the record carries `end_unanswered_until`). Compare-and-set, so only the first
 * retry gets it. Resolves with the answer, or null when there is none (the end was answered, or the window
 * passed).
 */
export async function claimUnansweredEnd(
  kv: Deno.Kv,
  rec: SessionRecord,
  now: number,
): Promise<EndedSession | null> {
  if (!rec.end_unanswered_until || rec.end_unanswered_until <= now) return null;
  const key = sessionKey(rec.project_id, rec.session_id);
  return await kvOp(async () => {
    const entry = await kv.get<SessionRecord>(key);
    const cur = entry.value;
    if (!cur?.end_unanswered_until || cur.end_unanswered_until <= now) return null;
    // The listing's entries do not hold this field; the record keeps its retention.
    const expireIn = expiryOf(cur.status, sessionRetentionOf(kv));
    const ok = (await kv.atomic().check(entry).set(
      key,
      { ...cur, end_unanswered_until: null },
      expireIn === undefined ? undefined : { expireIn },
    ).commit()
      .finally(() => forgetSession(kv, rec.project_id, rec.session_id))).ok;
    return ok ? endAnswer(cur, cur.end_reason ?? "ended_by_api") : null;
  });
}
