/**
 * The lifecycle webhooks as documented in `openapi.json` (OpenAPI 3.1 `webhooks`): their payload schemas
 * and the Standard Webhooks headers. Tests validate every delivered payload against these schemas.
 *
 * @module
 */
import { type OpenAPIHono, z } from "@hono/zod-openapi";
import { ERROR_CODES } from "../errors.ts";
import { SESSION_ID_PATTERN } from "../ids.ts";
import type { AppEnv } from "./env.ts";
import { EndReason, ProviderType } from "./schemas.ts";
import { SessionMetrics } from "./metrics_schemas.ts";

const epochMs = () =>
  z.number().int().min(0).openapi({ format: "int64", description: "Unix epoch milliseconds" });
const sessionId = () => z.string().regex(SESSION_ID_PATTERN);
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
    transport: z.enum(["websocket_fmp4", "webrtc_sfu"]),
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

/** The headers of every delivery (Standard Webhooks). */
export const WebhookHeaders = z.object({
  "webhook-id": z.string().regex(/^msg_[A-Za-z0-9]+_(start|end)$/).openapi({
    description:
      "Event id, the same on every retry: `msg_<session id without 'session:'>_start` or `_end`. Use it to drop repeats (delivery is at least once).",
  }),
  "webhook-timestamp": z.string().regex(/^\d+$/).openapi({
    description: "Unix seconds of this attempt. Reject deliveries more than 5 minutes off.",
  }),
  "webhook-signature": z.string().openapi({
    description:
      'Space-separated `v1,<base64 HMAC-SHA256 of "<webhook-id>.<webhook-timestamp>.<raw body>">` with the project\'s signing secret (base64 after `whsec_`); for 24 h after a rotation a second signature with the previous secret follows.',
  }),
});

const ack = {
  200: { description: "Any 2xx acknowledges the event; it is not sent again." },
  410: { description: "410 Gone: the URL is gone; no further events are sent to it (for 30 days)." },
  default: {
    description:
      "Anything else (including 3xx, which is not followed, and timeouts) is retried: 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 14 h, 20 h, 24 h after successive failures, with up to 10 % jitter (deployment setting SVC_WEBHOOK_RETRY_SCHEDULE).",
  },
};

/** Registers the three lifecycle webhooks in the OpenAPI document. */
export function registerWebhookDocs(app: OpenAPIHono<AppEnv>): void {
  const events: [string, string, z.ZodType][] = [
    ["session.started", "The session became active.", SessionStartedEvent],
    ["session.ended", "An active session ended (every end reason but start failures).", SessionEndedEvent],
    [
      "session.failed",
      "The session never became active (its start failed, or its process was lost).",
      SessionFailedEvent,
    ],
  ];
  for (const [name, summary, schema] of events) {
    app.openAPIRegistry.registerWebhook({
      method: "post",
      path: name,
      operationId: `webhook_${name.replace(".", "_")}`,
      tags: ["Webhooks"],
      summary,
      description:
        "POSTed to the session's `webhook_url`, signed per Standard Webhooks with the project's signing secret (read and rotate it at /v1/webhooks/secret). The body never contains credentials, tokens or API keys. See docs/webhooks.md.",
      request: {
        headers: WebhookHeaders,
        body: { required: true, content: { "application/json": { schema } } },
      },
      responses: ack,
    });
  }
}
