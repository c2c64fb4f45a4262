/**
 * Per-request context: a fresh UUID request id (echoed in `X-Request-Id` and in every error body) and
 * one access-log line per request (method, route, status, duration; never headers or bodies). The line is
 * a flat object (no spreads); the default log sink writes the lines of one event-loop turn together.
 *
 * @module
 */
import type { MiddlewareHandler } from "hono";
import type { Logger } from "../../log.ts";
import type { AppEnv } from "../env.ts";

/** Assigns the request id and logs the request when it completes. */
export function requestContext(logger: Logger): MiddlewareHandler<AppEnv> {
  return async function requestContext(c, next) {
    const id = crypto.randomUUID();
    c.set("requestId", id);
    const started = performance.now();
    await next();
    c.res.headers.set("X-Request-Id", id);
    const caller = c.get("caller");
    logger.info("request", {
      request_id: id,
      method: c.req.method,
      path: c.req.routePath ?? "",
      status: c.res.status,
      ms: Math.round(performance.now() - started),
      // undefined fields are left out of the line
      project_id: caller?.projectId,
      key_id: caller?.keyId,
    });
  };
}
