/**
 * Helpers for route definitions: the security requirement and documented error responses.
 *
 * @module
 */
import { ERROR_CATALOG, type ErrorCode } from "../errors.ts";
import { ErrorBody } from "./schemas.ts";

/** Either auth header (OR). The cast is required by the typing of createRoute. */
export const API_KEY_SECURITY = [{ Bearer: [] }, { ApiKey: [] }] as Array<Record<string, string[]>>;

const requestIdHeader = {
  "X-Request-Id": {
    description: "UUID of this request; equals request_id in error bodies.",
    schema: { type: "string" as const, format: "uuid" },
  },
  "Cache-Control": {
    description: "Always `no-store` on /v1 answers: they may carry tokens, keys or secrets.",
    schema: { type: "string" as const, enum: ["no-store"] },
  },
};

/** Documents the given error codes, grouped by their status. */
export function errorResponses(codes: ErrorCode[]) {
  const byStatus = new Map<number, ErrorCode[]>();
  for (const code of codes) {
    const status = ERROR_CATALOG[code].status;
    byStatus.set(status, [...(byStatus.get(status) ?? []), code]);
  }
  const out: Record<number, {
    description: string;
    headers: Record<string, unknown>;
    content: { "application/json": { schema: typeof ErrorBody } };
  }> = {};
  for (const [status, list] of byStatus) {
    const retryable = list.some((c) => ERROR_CATALOG[c].retryable);
    out[status] = {
      description: list.join(", "),
      headers: {
        ...requestIdHeader,
        ...(retryable
          ? {
            "Retry-After": {
              description: "Seconds; present for retryable codes.",
              schema: { type: "integer" },
            },
          }
          : {}),
      },
      content: { "application/json": { schema: ErrorBody } },
    };
  }
  return out;
}

/** Codes every authenticated `/v1` route can answer. */
export const COMMON_ERRORS: ErrorCode[] = [
  "SVC_AUTH_MISSING_CREDENTIALS",
  "SVC_AUTH_INVALID_KEY",
  "SVC_AUTH_MISSING_SCOPE",
  "SVC_RATE_LIMIT_EXCEEDED",
  "SVC_INTERNAL_ERROR",
  "SVC_SESSION_STATE_UNAVAILABLE",
];

/** Documents a JSON success response (with the headers every /v1 answer carries, plus `headers`). */
export function jsonResponse<S>(schema: S, description: string, headers: Record<string, unknown> = {}) {
  return {
    description,
    headers: { ...requestIdHeader, ...headers },
    content: { "application/json": { schema } },
  };
}
