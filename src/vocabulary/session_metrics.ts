/**
 * A session's measured figures before anything was measured: what `GET /v1/sessions/{id}/metrics` answers
 * for a session no player reported on yet, and the `metrics` of a `session.ended` webhook whose session's
 * figures were never recorded (its worker was lost). The shape is {@link SessionMetricsSnapshot}
 * (`schemas.ts`); the collector is `src/metrics/session_metrics.ts`.
 *
 * @module
 */
import type { FigureSummary, SessionMetricsSnapshot } from "./schemas.ts";

/** The summary of a figure not measured yet. */
export const EMPTY_FIGURE: Readonly<FigureSummary> = Object.freeze({ count: 0, p50: null, p95: null });

/** The figures of a session of which nothing was measured (yet). */
export function emptySessionMetrics(sessionId: string): SessionMetricsSnapshot {
  return {
    session_id: sessionId,
    first_frame_ms: null,
    engine_connect_ms: null,
    turn_latency_ms: { ...EMPTY_FIGURE },
    engine_latency_ms: { ...EMPTY_FIGURE },
    avatar_latency_ms: { ...EMPTY_FIGURE },
    av_offset_ms: { ...EMPTY_FIGURE },
    frame_latency_ms: { ...EMPTY_FIGURE },
    stalls: { count: 0, total_ms: 0 },
    catch_ups: { count: 0, skipped_ms: 0, last_ms: null },
    frames: { presented: 0, dropped: 0 },
    audio_underrun_ms: 0,
    playback: [],
    player_reports: 0,
    updated_at: null,
  };
}
