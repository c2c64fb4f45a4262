/**
 * `/v1/api-keys`: create and revoke (canonical), list (non-canonical, scope `api_keys:read`).
 *
 * @module
 */
import { createRoute, type OpenAPIHono, z } from "@hono/zod-openapi";
import type { Clock } from "../../clock.ts";
import { ApiError } from "../../errors.ts";
import { KEY_ID_PATTERN, MAX_ID_LENGTH } from "../../ids.ts";
import { createApiKey, listApiKeys, revokeApiKey } from "../../kv/api_keys.ts";
import type { AppEnv } from "../app_env.ts";
import { requireScope } from "../middleware/auth.ts";
import { API_KEY_SECURITY, COMMON_ERRORS, errorResponses, jsonResponse } from "../openapi_helpers.ts";
import { ApiKeyList, CreateApiKeyBody, CreatedApiKey, KeyIdParam, RevokedApiKey } from "../schemas.ts";

const BODY_ERRORS = [
  "SVC_INVALID_REQUEST",
  "SVC_PAYLOAD_TOO_LARGE",
  "SVC_REQUEST_TIMEOUT",
  "SVC_UNSUPPORTED_MEDIA_TYPE",
] as const;

const createKeyRoute = createRoute({
  method: "post",
  path: "/v1/api-keys",
  operationId: "createApiKey",
  tags: ["API keys"],
  summary: "Create an API key",
  description:
    "Creates a project-scoped API key. The plaintext `api_key` is returned exactly once. A key may only grant scopes it holds itself. Scope: `api_keys:write`.",
  security: API_KEY_SECURITY,
  middleware: [requireScope("api_keys:write")] as const,
  request: { body: { required: true, content: { "application/json": { schema: CreateApiKeyBody } } } },
  responses: {
    200: jsonResponse(CreatedApiKey, "The new key, with its plaintext (shown once)."),
    ...errorResponses([...COMMON_ERRORS, ...BODY_ERRORS, "SVC_AUTH_FORBIDDEN"]),
  },
});

const revokeKeyRoute = createRoute({
  method: "delete",
  path: "/v1/api-keys/{key_id}",
  operationId: "revokeApiKey",
  tags: ["API keys"],
  summary: "Revoke an API key",
  description:
    "Revokes a key permanently. Idempotent: revoking a revoked key returns the original `revoked_at`. Unknown keys and other projects' keys answer 404. Scope: `api_keys:write`.",
  security: API_KEY_SECURITY,
  middleware: [requireScope("api_keys:write")] as const,
  request: { params: KeyIdParam },
  responses: {
    200: jsonResponse(RevokedApiKey, "The key is revoked."),
    ...errorResponses([...COMMON_ERRORS, "SVC_API_KEY_NOT_FOUND"]),
  },
});

const ListQuery = z.object({
  limit: z.string().regex(/^\d+$/).transform(Number).pipe(z.number().int().min(1).max(100)).optional()
    .openapi({
      param: { name: "limit", in: "query" },
      type: "integer",
      description: "Page size, 1..100 (default 20).",
    }),
  starting_after: z.string().max(MAX_ID_LENGTH).regex(KEY_ID_PATTERN).optional().openapi({
    param: { name: "starting_after", in: "query" },
    description: "Cursor: the last key_id of the previous page.",
  }),
});

const listKeysRoute = createRoute({
  method: "get",
  path: "/v1/api-keys",
  operationId: "listApiKeys",
  tags: ["API keys"],
  summary: "List API keys (non-canonical)",
  description:
    "Lists the project's keys in key_id order, revoked ones included, never with their plaintext. Not part of the canonical contract. Scope: `api_keys:read`.",
  security: API_KEY_SECURITY,
  middleware: [requireScope("api_keys:read")] as const,
  request: { query: ListQuery },
  responses: {
    200: jsonResponse(ApiKeyList, "One page of keys."),
    ...errorResponses([...COMMON_ERRORS, "SVC_INVALID_REQUEST"]),
  },
});

/** Registers the API key routes. */
export function registerApiKeyRoutes(app: OpenAPIHono<AppEnv>, deps: { kv: Deno.Kv; clock: Clock }): void {
  app.openapi(createKeyRoute, async (c) => {
    const caller = c.get("caller")!;
    const body = c.req.valid("json");
    const escalated = body.scopes.filter((s) => !caller.scopes.includes(s));
    if (escalated.length) {
      throw new ApiError(
        "SVC_AUTH_FORBIDDEN",
        `The API key may not grant scopes it does not hold: ${escalated.join(", ")}.`,
      );
    }
    const { record, plaintext } = await createApiKey(deps.kv, {
      projectId: caller.projectId,
      name: body.name,
      scopes: body.scopes,
      now: deps.clock.now(),
      createdBy: caller.keyId,
    });
    return c.json({
      api_key: plaintext,
      created_at: record.created_at,
      key_id: record.key_id,
      name: record.name,
      scopes: record.scopes,
    }, 200);
  });

  app.openapi(revokeKeyRoute, async (c) => {
    const caller = c.get("caller")!;
    const { key_id } = c.req.valid("param");
    const rec = await revokeApiKey(deps.kv, caller.projectId, key_id, deps.clock.now());
    if (!rec) throw new ApiError("SVC_API_KEY_NOT_FOUND");
    return c.json({ key_id: rec.key_id, revoked_at: rec.revoked_at!, status: "revoked" as const }, 200);
  });

  app.openapi(listKeysRoute, async (c) => {
    const caller = c.get("caller")!;
    const q = c.req.valid("query");
    const page = await listApiKeys(deps.kv, caller.projectId, {
      limit: q.limit ?? 20,
      startingAfter: q.starting_after,
    });
    return c.json({
      data: page.keys.map((k) => ({
        key_id: k.key_id,
        name: k.name,
        scopes: k.scopes,
        created_at: k.created_at,
        revoked_at: k.revoked_at,
        status: k.revoked_at === null ? "active" as const : "revoked" as const,
        hint: k.hint,
      })),
      has_more: page.hasMore,
    }, 200);
  });
}
