/**
 * Verifies the service's lifecycle webhooks: the Standard Webhooks symmetric scheme (`webhook-id`,
 * `webhook-timestamp`, `webhook-signature: v1,<base64 HMAC-SHA256 of "id.timestamp.body">`), with a timestamp
 * tolerance and a constant-time signature comparison. WebCrypto only: works in Deno, Node 20+ and browsers.
 *
 * @example A receiver
 * ```ts
 * import { verifyWebhook, WebhookVerificationError } from "@avatar-svc/sdk/webhooks";
 *
 * Deno.serve(async (req) => {
 *   const body = await req.text(); // the raw body, exactly as received
 *   try {
 *     const { id } = await verifyWebhook({ secret: "whsec_…", headers: req.headers, body });
 *     // deliveries are at least once: drop repeats of `id`, then handle JSON.parse(body)
 *     return new Response(null, { status: 204 });
 *   } catch (err) {
 *     if (err instanceof WebhookVerificationError) return new Response(null, { status: 400 });
 *     throw err;
 *   }
 * });
 * ```
 *
 * @module
 */

/** Default tolerance between `webhook-timestamp` and now: 5 minutes, either way. */
export declare const DEFAULT_TOLERANCE_S: 300;

/** Why a webhook did not verify. The message never contains the secret. */
export declare class WebhookVerificationError extends Error {
  /** Creates the error; `message` says what failed and never contains the secret. */
  constructor(message: string);
}

/** What {@link verifyWebhook} needs. */
export interface VerifyWebhookOptions {
  /** The project's signing secret (`whsec_…`), or several (e.g. during a rotation): any one may match. */
  secret: string | readonly string[];
  /** The request headers (`webhook-id`, `webhook-timestamp`, `webhook-signature`). */
  headers: Headers | Record<string, string | undefined>;
  /** The raw request body, exactly as received (do not re-serialise parsed JSON). */
  body: string | Uint8Array;
  /** Accepted distance between the timestamp and now, seconds (default 300). */
  toleranceS?: number;
  /** Now, Unix epoch milliseconds (default: the wall clock). */
  now?: number;
}

/** A verified delivery. */
export interface VerifiedWebhook {
  /** `webhook-id`: the event id, stable across retries (use it to drop repeats). */
  id: string;
  /** `webhook-timestamp`, Unix seconds. */
  timestamp: number;
}

/**
 * Verifies a delivery; resolves with its id and timestamp, or rejects with a
 * {@link WebhookVerificationError} (missing headers, timestamp out of tolerance, no matching signature).
 */
export declare function verifyWebhook(options: VerifyWebhookOptions): Promise<VerifiedWebhook>;

/** The base64 HMAC-SHA256 of `id.timestamp.body` with the secret (the part after `v1,`). */
export declare function computeSignature(
  secret: string,
  id: string,
  timestampS: number,
  body: string | Uint8Array,
): Promise<string>;

/** Decodes a `whsec_<base64>` (or bare base64) secret into its key bytes. */
export declare function decodeWebhookSecret(secret: string): Uint8Array;

/** Compares two byte strings in time that depends only on their lengths. */
export declare function constantTimeEqual(a: Uint8Array, b: Uint8Array): boolean;
