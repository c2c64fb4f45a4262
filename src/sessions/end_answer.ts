/**
 * The end answer (`POST /v1/sessions/{id}/end`) from a final record, and the one case where an end of an
 * ended session answers 200: the retry of an end whose first answer was 503 because storage was out when
 * its teardown finished (the record carries `end_unanswered_until`; the first retry takes it).
 *
 * @module
 */
import { forgetSession } from "../kv/session_cache.ts";
import { kvOp } from "../kv/guard.ts";
import { sessionKey } from "../kv/keys.ts";
import { expiryOf } from "../kv/session_index.ts";
import { sessionRetentionOf } from "../kv/session_retention.ts";
import type { EndedSession } from "./session_host.ts";
import type { EndReason } from "../vocabulary/end_reasons.ts";
import { durationS } from "../vocabulary/lifecycle_events.ts";
import type { SessionRecord } from "../vocabulary/session_record.ts";

/** How long a retried end may still collect the answer of an end that got 503. */
export const UNANSWERED_END_TTL_MS = 15 * 60_000;

/** The end answer from a final record. */
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

/**
 * Takes the undelivered answer of an ended session (compare-and-set, so only one retry gets it). Resolves
 * with the answer, or null when there is none (the end was answered, or the window passed).
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
