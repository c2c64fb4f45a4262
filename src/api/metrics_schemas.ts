/**
 * The per-session figures as the API documents them: the answer of `GET /v1/sessions/{id}/metrics`
 * (non-canonical) and the `metrics` of the `session.ended` webhook (same object). Shape: `SessionMetrics`
 * in `src/metrics/session_metrics.ts`; how each figure is measured: docs/media-plane.md.
 *
 * @module
 */
import { z } from "@hono/zod-openapi";
import { SESSION_ID_PATTERN } from "../ids.ts";

const ms = () => z.number().min(0);

/** Count, median and 95th percentile of a figure (null until measured). */
export const MetricFigure = z.object({
  count: z.number().int().min(0).openapi({ description: "Measurements so far." }),
  p50: z.number().nullable().openapi({ description: "Median, ms (null until measured)." }),
  p95: z.number().nullable().openapi({ description: "95th percentile, ms (null until measured)." }),
}).openapi("MetricFigure");

const figure = (description: string) => MetricFigure.openapi({ description });

/** A session's figures. */
export const SessionMetrics = z.object({
  session_id: z.string().regex(SESSION_ID_PATTERN),
  first_frame_ms: ms().nullable().openapi({
    description: "Client connect → first frame presented, for the session's first client (null until then).",
  }),
  engine_connect_ms: ms().nullable().openapi({
    description: "Time the conversation engine took to connect, its handshake included.",
  }),
  turn_latency_ms: figure(
    "End of the user's speech (as it reached the service) → the agent's first frame presented at a client.",
  ),
  engine_latency_ms: figure(
    "The engine's share of a turn: end of the user's speech → the agent's first audio from the engine.",
  ),
  avatar_latency_ms: figure(
    "The avatar's share: the agent's first audio from the engine → its first frame presented at a client (every response, the greeting too).",
  ),
  av_offset_ms: figure(
    "Mouth vs sound, as the players measure it: a presented frame's display time − the time its sound leaves the player (+: the picture is late).",
  ),
  frame_latency_ms: figure("Frame made on the server (due on the media clock) → presented by a player."),
  stalls: z.object({
    count: z.number().int().min(0),
    total_ms: ms(),
  }).openapi({
    description: "Times the players' media stopped arriving (network stalls), and for how long.",
  }),
  catch_ups: z.object({
    count: z.number().int().min(0),
    skipped_ms: ms(),
    last_ms: ms().nullable().openapi({
      description: "End of the last stall → playing at the live edge again.",
    }),
  }).openapi({ description: "Times a player skipped late media to get back to the live edge." }),
  frames: z.object({ presented: z.number().int().min(0), dropped: z.number().int().min(0) }),
  audio_underrun_ms: ms().openapi({
    description: "Audio the players had to play as silence (it came late).",
  }),
  playback: z.array(z.enum(["webcodecs", "mse", "webrtc", "other"])).openapi({
    description: "How the session's players played it.",
  }),
  player_reports: z.number().int().min(0).openapi({ description: "Reports received from players." }),
  updated_at: z.number().int().min(0).nullable().openapi({
    format: "int64",
    description: "Unix epoch ms of the last change; null before anything was measured.",
  }),
}).openapi("SessionMetrics");
