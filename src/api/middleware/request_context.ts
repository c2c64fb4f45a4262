/**
 * Per-request context: a fresh UUID request id (echoed in `X-Request-Id` and in every error body), and
 * the access log.
 *
 * The access log never holds headers or bodies. It is built so that a request that went well costs
 * nothing to log at the default level:
 *
 * - at `info`, one **summary line** per window of {@link ACCESS_SUMMARY_MS} (10 s) in which requests were
 *   served: `{"msg":"requests","window_s":…,"count":…,"2xx":…,"3xx":…,"4xx":…,"5xx":…,"mean_ms":…,
 *   "max_ms":…}`, written by the first request after the window (an idle service writes none);
 * - one line per request that failed on the server (status ≥ 500, at `warn`) or took
 *   {@link SLOW_REQUEST_MS} (1 s) or more (at `info`): `{"msg":"request","request_id","method","path",
 *   "status","ms","project_id","key_id"}`;
 * - at `debug` (`SVC_LOG_LEVEL=debug`), that line for every request.
 *
 * Building and writing a line per request cost ~4.6 µs of a ~44 µs authenticated GET here
 * (`deno task bench:api`), so per-request lines are opt-in.
 *
 * @module
 */
import type { MiddlewareHandler } from "hono";
import type { Logger } from "../../log.ts";
import type { AppEnv } from "../app_env.ts";

/** Length of an access-summary window, ms. */
export const ACCESS_SUMMARY_MS = 10_000;
/** A request taking this long or longer (ms) is logged on its own at `info`. */
export const SLOW_REQUEST_MS = 1_000;

/** Options of {@link requestContext} (tests shorten the window; the clock is monotonic ms). */
export interface RequestContextOptions {
  summaryMs?: number;
  now?: () => number;
}

/** Assigns the request id and keeps the access log. */
export function requestContext(
  logger: Logger,
  options: RequestContextOptions = {},
): MiddlewareHandler<AppEnv> {
  const summaryMs = options.summaryMs ?? ACCESS_SUMMARY_MS;
  const now = options.now ?? (() => performance.now());
  // The window under way: counts by status class (index status/100), summed and largest duration.
  let windowStart = -1;
  let count = 0;
  let totalMs = 0;
  let maxMs = 0;
  const classes = [0, 0, 0, 0, 0, 0];
  const summarise = (at: number) => {
    if (count > 0) {
      logger.info("requests", {
        window_s: Math.round((at - windowStart) / 100) / 10,
        count,
        "2xx": classes[2],
        "3xx": classes[3],
        "4xx": classes[4],
        "5xx": classes[5],
        mean_ms: Math.round((totalMs / count) * 100) / 100,
        max_ms: Math.round(maxMs),
      });
    }
    windowStart = at;
    count = 0;
    totalMs = 0;
    maxMs = 0;
    classes.fill(0);
  };
  return async function requestContext(c, next) {
    const id = crypto.randomUUID();
    c.set("requestId", id);
    const started = now();
    if (windowStart < 0) windowStart = started;
    else if (started - windowStart >= summaryMs) summarise(started);
    await next();
    c.res.headers.set("X-Request-Id", id);
    const status = c.res.status;
    const ms = now() - started;
    count++;
    totalMs += ms;
    if (ms > maxMs) maxMs = ms;
    classes[Math.min(5, Math.max(0, Math.floor(status / 100)))]++;
    const level = status >= 500 ? "warn" : ms >= SLOW_REQUEST_MS ? "info" : "debug";
    if (!logger.enabled(level)) return;
    const caller = c.get("caller");
    logger[level]("request", {
      request_id: id,
      method: c.req.method,
      path: c.req.routePath ?? "",
      status,
      ms: Math.round(ms),
      // undefined fields are left out of the line
      project_id: caller?.projectId,
      key_id: caller?.keyId,
    });
  };
}
