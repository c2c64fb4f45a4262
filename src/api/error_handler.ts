/**
 * The one error path: `onError`, the validation hook and the not-found handler all produce the flat
 * error body with `X-Request-Id` (and `Retry-After` for retryable codes).
 *
 * @module
 */
import type { Context } from "hono";
import { HTTPException } from "hono/http-exception";
import type { Hook } from "@hono/zod-openapi";
import { ApiError, errorBody } from "../errors.ts";
import type { Logger } from "../log.ts";
import { containsProviderConnectionId } from "../providers/config_schema.ts";
import type { AppEnv } from "./env.ts";

interface Issue {
  code: string;
  path: PropertyKey[];
  message: string;
}

/** Formats zod issues without echoing any input value or unknown field name. */
export function formatIssues(issues: readonly Issue[], root: string): string {
  const parts = issues.slice(0, 5).map((i) => {
    const path = i.path.length ? i.path.map(String).join(".") : root;
    let msg = i.message;
    if (i.code === "unrecognized_keys") msg = "contains an unknown field";
    else if (i.code === "invalid_type" && /received undefined/.test(msg)) msg = "is required";
    return `${path}: ${msg}`;
  });
  if (issues.length > 5) parts.push(`(${issues.length - 5} more)`);
  return parts.join("; ");
}

/** Validation hook of every route: maps zod failures to the service's codes. */
export const validationHook: Hook<unknown, AppEnv, string, unknown> = (result, c) => {
  if (result.success) return;
  const issues = result.error.issues as unknown as Issue[];
  switch (result.target) {
    case "param":
      throw new ApiError(
        c.req.path.includes("/api-keys/") ? "SVC_API_KEY_NOT_FOUND" : "SVC_SESSION_NOT_FOUND",
      );
    case "json": {
      const data = (result as { data?: unknown }).data;
      if (containsProviderConnectionId(data)) {
        throw new ApiError(
          "SVC_PROVIDER_MISCONFIGURED",
          "provider_connection_id is not accepted: managed provider connections are not supported.",
        );
      }
      if (
        data === null || typeof data !== "object" || Array.isArray(data) || Object.keys(data).length === 0
      ) {
        throw new ApiError("SVC_INVALID_REQUEST", "body: a non-empty JSON object is required");
      }
      const provider = issues.some((i) => i.path[0] === "provider_type" || i.path[0] === "provider_config");
      throw new ApiError(
        provider ? "SVC_PROVIDER_MISCONFIGURED" : "SVC_INVALID_REQUEST",
        formatIssues(issues, "body"),
      );
    }
    default:
      throw new ApiError("SVC_INVALID_REQUEST", formatIssues(issues, result.target));
  }
};

/** Writes the error response for `err`. */
export function errorResponse(c: Context<AppEnv>, err: ApiError, docsUrl: string): Response {
  const requestId = c.get("requestId") ?? crypto.randomUUID();
  c.header("X-Request-Id", requestId);
  if (err.retryAfter !== undefined) c.header("Retry-After", String(err.retryAfter));
  c.header("Cache-Control", "no-store");
  return c.json(errorBody(err, requestId, docsUrl), err.status as 400);
}

/** Converts any thrown value to an {@link ApiError}, logging the unexpected ones. */
export function toApiError(err: unknown, logger: Logger, requestId: string | undefined): ApiError {
  if (err instanceof ApiError) {
    // Storage failures become a retryable 503; what failed is worth a line for the operator.
    if (err.code === "SVC_SESSION_STATE_UNAVAILABLE" && err.cause instanceof Error) {
      logger.warn("session state unavailable", {
        request_id: requestId,
        error: `${err.cause.name}: ${err.cause.message}`.slice(0, 300),
      });
    }
    return err;
  }
  if (err instanceof HTTPException) {
    if (err.status === 415) return new ApiError("SVC_UNSUPPORTED_MEDIA_TYPE");
    if (err.status === 413) return new ApiError("SVC_PAYLOAD_TOO_LARGE");
    if (err.status === 400) return new ApiError("SVC_INVALID_REQUEST", "The request body is not valid JSON.");
    if (err.status === 404) return new ApiError("SVC_ROUTE_NOT_FOUND");
  }
  logger.error("unexpected error", {
    request_id: requestId,
    error: err instanceof Error ? `${err.name}: ${err.message}`.slice(0, 500) : "non-error thrown",
  });
  return new ApiError("SVC_INTERNAL_ERROR");
}
