/**
 * The lifecycle webhooks as documented in `openapi.json` (OpenAPI 3.1 `webhooks`): the Standard Webhooks
 * headers, the acknowledgement and retry rules, and the payload schemas of `src/vocabulary/schemas.ts`
 * (tests validate every delivered payload against them).
 *
 * @module
 */
import { type OpenAPIHono, z } from "@hono/zod-openapi";
import type { AppEnv } from "./app_env.ts";
import { describeRetrySchedule } from "../webhooks/schedule.ts";
import { SessionEndedEvent, SessionFailedEvent, SessionStartedEvent } from "../vocabulary/schemas.ts";

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
      `Anything else (including 3xx, which is not followed, and timeouts) is retried: ${describeRetrySchedule().delays} after successive failures, with up to 10 % jitter (deployment setting SVC_WEBHOOK_RETRY_SCHEDULE).`,
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
