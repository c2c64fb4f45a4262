/**
 * Ends the client's connection after a request whose body carries provider credentials (`POST
 * /v1/sessions`, and the internal start call between API and worker), whatever its answer: the answer says
 * `Connection: close`, so the HTTP server lets go of the connection's read buffer — which holds the raw
 * request, credentials included — instead of keeping it for the next request. With glibc's free-time
 * scrubbing on (docs/api.md "Provider credentials in memory"), that buffer is then wiped at once. The
 * request's first bytes also stay in buffers on the event loop thread's stack: `afterward` (the composition
 * root's `StackScrub`) overwrites them once the answer is made.
 *
 * @module
 */
import type { MiddlewareHandler } from "hono";
import type { AppEnv } from "../app_env.ts";

/** The middleware, for the paths whose POSTs carry credentials. */
export function closeAfterCredentials(
  o: { afterward?: () => Promise<void> } = {},
): MiddlewareHandler<AppEnv> {
  return async function closeAfterCredentials(c, next) {
    try {
      await next();
      if (c.req.method === "POST") c.res.headers.set("Connection", "close");
    } finally {
      if (c.req.method === "POST") o.afterward?.().catch(() => {});
    }
  };
}
