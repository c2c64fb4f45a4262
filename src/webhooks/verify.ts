/**
 * Webhook verification and signing primitives. The implementation lives in the SDK (`sdk/webhooks.js`),
 * which customers use to verify deliveries; the service signs with the very same functions.
 *
 * @module
 */
export {
  computeSignature,
  constantTimeEqual,
  decodeWebhookSecret,
  DEFAULT_TOLERANCE_S,
  type VerifiedWebhook,
  verifyWebhook,
  type VerifyWebhookOptions,
  WebhookVerificationError,
} from "../../sdk/webhooks.js";
