/**
 * The API's request metrics, as one middleware on `/v1/*` registered ahead of authentication and rate
 * limiting (so their refusals count too), and only when metrics are on: every `POST /v1/sessions` answer
 * (`avatar.session.creates`, by status and error code, with the provider type once the body validated), and
 * every 429 of the service's own limits (`avatar.rate_limit.refusals`, by code and route). Deno's own
 * metrics (`http.server.request.duration`, …) cover the rest of HTTP.
 *
 * @module
 */
import type { MiddlewareHandler } from "hono";
import type { AppEnv } from "../app_env.ts";
import { recordCreate, recordRateLimitRefusal } from "../../telemetry/metrics.ts";

/** The 429s that are the service's own limits (a vendor's quota is an engine failure instead). */
const LIMIT_CODES = new Set(["SVC_RATE_LIMIT_EXCEEDED", "SVC_RATE_LIMIT_CONCURRENT_SESSIONS"]);

/** The route template of a `/v1` path (ids replaced: low cardinality). */
export function routeOf(path: string): string {
  return path.replace(/^\/v1\/sessions\/[^/]+/, "/v1/sessions/{session_id}").replace(
    /^\/v1\/api-keys\/[^/]+/,
    "/v1/api-keys/{key_id}",
  );
}

/** The middleware. */
export function apiMetrics(): MiddlewareHandler<AppEnv> {
  return async function apiMetrics(c, next) {
    await next();
    const status = c.res.status;
    const code = c.get("errorCode");
    if (c.req.method === "POST" && c.req.path === "/v1/sessions") {
      recordCreate(status, status >= 400 ? code : undefined, c.get("providerType"));
    }
    if (status === 429 && code && LIMIT_CODES.has(code)) recordRateLimitRefusal(code, routeOf(c.req.path));
  };
}
