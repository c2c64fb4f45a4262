/**
 * Lifecycle events of a session: their payloads, built from the record a transition writes (their schemas
 * and types are in `schemas.ts`). Which transition emits which event is decided by the state table
 * (`session_states.ts`); this module only shapes them.
 *
 * Every session with a `webhook_url` gets `session.started` when it becomes `active`, and exactly one
 * terminal event: `session.ended` (it was active; `ended` or `ended_with_warnings`) or `session.failed` (it
 * never became active; `failed`). Event ids are derived from the session id (`msg_<id>_start`,
 * `msg_<id>_end`), so a session can structurally have only one terminal event. Payloads carry ids, states,
 * times and counters only: never credentials, tokens or API keys.
 *
 * @module
 */
import type { LifecyclePayload } from "./schemas.ts";
import type { SessionRecord } from "./session_record.ts";
import { emptySessionMetrics } from "./session_metrics.ts";
import { edge, type LifecycleEventType, type SessionStatus } from "./session_states.ts";

/** An event ready for the outbox (see `src/kv/webhook_outbox.ts`). */
export interface OutgoingEvent {
  event_id: string;
  project_id: string;
  session_id: string;
  type: LifecycleEventType;
  url: string;
  /** The exact JSON body sent. */
  body: string;
}

/** Seconds between `started_at` and `ended_at`, millisecond precision (0 if it never started). */
export function durationS(startedAt: number | null, endedAt: number): number {
  return startedAt === null ? 0 : Math.max(0, Math.round(endedAt - startedAt)) / 1000;
}

/** The id of a session's event: `msg_<session id suffix>_start` or `_end`. */
export function eventIdFor(sessionId: string, kind: "start" | "end"): string {
  return `msg_${sessionId.replace(/^session:/, "")}_${kind}`;
}

/** The payload of an event of `type` for the record `next` (written at `now`). */
export function lifecyclePayload(
  type: LifecycleEventType,
  next: SessionRecord,
  now: number,
): LifecyclePayload {
  const base = { session_id: next.session_id, project_id: next.project_id };
  switch (type) {
    case "session.started": {
      const started = next.started_at ?? now;
      return {
        type,
        timestamp: new Date(started).toISOString(),
        data: {
          ...base,
          status: "active",
          provider_type: next.provider_type,
          transport: next.transport,
          created_at: next.created_at,
          started_at: started,
        },
      };
    }
    case "session.ended": {
      const endedAt = next.ended_at ?? now;
      return {
        type,
        timestamp: new Date(endedAt).toISOString(),
        data: {
          ...base,
          status: next.status as "ended" | "ended_with_warnings",
          end_reason: next.end_reason ?? "ended_by_api",
          started_at: next.started_at,
          ended_at: endedAt,
          duration_s: durationS(next.started_at, endedAt),
          chunks_rendered: next.chunks_rendered,
          ...(next.warning ? { warning: next.warning } : {}),
          metrics: next.metrics ?? emptySessionMetrics(next.session_id),
        },
      };
    }
    case "session.failed": {
      const endedAt = next.ended_at ?? now;
      return {
        type,
        timestamp: new Date(endedAt).toISOString(),
        data: {
          ...base,
          status: "failed",
          end_reason: next.end_reason ?? "start_failed",
          error_code: next.error_code ?? "SVC_INTERNAL_ERROR",
          created_at: next.created_at,
          ended_at: endedAt,
        },
      };
    }
  }
}

/**
 * The event the transition from `prev` to `next.status` writes (per the state table), for a session with a
 * `webhook_url`; null otherwise.
 */
export function lifecycleEvent(prev: SessionStatus, next: SessionRecord, now: number): OutgoingEvent | null {
  const type = edge(prev, next.status)?.emits;
  if (!type || !next.webhook_url) return null;
  const payload = lifecyclePayload(type, next, now);
  return {
    event_id: eventIdFor(next.session_id, type === "session.started" ? "start" : "end"),
    project_id: next.project_id,
    session_id: next.session_id,
    type,
    url: next.webhook_url,
    body: JSON.stringify(payload),
  };
}
