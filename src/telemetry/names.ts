/**
 * The names this service exports through OpenTelemetry: its instrumentation scope, its metrics and span
 * names, and the attributes they carry. Attributes from OpenTelemetry's semantic conventions are used where
 * one fits (`error.type`, `http.response.status_code`, `http.route`, `server.address`, `server.port`, …);
 * the service's own are namespaced `avatar.` (semantic conventions ask custom attributes to live under a
 * namespace of their own). Units follow UCUM as the conventions ask (`s` for durations, `{session}` for
 * counts of sessions). None of them ever carries a credential, an API key, a token, or a URL path or query.
 *
 * @module
 */

/** Instrumentation scope (meter and tracer name). */
export const SCOPE = "avatar-session-service";

/** Metric names. */
export const METRIC = {
  /** ObservableUpDownCounter `{session}`: sessions running on a worker now (by transport, provider, worker). */
  sessionsActive: "avatar.session.active",
  /** Counter `{session}`: `POST /v1/sessions` answers, by status code and error code. */
  creates: "avatar.session.creates",
  /** Histogram `s`: create request → session `active`, for the creates that succeeded. */
  startDuration: "avatar.session.start.duration",
  /** Counter `{session}`: sessions that reached a terminal status, by end reason and status. */
  ends: "avatar.session.ends",
  /** Histogram `s`: `started_at` → `ended_at` of sessions that were active. */
  sessionDuration: "avatar.session.duration",
  /** Counter `{attempt}`: webhook delivery attempts, by outcome and HTTP status. */
  webhookDeliveries: "avatar.webhook.deliveries",
  /** Histogram `s`: event written → delivered (2xx), retries included. */
  webhookLag: "avatar.webhook.delivery.lag",
  /** Counter `{failure}`: engine connections that failed to open or complete their handshake, by kind. */
  engineConnectFailures: "avatar.engine.connect.failures",
  /** Histogram `s`: engine connect + handshake, successful or not. */
  engineConnectDuration: "avatar.engine.connect.duration",
  /** ObservableUpDownCounter `{session}`: sessions a worker takes at once (`SVC_RENDER_CAPACITY`). */
  workerCapacity: "avatar.worker.capacity",
  /** ObservableUpDownCounter `{session}`: free slots of a worker now. */
  workerFreeSlots: "avatar.worker.free_slots",
  /** Counter `{request}`: requests refused by the rate limits (429), by code and route. */
  rateLimitRefusals: "avatar.rate_limit.refusals",
  /** Histogram `s`: per-session turn latency (issue 21's figures; the session's p50 and p95). */
  turnLatency: "avatar.session.turn_latency",
  /** Histogram `s`: per-session avatar latency (issue 21's figures). */
  avatarLatency: "avatar.session.avatar_latency",
  /** Histogram `s`: per-session audio/video offset, signed (issue 21's figures). */
  avOffset: "avatar.session.av_offset",
  /** Histogram `s`: client connect → first frame presented (issue 21's figures). */
  firstFrame: "avatar.session.first_frame",
} as const;

/** Span names (low cardinality: no ids in names). */
export const SPAN = {
  /** API process: the whole create (validation to `active`). */
  create: "session.create",
  /** Worker: the start of a session placed on it (engine, media, `active`). */
  start: "session.start",
  /** Worker: engine connection + protocol handshake (Deno's own span of the upgrade is suppressed). */
  engineConnect: "engine.connect",
  /** Worker: the media plane's start up to the first encoded frame. */
  firstFrame: "media.first_frame",
  /** API process: an end. */
  end: "session.end",
  /** Worker: one webhook delivery attempt (Deno's own fetch span is suppressed). */
  webhookDeliver: "webhook.deliver",
} as const;

/** Attribute keys. */
export const ATTR = {
  // semantic conventions
  errorType: "error.type",
  httpStatus: "http.response.status_code",
  httpMethod: "http.request.method",
  httpRoute: "http.route",
  serverAddress: "server.address",
  serverPort: "server.port",
  // the service's own
  sessionId: "avatar.session.id",
  projectId: "avatar.project.id",
  providerType: "avatar.provider.type",
  transport: "avatar.session.transport",
  status: "avatar.session.status",
  endReason: "avatar.session.end_reason",
  workerId: "avatar.worker.id",
  webhookOutcome: "avatar.webhook.outcome",
  webhookEventType: "avatar.webhook.event_type",
  statistic: "avatar.statistic",
} as const;
