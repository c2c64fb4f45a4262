/**
 * `/v1/sessions`: create-and-start, get, end, and mint a client token.
 *
 * @module
 */
import { createRoute, type OpenAPIHono } from "@hono/zod-openapi";
import { ApiError } from "../../errors.ts";
import { holderOf } from "../../providers/definitions/credential_reader.ts";
import type { SessionService } from "../../sessions/service.ts";
import { refuseProviderConnectionId } from "../error_handler.ts";
import { credentialBody } from "../middleware/credential_body.ts";
import type { AppEnv } from "../app_env.ts";
import { requireScope } from "../middleware/auth.ts";
import { API_KEY_SECURITY, COMMON_ERRORS, errorResponses, jsonResponse } from "../openapi_helpers.ts";
import { CreateSessionBody, EndQuery, IdempotencyHeader, SessionIdParam } from "../schemas.ts";
import { ClientToken, CreatedSession, EndedSession, Session } from "../../vocabulary/schemas.ts";

const createSessionRoute = createRoute({
  method: "post",
  path: "/v1/sessions",
  operationId: "createSession",
  tags: ["Sessions"],
  summary: "Create and start a session",
  description:
    "Creates a session and starts it: connects the conversation engine with the given per-session credentials (held in memory only, zeroed at the end) and returns once the session is `active`, with a 5-minute client token. Optional `Idempotency-Key`: see docs/idempotency.md. Scope: `sessions:write`.",
  security: API_KEY_SECURITY,
  middleware: [requireScope("sessions:write"), credentialBody()] as const,
  request: {
    headers: IdempotencyHeader,
    body: { required: true, content: { "application/json": { schema: CreateSessionBody } } },
  },
  responses: {
    200: jsonResponse(CreatedSession, "The session is active.", {
      "Idempotent-Replayed": {
        description: "`true` when the answer replays an earlier request with the same Idempotency-Key.",
        schema: { type: "string" },
      },
    }),
    ...errorResponses([
      ...COMMON_ERRORS,
      "SVC_INVALID_REQUEST",
      "SVC_PAYLOAD_TOO_LARGE",
      "SVC_REQUEST_TIMEOUT",
      "SVC_UNSUPPORTED_MEDIA_TYPE",
      "SVC_PROVIDER_MISCONFIGURED",
      "SVC_RENDER_MISCONFIGURED",
      "SVC_IDEMPOTENCY_KEY_REUSED",
      "SVC_IDEMPOTENCY_IN_PROGRESS",
      "SVC_SESSION_CANCELLED",
      "SVC_RATE_LIMIT_CONCURRENT_SESSIONS",
      "SVC_RATE_LIMIT_PROVIDER_QUOTA",
      "SVC_PROVIDER_DOWNSTREAM_FAILED",
      "SVC_RENDER_FAILED",
      "SVC_PROVIDER_UNAVAILABLE",
      "SVC_RENDER_CAPACITY",
      "SVC_SFU_NOT_CONFIGURED",
      "SVC_SFU_CONNECTION_FAILED",
      "SVC_SFU_NEGOTIATION_FAILED",
      "SVC_SFU_ROOM_FULL",
      "SVC_TOKEN_SECRET_NOT_CONFIGURED",
      "SVC_PROVIDER_TIMEOUT",
      "SVC_RENDER_TIMEOUT",
    ]),
  },
});

const getSessionRoute = createRoute({
  method: "get",
  path: "/v1/sessions/{session_id}",
  operationId: "getSession",
  tags: ["Sessions"],
  summary: "Get a session's status",
  description:
    "Never includes the client token. Another project's session answers 404. Scope: `sessions:read`.",
  security: API_KEY_SECURITY,
  middleware: [requireScope("sessions:read")] as const,
  request: { params: SessionIdParam },
  responses: {
    200: jsonResponse(Session, "The session."),
    ...errorResponses([...COMMON_ERRORS, "SVC_SESSION_NOT_FOUND"]),
  },
});

const endSessionRoute = createRoute({
  method: "post",
  path: "/v1/sessions/{session_id}/end",
  operationId: "endSession",
  tags: ["Sessions"],
  summary: "End a session",
  description:
    "Ends an `active` session: graceful teardown with a 10 s timeout (`ended`, or `ended_with_warnings` with a `warning`), or immediately with `force=true`. Not idempotent: a second end answers 409 SVC_SESSION_ENDED; `created`, `activating`, `ending` and `failed` answer 409 SVC_SESSION_CONFLICT. Scope: `sessions:write`.",
  security: API_KEY_SECURITY,
  middleware: [requireScope("sessions:write")] as const,
  request: { params: SessionIdParam, query: EndQuery },
  responses: {
    200: jsonResponse(EndedSession, "The session has ended."),
    ...errorResponses([
      ...COMMON_ERRORS,
      "SVC_INVALID_REQUEST",
      "SVC_SESSION_NOT_FOUND",
      "SVC_SESSION_ENDED",
      "SVC_SESSION_CONFLICT",
    ]),
  },
});

const clientTokenRoute = createRoute({
  method: "post",
  path: "/v1/sessions/{session_id}/client-token",
  operationId: "createClientToken",
  tags: ["Sessions"],
  summary: "Mint a fresh client token",
  description:
    "Mints a fresh 5-minute client token and session token for an `active` session (reconnects, delayed connections, recovery after sleep). A session that is not active answers 409. Scope: `sessions:write`.",
  security: API_KEY_SECURITY,
  middleware: [requireScope("sessions:write")] as const,
  request: { params: SessionIdParam },
  responses: {
    200: jsonResponse(ClientToken, "A fresh token pair."),
    ...errorResponses([
      ...COMMON_ERRORS,
      "SVC_SESSION_NOT_FOUND",
      "SVC_SESSION_ENDED",
      "SVC_SESSION_CONFLICT",
      "SVC_TOKEN_SECRET_NOT_CONFIGURED",
    ]),
  },
});

/** Registers the session routes. */
export function registerSessionRoutes(app: OpenAPIHono<AppEnv>, deps: { sessions: SessionService }): void {
  app.openapi(createSessionRoute, async (c) => {
    const caller = c.get("caller")!;
    const body = c.req.valid("json");
    c.set("providerType", body.provider_type);
    // provider_connection_id nested where validation cannot see it (e.g. a header name).
    refuseProviderConnectionId(body);
    const idem = c.req.valid("header")["Idempotency-Key"];
    // The credentials go from the body's bytes into their holder (credentialBody zeroes what it read);
    // the validated body holds stand-ins in their place.
    const credentials = holderOf(
      c.get("credentials")?.found ?? null,
      body.provider_type,
      body.provider_config[body.provider_type] ?? {},
    );
    if (!credentials) throw new ApiError("SVC_PROVIDER_MISCONFIGURED");
    const { session, replayed } = await deps.sessions.create(caller, body, credentials, idem);
    if (replayed) c.header("Idempotent-Replayed", "true");
    return c.json(session, 200);
  });

  app.openapi(getSessionRoute, async (c) => {
    const caller = c.get("caller")!;
    return c.json(await deps.sessions.get(caller, c.req.valid("param").session_id), 200);
  });

  app.openapi(endSessionRoute, async (c) => {
    const caller = c.get("caller")!;
    const { session_id } = c.req.valid("param");
    const force = c.req.valid("query").force === "true";
    return c.json(await deps.sessions.end(caller, session_id, force), 200);
  });

  app.openapi(clientTokenRoute, async (c) => {
    const caller = c.get("caller")!;
    return c.json(await deps.sessions.mintClientToken(caller, c.req.valid("param").session_id), 200);
  });
}
