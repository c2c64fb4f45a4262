/**
 * The session contract, written once: the zod schemas of what the API answers about sessions and of the
 * lifecycle webhooks' payloads and of a session's measured figures (registered as OpenAPI components by name), and the TypeScript types
 * inferred from them. The routes answer with these schemas, the OpenAPI document shows them, and the code
 * that builds the answers and payloads (`session_view.ts`, `end_answer.ts`, `lifecycle_events.ts`, the
 * session service) is typed by them, so a field changes in one place.
 *
 * The request schemas (bodies, parameters) and the API-key and secret answers are the HTTP layer's
 * (`src/api/schemas.ts`).
 *
 * @module
 */
import { z } from "@hono/zod-openapi";
import { ERROR_CODES } from "../errors.ts";
import { SESSION_ID_PATTERN } from "../ids.ts";
import { END_REASONS } from "./end_reasons.ts";
import { PROVIDER_TYPES } from "../providers/definitions/provider_types.ts";
import { SESSION_STATUSES } from "./session_states.ts";
import { REQUESTED_TRANSPORTS, TRANSPORT_KINDS, transportsFilling } from "./transports.ts";

/** Unix epoch milliseconds. */
export const epochMs = () =>
  z.number().int().min(0).openapi({ format: "int64", description: "Unix epoch milliseconds" });

/** Session statuses. */
export const SessionStatus = z.enum(SESSION_STATUSES).openapi("SessionStatus");
/** End reasons (the list and its description come from `END_REASONS`). */
export const EndReason = z.enum(END_REASONS).openapi("EndReason", {
  description: `Why the session ended or failed: ${
    END_REASONS.join(", ")
  }. See docs/api.md#lifetimes-and-end-reasons.`,
});
/** Provider types. */
export const ProviderType = z.enum(PROVIDER_TYPES).openapi("ProviderType");
/** Requested transports. */
export const Transport = z.enum(REQUESTED_TRANSPORTS).openapi("Transport");

/** One ICE server (RFC 7065 URLs). */
export const IceServer = z.object({
  urls: z.union([z.string(), z.array(z.string())]),
  username: z.string().optional(),
  credential: z.string().optional(),
}).openapi("IceServer");
/** One ICE server of `stream_metadata.ice_servers`. */
export type IceServer = z.output<typeof IceServer>;

/** `stream_metadata`. */
export const StreamMetadata = z.object({
  ice_servers: z.array(IceServer),
  session_token: z.string().min(1).openapi({
    description:
      "Purpose-scoped media-plane token (5 minutes), distinct from the API key and the client token.",
  }),
  sfu_endpoint: z.string().nullable().openapi({
    description: `Null for ${
      TRANSPORT_KINDS.filter((k) => !transportsFilling("sfu_endpoint").includes(k)).join(", ")
    } sessions.`,
  }),
  media_url: z.string().nullable().openapi({
    description:
      "Added by this service: the media WebSocket of a websocket_fmp4 session (`ws(s)://…/media/v0/sessions/{session_id}`), authorised by `client_token` or `session_token` (see docs/media-plane.md). Null when this deployment runs no media plane.",
    example: "ws://localhost:8787/media/v0/sessions/session:3kTMd9xq0bq1h7nYQ2Lw6A",
  }),
  transport: z.enum(TRANSPORT_KINDS).openapi({
    description:
      "Added by this service: the session's transport (as the answer's `transport`), so that a player handed only `stream_metadata` knows how to connect (the SDK's `createPlayer` picks its player by it).",
  }),
}).openapi("StreamMetadata");
/** `stream_metadata` of the create and client-token answers. */
export type StreamMetadata = z.output<typeof StreamMetadata>;
/**
 * Where a session's media is reached: `stream_metadata` but the token and the transport (what a worker
 * knows of it).
 */
export type StreamEndpoints = Omit<StreamMetadata, "session_token" | "transport">;

