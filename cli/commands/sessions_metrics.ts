/**
 * `sessions metrics`: a session's measured figures (first frame, turn latency and its split, mouth vs sound,
 * frame latency, stalls and catch-ups), live while it runs, final once it ended.
 *
 * @module
 */
import type { MetricFigure, SessionMetrics } from "@avatar-svc/sdk";
import { API_OPTIONS, clientFromFlags } from "../api_client.ts";
import type { CommandSpec } from "../command.ts";
import { formatTime, printJson, printTable } from "../output.ts";
import { startProgress } from "../progress.ts";
import { printable } from "../printable.ts";

/** `42 ms`, or `-` for a figure not measured yet. */
function ms(v: number | null | undefined): string {
  return typeof v === "number" ? `${Math.round(v * 10) / 10} ms` : "-";
}

/** The table rows of a session's figures: measure, count, median, 95th percentile. */
export function metricsRows(m: SessionMetrics): string[][] {
  const figure = (label: string, f: MetricFigure): string[] => [
    label,
    String(f.count),
    ms(f.p50),
    ms(f.p95),
  ];
  const one = (label: string, v: number | null): string[] => [label, v === null ? "0" : "1", ms(v), "-"];
  return [
    one("connect → first frame", m.first_frame_ms),
    one("engine connect", m.engine_connect_ms),
    figure("turn: end of speech → first frame", m.turn_latency_ms),
    figure("  engine's share (→ first audio)", m.engine_latency_ms),
    figure("  avatar's share (→ first frame)", m.avatar_latency_ms),
    figure("mouth vs sound (+ picture late)", m.av_offset_ms),
    figure("frame made → presented", m.frame_latency_ms),
  ];
}

/** `sessions metrics`. */
export const sessionsMetrics: CommandSpec = {
  path: ["sessions", "metrics"],
  summary: "Show a session's measured figures (GET /v1/sessions/{session_id}/metrics, non-canonical)",
  description:
    "First frame, turn latency split into the engine's and the avatar's share, mouth vs sound offset,\nframe latency, stalls and catch-ups, as the players and the service measured them; live while the\nsession runs, final once it ended. '-' is not measured yet. Needs scope sessions:read.",
  positionals: [{ name: "session_id", help: "the session's id (session:…)" }],
  options: API_OPTIONS,
  examples: [
    "deno task cli sessions metrics session:3kTMd9xq0bq1h7nYQ2Lw6A",
    "deno task cli sessions metrics session:3kTMd9xq0bq1h7nYQ2Lw6A --json | jq .turn_latency_ms.p50",
  ],
  async run({ values, positionals }, io) {
    const client = clientFromFlags(values, io, startProgress(io, "", false).note);
    const m = await client.getSessionMetrics(positionals[0]);
    if (values.json) {
      printJson(io, m);
      return 0;
    }
    printTable(io, ["measure", "count", "p50", "p95"], metricsRows(m));
    const lines = [
      `stalls: ${m.stalls.count} (${m.stalls.total_ms} ms); catch-ups: ${m.catch_ups.count} (skipped ${m.catch_ups.skipped_ms} ms${
        m.catch_ups.last_ms === null ? "" : `, last back at the live edge after ${m.catch_ups.last_ms} ms`
      })`,
      `frames presented: ${m.frames.presented}, dropped: ${m.frames.dropped}; sound played as silence: ${m.audio_underrun_ms} ms`,
      `players: ${
        m.playback.length ? m.playback.join(", ") : "none reported"
      } (${m.player_reports} reports); updated ${formatTime(m.updated_at)}`,
    ];
    io.stdout(lines.map((l) => `${printable(l)}\n`).join(""));
    return 0;
  },
};
