/**
 * Turn latency, avatar latency, A/V offset and first frame, per session, into metrics. The figures are
 * measured by the players and the service (`src/metrics/`; `GET /v1/sessions/{session_id}/metrics`
 * and the `metrics` of the `session.ended` webhook: `{"first_frame_ms", "turn_latency_ms":
 * {"count","p50","p95"}, "avatar_latency_ms": {…}, "av_offset_ms": {…}, …}`, a figure not measured being
 * `null`). {@link recordSessionFigures} takes that object once per session — when it ends — and records each
 * summary's p50 and p95 (attribute `avatar.statistic`) in the histograms `avatar.session.turn_latency`,
 * `avatar.session.avatar_latency`, `avatar.session.av_offset` (signed) and `avatar.session.first_frame`,
 * in seconds. So a dashboard shows, over sessions, how the typical (p50) and the bad (p95) moments of each
 * session are distributed.
 *
 * The session worker calls it where the session's final figures are known (`SessionWorker`, where it writes
 * them into the session's end, i.e. the `session.ended` event), with the session's provider type and
 * transport. A session whose worker was lost (`owner_lost`) is not recorded: its figures are kept only in
 * storage (the session's record).
 *
 * @module
 */
import type { Attributes, Histogram } from "@opentelemetry/api";
import type { FigureSummary, SessionMetricsSnapshot } from "../vocabulary/schemas.ts";
import { ATTR } from "./names.ts";
import { instruments, recordMs } from "./metrics.ts";

/** The figures of one session this records (fields beyond these are ignored). */
export type SessionFigures = Partial<
  Pick<SessionMetricsSnapshot, "first_frame_ms" | "turn_latency_ms" | "avatar_latency_ms" | "av_offset_ms">
>;

function summary(h: Histogram, s: FigureSummary | null | undefined, attrs: Attributes): void {
  if (!s || !(s.count > 0)) return;
  recordMs(h, s.p50, { ...attrs, [ATTR.statistic]: "p50" });
  recordMs(h, s.p95, { ...attrs, [ATTR.statistic]: "p95" });
}

/** Records one session's figures (once, when it ends). Does nothing with metrics off. */
export function recordSessionFigures(
  figures: SessionFigures,
  session: { providerType: string; transport: string },
): void {
  const m = instruments();
  if (!m) return;
  const attrs: Attributes = {
    [ATTR.providerType]: session.providerType,
    [ATTR.transport]: session.transport,
  };
  summary(m.turnLatency, figures.turn_latency_ms, attrs);
  summary(m.avatarLatency, figures.avatar_latency_ms, attrs);
  summary(m.avOffset, figures.av_offset_ms, attrs);
  recordMs(m.firstFrame, figures.first_frame_ms, attrs);
}