/** POST /v1/sessions answer. */
export const CreatedSession = z.object({
  client_token: z.string().min(1).openapi({ description: "5-minute HMAC-signed media-plane token." }),
  expires_at: epochMs(),
  session_id: z.string().regex(SESSION_ID_PATTERN),
  status: SessionStatus,
  stream_metadata: StreamMetadata,
  transport: Transport,
}).openapi("CreatedSession");
/** The create-session answer. */
export type CreatedSession = z.output<typeof CreatedSession>;

/** GET /v1/sessions/{session_id} answer. */
export const Session = z.object({
  session_id: z.string().regex(SESSION_ID_PATTERN),
  status: SessionStatus,
  provider_type: ProviderType,
  transport: Transport,
  created_at: epochMs().optional(),
  started_at: epochMs().optional(),
  ended_at: epochMs().optional(),
  end_reason: EndReason.optional().openapi({
    description: "Added field (not in the specification): why the session ended. Absent while it is live.",
  }),
}).openapi("Session");
/** The public view of a session (`GET /v1/sessions/{session_id}`, each item of the listing). */
export type SessionView = z.output<typeof Session>;

/** POST /v1/sessions/{session_id}/end answer. */
export const EndedSession = z.object({
  session_id: z.string().regex(SESSION_ID_PATTERN),
  status: SessionStatus,
  ended_at: epochMs(),
  chunks_rendered: z.number().int().min(0).optional(),
  duration_s: z.number().min(0).optional(),
  warning: z.string().optional().openapi({ description: "Present only with status ended_with_warnings." }),
  end_reason: EndReason.optional().openapi({
    description: "Added field (not in the specification): `ended_by_api` or `ended_by_api_forced`.",
  }),
}).openapi("EndedSession");
/** The end answer. */
export type EndedSession = z.output<typeof EndedSession>;

/** POST /v1/sessions/{session_id}/client-token answer. */
export const ClientToken = z.object({
  client_token: z.string().min(1),
  expires_at: epochMs(),
  stream_metadata: StreamMetadata,
  transport: Transport,
}).openapi("ClientToken");
/** The client-token answer. */
export type ClientToken = z.output<typeof ClientToken>;

/** `GET /v1/sessions` answer. */
export const SessionList = z.object({
  data: z.array(Session).openapi({
    description:
      "Sessions, newest first (by `created_at`, then `session_id`), each as `GET /v1/sessions/{session_id}` answers it (with `end_reason` once ended).",
  }),
  next_cursor: z.string().nullable().openapi({
    description: "Pass as `cursor` for the next page (with the same filters); null on the last page.",
  }),
}).openapi("SessionList");
/** One page of the listing. */
export type SessionList = z.output<typeof SessionList>;

const sessionId = () => z.string().regex(SESSION_ID_PATTERN);

/** How a player played a session (`other`: a client that did not say). */
export const PLAYBACK_KINDS = ["webcodecs", "mse", "webrtc", "other"] as const;
/** How a player played a session. */
export type PlaybackKind = typeof PLAYBACK_KINDS[number];

const nonNegativeMs = () => z.number().min(0);

/** Count, median and 95th percentile of a figure (null until measured). */
export const MetricFigure = z.object({
  count: z.number().int().min(0).openapi({ description: "Measurements so far." }),
  p50: z.number().nullable().openapi({ description: "Median, ms (null until measured)." }),
  p95: z.number().nullable().openapi({ description: "95th percentile, ms (null until measured)." }),
}).openapi("MetricFigure");
/** Count, median and 95th percentile of a figure, ms (null until measured). */
export type FigureSummary = z.output<typeof MetricFigure>;

const figure = (description: string) => MetricFigure.openapi({ description });

/**
 * A session's figures: the answer of `GET /v1/sessions/{id}/metrics` (non-canonical) and the `metrics` of
 * the `session.ended` webhook (same object). How each is measured: docs/media-plane.md ("Per-session
 * figures"); where they live: `src/metrics/registry.ts`.
 */
