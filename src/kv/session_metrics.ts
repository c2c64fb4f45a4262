/**
 * Storage of the per-session figures: the figures a worker flushes while its session runs
 * (`["project", pid, "session_metrics", sid]`, expiring after a day), and the one read path the API uses
 * ({@link readSessionMetrics}): the final figures recorded with the session's end, else the live ones of
 * the process that runs it, else the last ones its worker flushed, else nothing measured. The collector
 * and the flushing loop are `src/metrics/`.
 *
 * @module
 */
import type { SessionRecord } from "../vocabulary/session_record.ts";
import type { SessionMetricsSnapshot } from "../vocabulary/schemas.ts";
import { emptySessionMetrics } from "../vocabulary/session_metrics.ts";
import { kvOp } from "./guard.ts";
import { sessionMetricsKey } from "./keys.ts";

/** Flushed figures of a session that never recorded its end (its worker died) expire after this (ms). */
export const FLUSHED_METRICS_TTL_MS = 24 * 3600_000;

/** Sessions whose figures one flush writes in one atomic operation (well inside Deno KV's mutation limits). */
export const FLUSH_BATCH = 10;

/**
 * Writes running sessions' figures (a worker's periodic flush), {@link FLUSH_BATCH} sessions per commit:
 * a host of two hundred talking sessions flushes a few commits a second instead of a hundred.
 */
export async function writeFlushedSessionMetrics(
  kv: Deno.Kv,
  figures: readonly { projectId: string; snapshot: SessionMetricsSnapshot }[],
): Promise<void> {
  for (let i = 0; i < figures.length; i += FLUSH_BATCH) {
    const op = kv.atomic();
    for (const { projectId, snapshot } of figures.slice(i, i + FLUSH_BATCH)) {
      op.set(sessionMetricsKey(projectId, snapshot.session_id), snapshot, {
        expireIn: FLUSHED_METRICS_TTL_MS,
      });
    }
    const res = await kvOp(() => op.commit());
    if (!res.ok) throw new Error("session figures not written");
  }
}

/** The figures a session's worker last flushed, or null. */
export async function readFlushedSessionMetrics(
  kv: Deno.Kv,
  projectId: string,
  sessionId: string,
): Promise<SessionMetricsSnapshot | null> {
  return (await kvOp(() => kv.get<SessionMetricsSnapshot>(sessionMetricsKey(projectId, sessionId)))).value;
}

/**
 * A session's figures for the API: the final ones recorded with its end, else the live ones of this
 * process (`live`, when it runs the session), else the last ones its worker flushed, else nothing measured.
 */
export async function readSessionMetrics(
  kv: Deno.Kv,
  record: Pick<SessionRecord, "project_id" | "session_id" | "metrics">,
  live?: (sessionId: string) => SessionMetricsSnapshot | null,
): Promise<SessionMetricsSnapshot> {
  if (record.metrics) return record.metrics;
  const here = live?.(record.session_id);
  if (here) return here;
  return await readFlushedSessionMetrics(kv, record.project_id, record.session_id) ??
    emptySessionMetrics(record.session_id);
}
