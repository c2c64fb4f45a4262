/**
 * Ending a session whose owner cannot be called (it advertises no worker URL, or does not answer): the end
 * is recorded as a request in the session record (`ending` + `end_request`), which the owner carries out on
 * its next reconcile tick (graceful teardown included); this waits for the final state. If the owner does not
 * answer within the teardown timeout plus a margin (it is stuck, or dead and not yet reaped), the session is
 * ended here as `ended_with_warnings`; the owner tears its runtime down when it sees that, or the reaper ends
 * it when its lease runs out.
 *
 * @module
 */
import type { Clock } from "../clock.ts";
import { retryUnavailable } from "../kv/guard.ts";
import { getSession, transitionSession } from "../kv/sessions.ts";
import { REMOTE_END_WARNING } from "../vocabulary/end_reasons.ts";
import { durationS } from "../vocabulary/lifecycle_events.ts";
import type { SessionRecord } from "../vocabulary/session_record.ts";
import type { EndOptions } from "../vocabulary/host_requests.ts";
import { notActiveError } from "../vocabulary/not_active_error.ts";
import type { EndedSession } from "../vocabulary/schemas.ts";

/** Asks the owner through KV and waits up to `waitMs` for it. */
export async function endThroughKv(
  deps: { kv: Deno.Kv; clock: Clock; instanceId: string; pollMs?: number },
  rec: SessionRecord,
  options: EndOptions,
  waitMs: number,
): Promise<EndedSession> {
  const { kv, clock } = deps;
  const { project_id: projectId, session_id: sessionId } = rec;
  const moved = await transitionSession(kv, projectId, sessionId, ["active"], "ending", {
    end_request: { reason: options.reason, force: options.force, requested_by: deps.instanceId },
  }, clock.now());
  if (!moved.ok) throw notActiveError(moved.record);
  const deadline = clock.now() + waitMs;
  let final: SessionRecord | null = null;
  while (clock.now() < deadline) {
    const cur = await getSession(kv, projectId, sessionId).catch(() => null);
    if (cur && cur.status !== "ending") {
      final = cur;
      break;
    }
    await clock.sleep(deps.pollMs ?? 50);
  }
  if (!final) {
    const endedAt = clock.now();
    const done = await retryUnavailable(() =>
      transitionSession(kv, projectId, sessionId, ["ending"], "ended_with_warnings", {
        ended_at: endedAt,
        warning: REMOTE_END_WARNING,
        end_reason: options.reason,
      }, endedAt)
    );
    final = done.record!;
  }
  const endedAt = final.ended_at ?? clock.now();
  return {
    session_id: sessionId,
    status: final.status,
    ended_at: endedAt,
    chunks_rendered: final.chunks_rendered,
    duration_s: durationS(final.started_at, endedAt),
    ...(final.warning ? { warning: final.warning } : {}),
    end_reason: final.end_reason ?? options.reason,
  };
}
