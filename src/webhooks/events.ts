/**
 * Lifecycle webhook events: which transition causes which event, and the exact payloads.
 *
 * Every session with a `webhook_url` gets `session.started` when it becomes `active`, and exactly one
 * terminal event: `session.ended` (it was active; `ended` or `ended_with_warnings`) or `session.failed` (it
 * never became active; `failed`). Event ids are derived from the session id (`msg_<id>_start`,
 * `msg_<id>_end`), so a session can structurally have only one terminal event. Payloads carry ids, states,
 * times and counters only: never credentials, tokens or API keys.
 *
 * @module
 */
import type { ErrorCode } from "../errors.ts";
import type { SessionRecord, SessionStatus } from "../kv/sessions.ts";
import type { WebhookEventRecord, WebhookEventType } from "../kv/webhook_outbox.ts";

/** `data` of `session.started`. */
export interface SessionStartedData {
  session_id: string;
  project_id: string;
  status: "active";
  provider_type: string;
  transport: string;
  created_at: number;
  started_at: number;
}

/** `data` of `session.ended`. */
export interface SessionEndedData {
  session_id: string;
  project_id: string;
  status: "ended" | "ended_with_warnings";
  end_reason: string;
  started_at: number | null;
  ended_at: number;
  duration_s: number;
  chunks_rendered: number;
  warning?: string;
}

/** `data` of `session.failed`. */
export interface SessionFailedData {
  session_id: string;
  project_id: string;
  status: "failed";
  end_reason: string;
  error_code: ErrorCode;
  created_at: number;
  ended_at: number;
}

/** A webhook body: `{type, timestamp, data}` (the Standard Webhooks payload shape). */
export interface WebhookPayload {
  type: WebhookEventType;
  /** ISO 8601 time of the transition. */
  timestamp: string;
  data: SessionStartedData | SessionEndedData | SessionFailedData;
}

/** Seconds between `started_at` and `ended_at`, millisecond precision (0 if it never started). */
export function durationS(startedAt: number | null, endedAt: number): number {
  return startedAt === null ? 0 : Math.max(0, Math.round(endedAt - startedAt)) / 1000;
}

/** The id of a session's event: `msg_<session id suffix>_start` or `_end`. */
export function eventIdFor(sessionId: string, kind: "start" | "end"): string {
  return `msg_${sessionId.replace(/^session:/, "")}_${kind}`;
}

/** The payload of the event a transition from `prev` to `next` causes, or null. */
export function lifecyclePayload(
  prev: SessionStatus,
  next: SessionRecord,
  now: number,
): WebhookPayload | null {
  const base = { session_id: next.session_id, project_id: next.project_id };
  if (next.status === "active" && prev !== "active") {
    const started = next.started_at ?? now;
    return {
      type: "session.started",
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
  if ((next.status === "ended" || next.status === "ended_with_warnings") && prev !== next.status) {
    const endedAt = next.ended_at ?? now;
    return {
      type: "session.ended",
      timestamp: new Date(endedAt).toISOString(),
      data: {
        ...base,
        status: next.status,
        end_reason: next.end_reason ?? "ended_by_api",
        started_at: next.started_at,
        ended_at: endedAt,
        duration_s: durationS(next.started_at, endedAt),
        chunks_rendered: next.chunks_rendered,
        ...(next.warning ? { warning: next.warning } : {}),
      },
    };
  }
  if (next.status === "failed" && prev !== "failed") {
    const endedAt = next.ended_at ?? now;
    return {
      type: "session.failed",
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
  return null;
}

/** The outbox entry a transition causes (only for sessions with a `webhook_url`), or null. */
export function lifecycleEvent(
  prev: SessionStatus,
  next: SessionRecord,
  now: number,
): Pick<WebhookEventRecord, "event_id" | "project_id" | "session_id" | "type" | "url" | "body"> | null {
  if (!next.webhook_url) return null;
  const payload = lifecyclePayload(prev, next, now);
  if (!payload) return null;
  return {
    event_id: eventIdFor(next.session_id, payload.type === "session.started" ? "start" : "end"),
    project_id: next.project_id,
    session_id: next.session_id,
    type: payload.type,
    url: next.webhook_url,
    body: JSON.stringify(payload),
  };
}
