/**
 * `/v1/webhooks/secret` (non-canonical): read and rotate the project's webhook signing secret.
 *
 * Scope `api_keys:write`: the signing secret is a project credential like an API key (whoever holds it can
 * forge lifecycle events), and `api_keys:write` is already the scope of keys that manage the project's
 * credentials (such a key can mint a key with any scope it holds). A separate scope would change the default
 * scopes of existing keys and of `admin bootstrap`.
 *
 * @module
 */
import { createRoute, type OpenAPIHono } from "@hono/zod-openapi";
import type { Clock } from "../../clock.ts";
import {
  getOrCreateWebhookSecret,
  rotateWebhookSecret,
  type WebhookSecretRecord,
} from "../../kv/webhook_secrets.ts";
import { generateWebhookSecret } from "../../webhooks/sign.ts";
import type { AppEnv } from "../app_env.ts";
import { requireScope } from "../middleware/auth.ts";
import { API_KEY_SECURITY, COMMON_ERRORS, errorResponses, jsonResponse } from "../openapi_helpers.ts";
import { WebhookSecret } from "../schemas.ts";

const getSecretRoute = createRoute({
  method: "get",
  path: "/v1/webhooks/secret",
  operationId: "getWebhookSecret",
  tags: ["Webhooks"],
  summary: "Read the webhook signing secret (non-canonical)",
  description:
    "The project's signing secret for lifecycle webhooks (created on first use). Not part of the canonical contract. Scope: `api_keys:write` (it is a credential).",
  security: API_KEY_SECURITY,
  middleware: [requireScope("api_keys:write")] as const,
  responses: {
    200: jsonResponse(WebhookSecret, "The signing secret."),
    ...errorResponses([...COMMON_ERRORS]),
  },
});

const rotateSecretRoute = createRoute({
  method: "post",
  path: "/v1/webhooks/secret/rotate",
  operationId: "rotateWebhookSecret",
  tags: ["Webhooks"],
  summary: "Rotate the webhook signing secret (non-canonical)",
  description:
    "Replaces the signing secret. For 24 hours deliveries carry signatures with both the new and the previous secret, so receivers can switch without dropping events. Not part of the canonical contract. Scope: `api_keys:write`.",
  security: API_KEY_SECURITY,
  middleware: [requireScope("api_keys:write")] as const,
  responses: {
    200: jsonResponse(WebhookSecret, "The new signing secret."),
    ...errorResponses([...COMMON_ERRORS]),
  },
});

/** The public shape of a stored secret. */
export function secretView(rec: WebhookSecretRecord, now: number) {
  const inGrace = rec.previous !== null && rec.previous_until !== null && now < rec.previous_until;
  return {
    secret: rec.current,
    previous_secret: inGrace ? rec.previous : null,
    previous_valid_until: inGrace ? rec.previous_until : null,
    created_at: rec.created_at,
    rotated_at: rec.rotated_at,
  };
}

/** Registers the webhook secret routes. */
export function registerWebhookRoutes(app: OpenAPIHono<AppEnv>, deps: { kv: Deno.Kv; clock: Clock }): void {
  app.openapi(getSecretRoute, async (c) => {
    const caller = c.get("caller")!;
    const rec = await getOrCreateWebhookSecret(
      deps.kv,
      caller.projectId,
      deps.clock.now(),
      generateWebhookSecret,
    );
    return c.json(secretView(rec, deps.clock.now()), 200);
  });
  app.openapi(rotateSecretRoute, async (c) => {
    const caller = c.get("caller")!;
    const rec = await rotateWebhookSecret(deps.kv, caller.projectId, deps.clock.now(), generateWebhookSecret);
    return c.json(secretView(rec, deps.clock.now()), 200);
  });
}
