/**
 * The SDK's one error class, {@link ApiError}: every failure of an API call (an error answer of the
 * service, a network failure, an answer that is not what the API promises) rejects with it.
 *
 * @module
 */
import type { ServiceErrorCode } from "./types.d.ts";

/**
 * Codes the SDK produces itself, when there is no error body of the service to read:
 *
 * - `SDK_NETWORK_ERROR`: no answer arrived (connection refused or reset, DNS or TLS failure, the
 *   connection dropped before the response headers). `status` is `0`. The request may or may not have
 *   reached the service.
 * - `SDK_INVALID_RESPONSE`: an answer arrived but is not what the API promises: an error status whose
 *   body is not the service's error object (for example an HTML page from a proxy), a success whose body
 *   is not a JSON object, or a body that could not be read. `status` is the HTTP status.
 */
export type SdkErrorCode = "SDK_NETWORK_ERROR" | "SDK_INVALID_RESPONSE";

/** Every code an {@link ApiError} can carry. */
export type ErrorCode = ServiceErrorCode | SdkErrorCode;

/** What {@link ApiError} is built from. */
export interface ApiErrorInit {
  /** Machine-readable code. A newer service may answer a code this SDK version does not list. */
  code: ErrorCode | (string & Record<never, never>);
  /** Human-readable message (the service's messages never contain credentials). */
  message: string;
  /** HTTP status, or `0` when no answer arrived. */
  status: number;
  /** The request's id (`request_id`, equal to the `X-Request-Id` header), when known. */
  requestId?: string | null;
  /** The code's entry in the error reference, when known. */
  docUrl?: string | null;
  /** Seconds to wait before retrying, when the answer said so. */
  retryAfter?: number | null;
  /** Whether the service marked the error retryable (its body carried `retry_after`). */
  retryable?: boolean;
  /** The underlying error (network failures, unreadable bodies). */
  cause?: unknown;
}

/** The plain-object form of an {@link ApiError} (`JSON.stringify(error)`), in the API's field names. */
export interface ApiErrorJson {
  /** {@link ApiError.code}. */
  code: string;
  /** {@link ApiError.message}. */
  message: string;
  /** {@link ApiError.status}. */
  status: number;
  /** {@link ApiError.requestId}. */
  request_id: string | null;
  /** {@link ApiError.docUrl}. */
  doc_url: string | null;
  /** {@link ApiError.retryAfter}. */
  retry_after: number | null;
}

/**
 * The one error class of the SDK.
 *
 * @example Handling a failure
 * ```ts
 * import { ApiError } from "@avatar-svc/sdk";
 *
 * function report(err: unknown): string {
 *   if (err instanceof ApiError) return `${err.code} (${err.status}) request ${err.requestId}`;
 *   throw err;
 * }
 * ```
 */
export declare class ApiError extends Error {
  /** Builds an error; the client does this for you. */
  constructor(init: ApiErrorInit);
  /** Always `"ApiError"`. */
  override readonly name: "ApiError";
  /** Machine-readable code: a service code (`SVC_…`) or an {@link SdkErrorCode}. */
  readonly code: ErrorCode | (string & Record<never, never>);
  /** HTTP status, or `0` when no answer arrived (`SDK_NETWORK_ERROR`). */
  readonly status: number;
  /** The request's id (body `request_id`, else the `X-Request-Id` header), or `null`. */
  readonly requestId: string | null;
  /** The code's entry in the error reference (body `doc_url`), or `null`. */
  readonly docUrl: string | null;
  /** Seconds to wait before retrying (body `retry_after`, else the `Retry-After` header), or `null`. */
  readonly retryAfter: number | null;
  /**
   * `true` when the service marked the error retryable (its body carried `retry_after`): repeating the
   * same request after `retryAfter` seconds may succeed. Always `false` for {@link SdkErrorCode}s, whose
   * outcome is unknown.
   */
  readonly retryable: boolean;
  /** The API's field names: `{code, message, status, request_id, doc_url, retry_after}`. */
  toJSON(): ApiErrorJson;
  /**
   * Reads an error answer of the service (for example one your backend relayed unchanged to a browser)
   * into an {@link ApiError}. Consumes the response body. A body that is not the service's error object
   * gives `SDK_INVALID_RESPONSE`.
   */
  static fromResponse(response: Response): Promise<ApiError>;
}

/**
 * Builds the {@link ApiError} for an error answer whose body was already read: `body` is the parsed
 * JSON (or the raw text when it was not JSON). Used by the client; exported for custom transports.
 */
export declare function errorFromAnswer(response: Response, body: unknown): ApiError;

/** Builds the `SDK_NETWORK_ERROR` for a request that got no answer; `cause` is what `fetch` threw. */
export declare function networkError(cause: unknown): ApiError;

/**
 * Builds the `SDK_INVALID_RESPONSE` for an answer that arrived but could not be used (a success whose
 * body is not a JSON object, or a body that could not be read: `cause`).
 */
export declare function invalidResponse(response: Response, cause?: unknown): ApiError;

/**
 * Parses a `Retry-After` header (delta-seconds or an HTTP date) into whole seconds (at least 0), or
 * `null` when absent or unreadable. `now` is the current time in ms (default `Date.now()`).
 */
export declare function parseRetryAfter(value: string | null, now?: number): number | null;
