/**
 * The typed SDK of the conversational avatar session service.
 *
 * - {@link createClient}: a client with one method per endpoint, typed from `openapi.json`, with an opt-in
 *   retry policy and an injectable `fetch`. Works in Deno, Node 20+ (ESM) and browsers.
 * - {@link ApiError}: the one error class every failed call rejects with.
 * - The API's request and response types (`CreatedSession`, `Session`, …) and the generated `paths`,
 *   `components` and `operations` of `openapi.json`.
 *
 * The browser player (`./player`) is a separate entry point.
 *
 * @example A backend creates a session and hands the client token to its frontend
 * ```ts
 * import { ApiError, createClient } from "@avatar-svc/sdk";
 *
 * const svc = createClient({ baseUrl: "https://avatar.example.com", apiKey: "svc_sk_…", retry: true });
 * try {
 *   const s = await svc.createSession({
 *     provider_type: "external_engine",
 *     provider_config: { external_engine: { url: "wss://engine.example.com/v0", auth_headers: {} } },
 *   });
 *   console.log(s.session_id, s.client_token);
 * } catch (err) {
 *   if (err instanceof ApiError) console.error(err.code, err.requestId);
 * }
 * ```
 *
 * @module
 */
export { createClient } from "./client.d.ts";
export type {
  Client,
  ClientOptions,
  CreateSessionOptions,
  EndSessionOptions,
  ListApiKeysQuery,
  RequestOptions,
} from "./client.d.ts";
export { ApiError } from "./api_error.d.ts";
export type { ApiErrorInit, ApiErrorJson, ErrorCode, SdkErrorCode } from "./api_error.d.ts";
export { DEFAULT_RETRY } from "./retry.d.ts";
export type { RetryEvent, RetryOptions } from "./retry.d.ts";
export { isValidIdempotencyKey, newIdempotencyKey } from "./idempotency_key.d.ts";
export type * from "./types.d.ts";
export type { components, operations, paths } from "./schema.d.ts";
