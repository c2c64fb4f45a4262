/**
 * `Cache-Control: no-store` on every answer of the routes it guards (all of `/v1/*` and the demo page's
 * backend): their answers carry tokens, API keys, secrets or per-project state that no cache may keep. One
 * middleware instead of a header per route, so a new route cannot forget it.
 *
 * @module
 */
import type { MiddlewareHandler } from "hono";
import type { AppEnv } from "../app_env.ts";

/** Marks every answer as not storable by any cache. */
export function noStore(): MiddlewareHandler<AppEnv> {
  return async function noStore(c, next) {
    await next();
    c.res.headers.set("Cache-Control", "no-store");
  };
}
