/**
 * `GET /v1/sessions/{session_id}/metrics` (non-canonical): a session's measured figures — first frame,
 * turn latency split into the engine's and the avatar's share, mouth vs sound offset, frame latency,
 * stalls and catch-ups. Live while the session runs (at most a couple of seconds behind on another host),
 * final once it ended (the same object as the `session.ended` webhook's `metrics`). See
 * `src/metrics/registry.ts` for where the figures live, docs/media-plane.md for how each is measured.
 *
 * @module
 */
import { createRoute, type OpenAPIHono } from "@hono/zod-openapi";
import { ApiError } from "../../errors.ts";
import { readSessionCached } from "../../kv/handle_state.ts";
import { readSessionMetrics } from "../../kv/session_metrics.ts";
import { SessionMetrics, type SessionMetricsSnapshot } from "../../vocabulary/schemas.ts";
import type { AppEnv } from "../app_env.ts";
import { requireScope } from "../middleware/auth.ts";
import { API_KEY_SECURITY, COMMON_ERRORS, errorResponses, jsonResponse } from "../openapi_helpers.ts";
import { SessionIdParam } from "../schemas.ts";

const metricsRoute = createRoute({
  method: "get",
  path: "/v1/sessions/{session_id}/metrics",
  operationId: "getSessionMetrics",
  tags: ["Sessions"],
  summary: "Get a session's measured figures (non-canonical)",
  description:
    "Non-canonical: not part of the interface specification. The session's figures as measured by its players and the service: client connect → first frame, turn latency (end of the user's speech → the agent's first frame presented) split into the engine's share and the avatar's, mouth vs sound offset, frame latency, stalls and catch-ups. A figure not measured yet is null (a count of 0). Live while the session runs (flushed by its worker every 2 s), final once it has ended — the same object as the `session.ended` webhook's `metrics`. Another project's session answers 404. Scope: `sessions:read`.",
  security: API_KEY_SECURITY,
  middleware: [requireScope("sessions:read")] as const,
  request: { params: SessionIdParam },
  responses: {
    200: jsonResponse(SessionMetrics, "The session's figures."),
    ...errorResponses([...COMMON_ERRORS, "SVC_SESSION_NOT_FOUND"]),
  },
});

/** Registers `GET /v1/sessions/{session_id}/metrics`. */
export function registerSessionMetricsRoutes(
  app: OpenAPIHono<AppEnv>,
  deps: {
    kv: Deno.Kv;
    /** The live figures of a session this process runs (its worker's `MetricsRegistry.snapshotOf`). */
    live?: (sessionId: string) => SessionMetricsSnapshot | null;
  },
): void {
  app.openapi(metricsRoute, async (c) => {
    const caller = c.get("caller")!;
    const { session_id } = c.req.valid("param");
    const rec = await readSessionCached(deps.kv, caller.projectId, session_id);
    if (!rec) throw new ApiError("SVC_SESSION_NOT_FOUND");
    return c.json(await readSessionMetrics(deps.kv, rec, deps.live), 200);
  });
}
