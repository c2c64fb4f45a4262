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
// Values are re-declared with `typeof` over type-only imports: TypeScript does not allow a value
// re-export from a `.d.ts` path, and Deno needs these paths (it does not map `./x.js` to `./x.d.ts`).
import type * as ClientModule from "./client.d.ts";
import type * as ErrorModule from "./api_error.d.ts";
import type * as RetryModule from "./retry.d.ts";
import type * as KeyModule from "./idempotency_key.d.ts";
import type * as WebhooksModule from "./webhooks.d.ts";

/**
 * Creates a client: `createClient({ baseUrl, apiKey, fetch?, retry? })`. Every method resolves with the
 * answer's typed body or rejects with an {@link ApiError}. See `client.d.ts` for every method.
 */
export declare const createClient: typeof ClientModule.createClient;
/**
 * The one error class: `code`, `message`, `status`, `requestId`, `docUrl`, `retryAfter`, `retryable`.
 * See `api_error.d.ts`.
 */
export declare const ApiError: typeof ErrorModule.ApiError;
/** An {@link ApiError} instance. */
export type ApiError = ErrorModule.ApiError;
/** The retry policy's default settings (`retry: true`). See `retry.d.ts` for what is retried. */
export declare const DEFAULT_RETRY: typeof RetryModule.DEFAULT_RETRY;
/** A fresh Idempotency-Key (a random UUID v4) for `createSession`. */
export declare const newIdempotencyKey: typeof KeyModule.newIdempotencyKey;
/** Whether a string is a valid Idempotency-Key (1..255 printable ASCII characters). */
export declare const isValidIdempotencyKey: typeof KeyModule.isValidIdempotencyKey;
/**
 * Verifies a lifecycle webhook delivery (Standard Webhooks `v1` signature, timestamp tolerance). Also
 * available alone as `@avatar-svc/sdk/webhooks`. See `webhooks.d.ts`.
 */
export declare const verifyWebhook: typeof WebhooksModule.verifyWebhook;
/** Why a webhook did not verify. */
export declare const WebhookVerificationError: typeof WebhooksModule.WebhookVerificationError;
/** A {@link WebhookVerificationError} instance. */
export type WebhookVerificationError = WebhooksModule.WebhookVerificationError;

export type {
  Client,
  ClientOptions,
  CreateSessionOptions,
  EndSessionOptions,
  ListApiKeysQuery,
  RequestOptions,
} from "./client.d.ts";
export type { ListSessionsQuery, SessionPages } from "./session_pages.d.ts";
export type { ApiErrorInit, ApiErrorJson, ErrorCode, SdkErrorCode } from "./api_error.d.ts";
export type { RetryEvent, RetryOptions, RetryPolicy, RetryTarget } from "./retry.d.ts";
export type { VerifiedWebhook, VerifyWebhookOptions } from "./webhooks.d.ts";
export type * from "./types.d.ts";
export type { components, operations, paths } from "./schema.d.ts";