export const SessionMetrics = z.object({
  session_id: sessionId(),
  first_frame_ms: nonNegativeMs().nullable().openapi({
    description: "Client connect → first frame presented, for the session's first client (null until then).",
  }),
  engine_connect_ms: nonNegativeMs().nullable().openapi({
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
    total_ms: nonNegativeMs(),
  }).openapi({
    description: "Times the players' media stopped arriving (network stalls), and for how long.",
  }),
  catch_ups: z.object({
    count: z.number().int().min(0),
    skipped_ms: nonNegativeMs(),
    last_ms: nonNegativeMs().nullable().openapi({
      description: "End of the last stall → playing at the live edge again.",
    }),
  }).openapi({ description: "Times a player skipped late media to get back to the live edge." }),
  frames: z.object({ presented: z.number().int().min(0), dropped: z.number().int().min(0) }),
  audio_underrun_ms: nonNegativeMs().openapi({
    description: "Audio the players had to play as silence (it came late).",
  }),
  playback: z.array(z.enum(PLAYBACK_KINDS)).openapi({
    description: "How the session's players played it.",
  }),
  player_reports: z.number().int().min(0).openapi({ description: "Reports received from players." }),
  updated_at: z.number().int().min(0).nullable().openapi({
    format: "int64",
    description: "Unix epoch ms of the last change; null before anything was measured.",
  }),
}).openapi("SessionMetrics");
/** A session's figures (see {@link SessionMetrics}). */
export type SessionMetricsSnapshot = z.output<typeof SessionMetrics>;

const isoTime = () =>
  z.string().openapi({ format: "date-time", description: "Time of the transition (ISO 8601)." });

/** `session.started`: the session became `active`. */
export const SessionStartedEvent = z.strictObject({
  type: z.literal("session.started"),
  timestamp: isoTime(),
  data: z.strictObject({
    session_id: sessionId(),
    project_id: z.string(),
    status: z.literal("active"),
    provider_type: ProviderType,
    transport: z.enum(TRANSPORT_KINDS),
    created_at: epochMs(),
    started_at: epochMs(),
  }),
}).openapi("SessionStartedEvent");

/** `session.ended`: an active session reached `ended` or `ended_with_warnings`. */
export const SessionEndedEvent = z.strictObject({
  type: z.literal("session.ended"),
  timestamp: isoTime(),
  data: z.strictObject({
    session_id: sessionId(),
    project_id: z.string(),
    status: z.enum(["ended", "ended_with_warnings"]),
    end_reason: EndReason,
    started_at: epochMs().nullable(),
    ended_at: epochMs(),
    duration_s: z.number().min(0).openapi({
      description: "Seconds from started_at to ended_at (ms precision).",
    }),
    chunks_rendered: z.number().int().min(0),
    warning: z.string().optional().openapi({ description: "Present with ended_with_warnings." }),
    metrics: SessionMetrics.openapi({
      description:
        "The session's final figures: the same object as GET /v1/sessions/{session_id}/metrics (null figures were never measured, e.g. no player reported).",
    }),
  }),
}).openapi("SessionEndedEvent");

/** `session.failed`: the session never became active. */
export const SessionFailedEvent = z.strictObject({
  type: z.literal("session.failed"),
  timestamp: isoTime(),
  data: z.strictObject({
    session_id: sessionId(),
    project_id: z.string(),
    status: z.literal("failed"),
    end_reason: EndReason,
    error_code: z.enum(ERROR_CODES).openapi({ description: "The error the start failed with." }),
    created_at: epochMs(),
    ended_at: epochMs(),
  }),
}).openapi("SessionFailedEvent");

/** Any lifecycle event body. */
export const LifecycleEvent = z.discriminatedUnion("type", [
  SessionStartedEvent,
  SessionEndedEvent,
  SessionFailedEvent,
]);
/** A webhook body: `{type, timestamp, data}` (the Standard Webhooks payload shape). */
export type LifecyclePayload = z.output<typeof LifecycleEvent>;
