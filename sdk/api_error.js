// @ts-check
/**
 * The SDK's one error class and the functions that build it from an answer or a network failure.
 * Types and full documentation: `api_error.d.ts`.
 *
 * @module
 */

/** @import { ApiErrorInit, ApiErrorJson } from "./api_error.d.ts" */

/** The one error class of the SDK (see `api_error.d.ts`). */
export class ApiError extends Error {
  /**
   * Always "ApiError".
   * @override
   * @type {"ApiError"}
   */
  name = "ApiError";

  /**
   * Builds an error.
   * @param {ApiErrorInit} init
   */
  constructor(init) {
    super(init.message, init.cause === undefined ? undefined : { cause: init.cause });
    this.code = init.code;
    this.status = init.status;
    this.requestId = init.requestId ?? null;
    this.docUrl = init.docUrl ?? null;
    this.retryAfter = init.retryAfter ?? null;
    this.retryable = init.retryable ?? false;
  }

  /**
   * The API's field names.
   * @returns {ApiErrorJson}
   */
  toJSON() {
    return {
      code: this.code,
      message: this.message,
      status: this.status,
      request_id: this.requestId,
      doc_url: this.docUrl,
      retry_after: this.retryAfter,
    };
  }

  /**
   * Reads an error answer into an ApiError (consumes the body).
   * @param {Response} response
   * @returns {Promise<ApiError>}
   */
  static async fromResponse(response) {
    let text;
    try {
      text = await response.text();
    } catch (cause) {
      return invalidResponse(response, cause);
    }
    /** @type {unknown} */
    let body = text;
    try {
      body = JSON.parse(text);
    } catch {
      // not JSON: handled as an invalid answer below
    }
    return errorFromAnswer(response, body);
  }
}

/**
 * True when `body` is the service's flat error object.
 * @param {unknown} body
 * @returns {body is { code: string; message: string; request_id?: unknown; doc_url?: unknown; retry_after?: unknown }}
 */
function isErrorBody(body) {
  if (body === null || typeof body !== "object" || Array.isArray(body)) return false;
  const b = /** @type {Record<string, unknown>} */ (body);
  return typeof b.code === "string" && b.code.length > 0 && typeof b.message === "string";
}

/**
 * Builds the ApiError for an error answer whose body was already read.
 * @param {Response} response
 * @param {unknown} body
 * @returns {ApiError}
 */
export function errorFromAnswer(response, body) {
  const headerId = response.headers.get("x-request-id");
  const headerRetry = parseRetryAfter(response.headers.get("retry-after"));
  if (!isErrorBody(body)) {
    return new ApiError({
      code: "SDK_INVALID_RESPONSE",
      message: `The service answered HTTP ${response.status} without its error object.`,
      status: response.status,
      requestId: headerId,
      retryAfter: headerRetry,
    });
  }
  const retryAfter = typeof body.retry_after === "number" && Number.isFinite(body.retry_after)
    ? Math.max(0, body.retry_after)
    : null;
  return new ApiError({
    code: body.code,
    message: body.message,
    status: response.status,
    requestId: typeof body.request_id === "string" ? body.request_id : headerId,
    docUrl: typeof body.doc_url === "string" ? body.doc_url : null,
    retryAfter: retryAfter ?? headerRetry,
    retryable: retryAfter !== null,
  });
}

/**
 * Builds the SDK_NETWORK_ERROR for a request that got no answer.
 * @param {unknown} cause
 * @returns {ApiError}
 */
export function networkError(cause) {
  // Node's fetch says only "fetch failed"; the reason (e.g. ECONNREFUSED) is in its cause.
  /** @type {string[]} */
  const reasons = [];
  for (let e = cause, depth = 0; e instanceof Error && depth < 3; e = e.cause, depth++) {
    if (e.message && !reasons.includes(e.message)) reasons.push(e.message);
  }
  return new ApiError({
    code: "SDK_NETWORK_ERROR",
    message: `The service could not be reached${reasons.length ? `: ${reasons.join(": ")}` : "."}`,
    status: 0,
    cause,
  });
}

/**
 * Builds the SDK_INVALID_RESPONSE for an answer that could not be used.
 * @param {Response} response
 * @param {unknown} [cause]
 * @returns {ApiError}
 */
export function invalidResponse(response, cause) {
  return new ApiError({
    code: "SDK_INVALID_RESPONSE",
    message: `The service answered HTTP ${response.status} with a body that could not be used.`,
    status: response.status,
    requestId: response.headers.get("x-request-id"),
    retryAfter: parseRetryAfter(response.headers.get("retry-after")),
    cause,
  });
}

/**
 * Parses a Retry-After header into whole seconds.
 * @param {string | null} value
 * @param {number} [now]
 * @returns {number | null}
 */
export function parseRetryAfter(value, now = Date.now()) {
  if (value === null) return null;
  const trimmed = value.trim();
  if (/^\d+$/.test(trimmed)) return Number(trimmed);
  const date = Date.parse(trimmed);
  if (Number.isNaN(date)) return null;
  return Math.max(0, Math.ceil((date - now) / 1000));
}
