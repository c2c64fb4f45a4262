/**
 * API key authentication, per-key rate limiting and per-route scope checks.
 *
 * The key is read from `Authorization: Bearer <key>` or `x-api-key: <key>`. A malformed key (prefix,
 * length, checksum) is refused before any storage lookup; a well-formed one is looked up by its SHA-256.
 *
 * @module
 */
import type { MiddlewareHandler } from "hono";
import type { Clock } from "../../clock.ts";
import { ApiError } from "../../errors.ts";
import { hashApiKey, isWellFormedApiKey } from "../../auth/api_key_format.ts";
import type { Scope } from "../../auth/scopes.ts";
import { findApiKeyByHash } from "../../kv/api_keys.ts";
import { checkRateLimit, type RateLimitPolicy } from "../../kv/rate_limit.ts";
import type { AppEnv } from "../env.ts";

/** Extracts the presented key; `undefined` when none was sent, `null` when the header is unusable. */
export function presentedKey(
  authorization: string | undefined,
  xApiKey: string | undefined,
): string | null | undefined {
  if (authorization !== undefined) {
    const m = /^Bearer[ \t]+(\S+)[ \t]*$/i.exec(authorization);
    return m ? m[1] : null;
  }
  if (xApiKey !== undefined) return xApiKey.trim() || null;
  return undefined;
}

/** Authenticates the request's API key and applies its rate limit. */
export function apiKeyAuth(
  deps: { kv: Deno.Kv; clock: Clock; rateLimit: RateLimitPolicy },
): MiddlewareHandler<AppEnv> {
  return async function apiKeyAuth(c, next) {
    const key = presentedKey(c.req.header("authorization"), c.req.header("x-api-key"));
    if (key === undefined) throw new ApiError("SVC_AUTH_MISSING_CREDENTIALS");
    if (key === null || !isWellFormedApiKey(key)) throw new ApiError("SVC_AUTH_INVALID_KEY");
    const index = await findApiKeyByHash(deps.kv, await hashApiKey(key));
    if (!index || index.revoked_at !== null) throw new ApiError("SVC_AUTH_INVALID_KEY");
    c.set("caller", { projectId: index.project_id, keyId: index.key_id, scopes: index.scopes });

    const decision = await checkRateLimit(
      deps.kv,
      index.project_id,
      index.key_id,
      deps.rateLimit,
      deps.clock.now(),
    );
    c.header("X-RateLimit-Limit", String(deps.rateLimit.burst));
    c.header("X-RateLimit-Remaining", String(decision.remaining));
    if (!decision.allowed) {
      throw new ApiError("SVC_RATE_LIMIT_EXCEEDED", undefined, { retryAfter: decision.retryAfterS });
    }
    await next();
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
