// @ts-check
// @ts-self-types="./mod.d.ts"
/**
 * The typed SDK of the conversational avatar session service. Documentation: `mod.d.ts` and README.md.
 *
 * @module
 */
export { createClient } from "./client.js";
export { ApiError } from "./api_error.js";
export { DEFAULT_RETRY } from "./retry.js";
export { isValidIdempotencyKey, newIdempotencyKey } from "./idempotency_key.js";
export { verifyWebhook, WebhookVerificationError } from "./webhooks.js";
