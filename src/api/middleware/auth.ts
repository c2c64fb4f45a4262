/**
 * API key authentication, per-key rate limiting and per-route scope checks.
 *
 * The key is read from `Authorization: Bearer <key>` or `x-api-key: <key>`. A malformed key (prefix,
 * length, checksum) is refused before any storage lookup; a well-formed one is looked up by its SHA-256,
 * from memory when this process has read it recently (see `src/kv/api_key_cache.ts`: a revocation
 * anywhere takes effect here within 0.5 s). The rate limiter runs in memory (see `src/kv/rate_limit.ts`).
 * In the common case neither touches KV.
 *
 * @module
 */
import type { MiddlewareHandler } from "hono";
import { ApiError } from "../../errors.ts";
import { hasApiKeyShape, hashApiKey, isWellFormedApiKey } from "../../auth/api_key_format.ts";
import type { Scope } from "../../auth/scopes.ts";
import { apiKeyCacheFor } from "../../kv/handle_state.ts";
import type { RateLimiter } from "../../kv/rate_limit.ts";
import type { AppEnv } from "../app_env.ts";

/** Extracts the presented key; `undefined` when none was sent, `null` when the header is unusable. */
export function presentedKey(header: (name: string) => string | undefined): string | null | undefined {
  const authorization = header("authorization");
  if (authorization !== undefined) {
    const m = /^Bearer[ \t]+(\S+)[ \t]*$/i.exec(authorization);
    return m ? m[1] : null;
  }
  // Read only when there is no Authorization header (each header read is a call into the runtime).
  const xApiKey = header("x-api-key");
  if (xApiKey !== undefined) return xApiKey.trim() || null;
  return undefined;
}

/**
 * Authenticates the request's API key and applies its rate limit (`limiter` null: no limit, and no
 * `X-RateLimit-*` headers).
 */
export function apiKeyAuth(
  deps: { kv: Deno.Kv; limiter: RateLimiter | null; burst: number },
): MiddlewareHandler<AppEnv> {
  const keys = apiKeyCacheFor(deps.kv);
  const { limiter } = deps;
  const limitHeader = String(deps.burst);
  return async function apiKeyAuth(c, next) {
    const key = presentedKey((name) => c.req.header(name));
    if (key === undefined) throw new ApiError("SVC_AUTH_MISSING_CREDENTIALS");
    if (key === null || !hasApiKeyShape(key)) throw new ApiError("SVC_AUTH_INVALID_KEY");
    const hash = hashApiKey(key);
    let index = keys.peek(hash);
    if (index === undefined) {
      // The checksum spares KV a lookup of a mistyped key (a key found in memory passed it when read).
      if (!isWellFormedApiKey(key)) throw new ApiError("SVC_AUTH_INVALID_KEY");
      index = await keys.lookup(hash);
    }
    if (!index || index.revoked_at !== null) throw new ApiError("SVC_AUTH_INVALID_KEY");
    c.set("caller", { projectId: index.project_id, keyId: index.key_id, scopes: index.scopes });

    if (!limiter) return await next();
    let decision = limiter.check(index.key_id);
    if (decision instanceof Promise) decision = await decision;
    const remaining = String(decision.remaining);
    if (!decision.allowed) {
      c.header("X-RateLimit-Limit", limitHeader);
      c.header("X-RateLimit-Remaining", remaining);
      throw new ApiError("SVC_RATE_LIMIT_EXCEEDED", undefined, { retryAfter: decision.retryAfterS });
    }
    await next();
    // Set on the answer once it is built (an error thrown further in has been made an answer by now):
    // headers prepared before the answer cost Deno a slower Response construction (~3-5 µs).
    c.res.headers.set("X-RateLimit-Limit", limitHeader);
    c.res.headers.set("X-RateLimit-Remaining", remaining);
  };
}

/** Requires the authenticated key to hold `scope`. */
export function requireScope(scope: Scope): MiddlewareHandler<AppEnv> {
  return async function requireScope(c, next) {
    const caller = c.get("caller");
    if (!caller) throw new ApiError("SVC_AUTH_MISSING_CREDENTIALS");
    if (!caller.scopes.includes(scope)) {
      throw new ApiError("SVC_AUTH_MISSING_SCOPE", `The API key lacks the scope ${scope}.`);
    }
    await next();
  };
}
