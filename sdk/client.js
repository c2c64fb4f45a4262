// @ts-check
/**
 * The client: one method per endpoint, on top of openapi-fetch. Documentation: `client.d.ts`.
 *
 * @module
 */
import createFetchClient from "openapi-fetch";
import { errorFromAnswer, invalidResponse, networkError } from "./api_error.js";
import { isValidIdempotencyKey, newIdempotencyKey } from "./idempotency_key.js";
import { resolveRetryPolicy, withRetry } from "./retry.js";
import { sessionPages } from "./session_pages.js";

/** @import { Client, ClientOptions, RequestOptions } from "./client.d.ts" */
/** @import { paths } from "./schema.d.ts" */
/** @import { RetryTarget } from "./retry.d.ts" */

/**
 * What one attempt passes to openapi-fetch: the tracking fetch and the caller's signal.
 * @typedef {{ fetch: (request: Request) => Promise<Response>; signal?: AbortSignal }} AttemptInit
 */

/**
 * Checks the options of createClient.
 * @param {ClientOptions} options
 * @returns {string} the base URL without trailing slashes
 */
function checkOptions(options) {
  if (options === null || typeof options !== "object") throw new TypeError("options must be an object");
  let url;
  try {
    url = new URL(options.baseUrl);
  } catch {
    throw new TypeError("baseUrl must be an absolute http(s) URL");
  }
  if (!/^https?:$/.test(url.protocol) || url.username || url.password || url.search || url.hash) {
    throw new TypeError("baseUrl must be an http(s) URL without credentials, query or fragment");
  }
  // The key is never echoed in messages.
  if (typeof options.apiKey !== "string" || !/^[\x21-\x7e]+$/.test(options.apiKey)) {
    throw new TypeError("apiKey must be a non-empty string of printable ASCII characters");
  }
  if (options.fetch !== undefined && typeof options.fetch !== "function") {
    throw new TypeError("fetch must be a function");
  }
  return options.baseUrl.replace(/\/+$/, "");
}

/**
 * Checks a path parameter.
 * @param {string} name
 * @param {unknown} value
 * @returns {string}
 */
function pathParam(name, value) {
  if (typeof value !== "string" || value.length === 0) {
    throw new TypeError(`${name} must be a non-empty string`);
  }
  return value;
}

/**
 * Creates a client.
 * @param {ClientOptions} options
 * @returns {Client}
 */
