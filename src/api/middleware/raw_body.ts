/**
 * Keeps a request's body as bytes the route owns, for routes that take provider credentials: the body is
 * read once into an ArrayBuffer (JSON validation then parses a transient copy, and no string of the whole
 * body is cached on the request), exposed as `c.get("rawBody")`, and zeroed when the request is done.
 *
 * @module
 */
import type { MiddlewareHandler } from "hono";
import type { AppEnv } from "../app_env.ts";

/** The middleware (place it before the route's validators). */
export function rawBody(): MiddlewareHandler<AppEnv> {
  return async function rawBody(c, next) {
    const bytes = new Uint8Array(await c.req.arrayBuffer());
    c.set("rawBody", bytes);
    try {
      await next();
    } finally {
      bytes.fill(0);
    }
  };
}
