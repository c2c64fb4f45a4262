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
import { containsProviderConnectionId } from "../providers/definitions/config_schema.ts";
import { PROVIDER_TYPES } from "../providers/definitions/provider_types.ts";
import type { AppEnv } from "./app_env.ts";

interface Issue {
  code: string;
  path: PropertyKey[];
  message: string;
}

/** Matches any provider type value (messages name fields, never a provider type). */
const PROVIDER_TYPE_VALUE = new RegExp(`\\b(${PROVIDER_TYPES.join("|")})\\b`);

/** Fields whose keys are caller data (header names may hold a misplaced secret): paths stop there. */
const RECORD_FIELDS = new Set<PropertyKey>(["auth_headers"]);

/**
 * The path of an issue. The provider key inside `provider_config` is shown as `<provider>` (never a
 * provider type value), and nothing below a record field (a header name) is shown.
 */
function issuePath(path: readonly PropertyKey[], root: string): string {
  if (path.length === 0) return root;
  const end = path.findIndex((p) => RECORD_FIELDS.has(p));
  const shown = end === -1 ? path : path.slice(0, end + 1);
  return shown.map((p, i) => i === 1 && path[0] === "provider_config" ? "<provider>" : String(p)).join(".");
}

/** The message of one issue, without echoing any input value, unknown field name or provider type. */
function issueMessage(issue: Issue): string {
  if (issue.code === "unrecognized_keys") return "contains an unknown field";
  if (issue.code === "invalid_type" && /received undefined/.test(issue.message)) return "is required";
  if (issue.path[0] === "provider_type") {
    return "must be one of the provider types listed in the API reference (ProviderType)";
  }
  // Last line of defence: a message that would quote a provider type value is replaced.
  return PROVIDER_TYPE_VALUE.test(issue.message) ? "is invalid" : issue.message;
}

/** Formats zod issues without echoing any input value, unknown field name or provider type value. */
export function formatIssues(issues: readonly Issue[], root: string): string {
  const parts = issues.slice(0, 5).map((i) => `${issuePath(i.path, root)}: ${issueMessage(i)}`);
  if (issues.length > 5) parts.push(`(${issues.length - 5} more)`);
  return parts.join("; ");
}

/**
 * Refuses a body holding `provider_connection_id` at any depth (400 `SVC_PROVIDER_MISCONFIGURED`): managed
 * provider connections are not supported. Checked on every body that fails validation and on the create
 * body that passes it (the key may hide where validation cannot see it, e.g. a header name).
 */
export function refuseProviderConnectionId(body: unknown): void {
  if (containsProviderConnectionId(body)) {
    throw new ApiError(
      "SVC_PROVIDER_MISCONFIGURED",
      "provider_connection_id is not accepted: managed provider connections are not supported.",
    );
  }
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
      refuseProviderConnectionId(data);
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
  c.set("errorCode", err.code);
  // Headers are set on the built response: a Response constructed with more than one header costs Deno
  // ~3 µs more than one built with its content type alone and given the others afterwards.
  const res = c.json(errorBody(err, requestId, docsUrl), err.status as 400);
  res.headers.set("X-Request-Id", requestId);
  if (err.retryAfter !== undefined) res.headers.set("Retry-After", String(err.retryAfter));
  res.headers.set("Cache-Control", "no-store");
  return res;
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
