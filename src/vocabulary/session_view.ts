/**
 * The public view of a session: what `GET /v1/sessions/{session_id}` answers and what each item of the
 * listing (`GET /v1/sessions`) is (its type is inferred from the `Session` schema of `schemas.ts`). It
 * never holds credentials, tokens or internal fields.
 *
 * @module
 */
import type { SessionView } from "./schemas.ts";
import type { SessionRecord } from "./session_record.ts";

/** The public view of a record (no credentials, no tokens, no internal fields). */
export function toView(rec: SessionRecord): SessionView {
  return {
    session_id: rec.session_id,
    status: rec.status,
    provider_type: rec.provider_type,
    transport: rec.transport,
    created_at: rec.created_at,
    ...(rec.started_at !== null ? { started_at: rec.started_at } : {}),
    ...(rec.ended_at !== null ? { ended_at: rec.ended_at } : {}),
    ...(rec.end_reason !== null ? { end_reason: rec.end_reason } : {}),
  };
}
