/**
 * The end answer (`POST /v1/sessions/{id}/end`) of a session, from its final record.
 *
 * @module
 */
import type { EndReason } from "./end_reasons.ts";
import { durationS } from "./lifecycle_events.ts";
import type { EndedSession } from "./schemas.ts";
import type { SessionRecord } from "./session_record.ts";

/**
 * The end answer from a final record (`fallbackReason` when the record names none).
 *
 * @example Usage
 * ```ts
 * import { endAnswer } from "./end_answer.ts";
 * import type { SessionRecord } from "./session_record.ts";
 * const rec: SessionRecord = {
 *   session_id: "session:abc", project_id: "proj_a", status: "ended", provider_type: "external_engine",
 *   transport: "websocket_fmp4", avatar_id: "ada", bg_id: "studio", webhook_url: null, created_at: 0,
 *   started_at: 1_000, ended_at: 61_500, warning: null, error_code: null, end_reason: "idle_timeout",
 *   chunks_rendered: 1500, created_by: "svc_key_x", owner: null,
 * };
 * endAnswer(rec, "ended_by_api").duration_s; // 60.5
 * ```
 */
export function endAnswer(rec: SessionRecord, fallbackReason: EndReason): EndedSession {
  const endedAt = rec.ended_at ?? rec.created_at;
  return {
    session_id: rec.session_id,
    status: rec.status,
    ended_at: endedAt,
    chunks_rendered: rec.chunks_rendered,
    duration_s: durationS(rec.started_at, endedAt),
    ...(rec.warning ? { warning: rec.warning } : {}),
    end_reason: rec.end_reason ?? fallbackReason,
  };
}