export function createClient(options) {
  const baseUrl = checkOptions(options);
  /** @type {(request: Request) => Promise<Response>} */
  const fetchImpl = options.fetch ?? ((request) => globalThis.fetch(request));
  const clientPolicy = resolveRetryPolicy(options.retry);
  /** @type {import("openapi-fetch").Client<paths, "application/json">} */
  const raw = createFetchClient({
    baseUrl,
    headers: { Authorization: `Bearer ${options.apiKey}` },
    fetch: (request) => fetchImpl(request),
  });

  /**
   * One attempt: sends through a fetch that records whether an answer arrived, and turns every failure
   * into an ApiError.
   * @template T
   * @param {(init: AttemptInit) => Promise<{ data?: T; error?: unknown; response: Response }>} send
   * @param {AbortSignal | undefined} signal
   * @param {"json" | "empty" | "bytes"} [expect] What a success carries: a JSON object (default), nothing
   *   (204) or bytes (a PNG).
   * @returns {Promise<T>}
   */
  async function attempt(send, signal, expect = "json") {
    /** @type {Response | null} */
    let answer = null;
    /** @type {(request: Request) => Promise<Response>} */
    const tracking = async (request) => (answer = await fetchImpl(request));
    /** @type {{ data?: T; error?: unknown; response: Response }} */
    let result;
    try {
      result = await send({ fetch: tracking, signal });
    } catch (err) {
      if (signal?.aborted) throw signal.reason;
      throw answer ? invalidResponse(answer, err) : networkError(err);
    }
    const { data, error, response } = result;
    if (!response.ok) throw errorFromAnswer(response, error);
    if (expect === "empty") return /** @type {T} */ (/** @type {unknown} */ (undefined));
    if (expect === "bytes") {
      if (!(data instanceof ArrayBuffer)) throw invalidResponse(response);
      return /** @type {T} */ (/** @type {unknown} */ (new Uint8Array(data)));
    }
    if (data === null || typeof data !== "object" || Array.isArray(data)) throw invalidResponse(response);
    return data;
  }

  /**
   * Runs an operation under the retry policy.
   * @template T
   * @param {RetryTarget} target
   * @param {RequestOptions | undefined} options
   * @param {(init: AttemptInit) => Promise<{ data?: T; error?: unknown; response: Response }>} send
   * @param {"json" | "empty" | "bytes"} [expect]
   * @returns {Promise<T>}
   */
  async function call(target, options, send, expect = "json") {
    const policy = options?.retry === undefined ? clientPolicy : resolveRetryPolicy(options.retry);
    const signal = options?.signal;
    if (signal?.aborted) throw signal.reason;
    return await withRetry(policy, target, () => attempt(send, signal, expect), signal);
  }

  return {
    raw,
    async createApiKey(body, options) {
      return await call(
        { operation: "createApiKey", safe: false },
        options,
        (init) => raw.POST("/v1/api-keys", { ...init, body }),
      );
    },
    async revokeApiKey(keyId, options) {
      const key_id = pathParam("keyId", keyId);
      return await call(
        { operation: "revokeApiKey", safe: true },
        options,
        (init) => raw.DELETE("/v1/api-keys/{key_id}", { ...init, params: { path: { key_id } } }),
      );
    },
    async listApiKeys(query = {}, options) {
      return await call(
        { operation: "listApiKeys", safe: true },
        options,
        (init) => raw.GET("/v1/api-keys", { ...init, params: { query } }),
      );
    },
    async createSession(body, options) {
      const key = options?.idempotencyKey ?? newIdempotencyKey();
      if (!isValidIdempotencyKey(key)) {
        throw new TypeError("idempotencyKey must be 1..255 printable ASCII characters");
      }
      return await call(
        { operation: "createSession", safe: true },
        options,
        (init) => raw.POST("/v1/sessions", { ...init, params: { header: { "Idempotency-Key": key } }, body }),
      );
    },
    listSessions(query = {}, options) {
      return sessionPages(
        (q) =>
          call(
            { operation: "listSessions", safe: true },
            options,
            (init) => raw.GET("/v1/sessions", { ...init, params: { query: q } }),
          ),
        query,
      );
    },
    async getSession(sessionId, options) {
      const session_id = pathParam("sessionId", sessionId);
      return await call(
        { operation: "getSession", safe: true },
        options,
        (init) => raw.GET("/v1/sessions/{session_id}", { ...init, params: { path: { session_id } } }),
      );
    },
    async getSessionMetrics(sessionId, options) {
      const session_id = pathParam("sessionId", sessionId);
      return await call(
        { operation: "getSessionMetrics", safe: true },
        options,
        (init) => raw.GET("/v1/sessions/{session_id}/metrics", { ...init, params: { path: { session_id } } }),
      );
    },
    async endSession(sessionId, options) {
      const session_id = pathParam("sessionId", sessionId);
      const query = options?.force ? { force: /** @type {const} */ ("true") } : {};
      return await call(
        { operation: "endSession", safe: false },
        options,
        (init) =>
          raw.POST("/v1/sessions/{session_id}/end", { ...init, params: { path: { session_id }, query } }),
      );
    },
    async createClientToken(sessionId, options) {
      const session_id = pathParam("sessionId", sessionId);
      return await call(
        { operation: "createClientToken", safe: true },
        options,
        (init) =>
          raw.POST("/v1/sessions/{session_id}/client-token", { ...init, params: { path: { session_id } } }),
      );
    },
    async getWebhookSecret(options) {
      return await call(
        { operation: "getWebhookSecret", safe: true },
        options,
        (init) => raw.GET("/v1/webhooks/secret", init),
      );
    },
    async rotateWebhookSecret(options) {
      return await call(
        { operation: "rotateWebhookSecret", safe: false },
        options,
        (init) => raw.POST("/v1/webhooks/secret/rotate", init),
      );
    },
    async createAvatar(body, options) {
      return await call(
        { operation: "createAvatar", safe: false },
        options,
        (init) => raw.POST("/v1/avatars", { ...init, body }),
      );
    },
    async listAvatars(query = {}, options) {
      return await call(
        { operation: "listAvatars", safe: true },
        options,
        (init) => raw.GET("/v1/avatars", { ...init, params: { query } }),
      );
    },
    async getAvatar(avatarId, options) {
      const avatar_id = pathParam("avatarId", avatarId);
      return await call(
        { operation: "getAvatar", safe: true },
        options,
        (init) => raw.GET("/v1/avatars/{avatar_id}", { ...init, params: { path: { avatar_id } } }),
      );
    },
    async deleteAvatar(avatarId, options) {
      const avatar_id = pathParam("avatarId", avatarId);
      return await call(
        { operation: "deleteAvatar", safe: true },
        options,
        (init) => raw.DELETE("/v1/avatars/{avatar_id}", { ...init, params: { path: { avatar_id } } }),
        "empty",
      );
    },
    async previewAvatar(avatarId, query = {}, options) {
      const avatar_id = pathParam("avatarId", avatarId);
      // The bytes arrive as an ArrayBuffer; `attempt` ("bytes") hands them over as a Uint8Array.
      return /** @type {Uint8Array} */ (/** @type {unknown} */ (await call(
        { operation: "previewAvatar", safe: true },
        options,
        (init) =>
          raw.GET("/v1/avatars/{avatar_id}/preview.png", {
            ...init,
            params: { path: { avatar_id }, query },
            parseAs: "arrayBuffer",
          }),
        "bytes",
      )));
    },
  };
}
