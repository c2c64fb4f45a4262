/**
 * Verifies a lifecycle webhook: the Standard Webhooks symmetric scheme (`webhook-id`, `webhook-timestamp`,
 * `webhook-signature: v1,<base64 HMAC-SHA256 of "id.timestamp.body">`), with a timestamp tolerance and a
 * constant-time signature comparison.
 *
 * Self-contained (WebCrypto only, no imports) so that the SDK can re-export it as is.
 *
 * @example Usage
 * ```ts ignore
 * import { verifyWebhook } from "./verify.ts";
 * // in a receiver: the raw body exactly as received, the request headers, the project's signing secret
 * const body = await req.text();
 * const { id } = await verifyWebhook({ secret: Deno.env.get("WEBHOOK_SECRET")!, headers: req.headers, body });
 * // use `id` to drop repeats (deliveries are at least once)
 * ```
 *
 * @module
 */

/** Default tolerance between `webhook-timestamp` and now: 5 minutes, either way. */
export const DEFAULT_TOLERANCE_S = 300;

/** Why a webhook did not verify. The message never contains the secret. */
export class WebhookVerificationError extends Error {
  override name = "WebhookVerificationError";
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

const encoder = new TextEncoder();

/** Decodes a `whsec_<base64>` (or bare base64) secret into its key bytes. */
export function decodeWebhookSecret(secret: string): Uint8Array {
  const b64 = secret.startsWith("whsec_") ? secret.slice("whsec_".length) : secret;
  let bin: string;
  try {
    bin = atob(b64);
  } catch {
    throw new WebhookVerificationError("the signing secret is not valid base64");
  }
  if (bin.length === 0) throw new WebhookVerificationError("the signing secret is empty");
  return Uint8Array.from(bin, (c) => c.charCodeAt(0));
}

/** The base64 HMAC-SHA256 of `id.timestamp.body` with the secret (the part after `v1,`). */
export async function computeSignature(
  secret: string,
  id: string,
  timestampS: number,
  body: string | Uint8Array,
): Promise<string> {
  const key = await crypto.subtle.importKey(
    "raw",
    decodeWebhookSecret(secret) as Uint8Array<ArrayBuffer>,
    { name: "HMAC", hash: "SHA-256" },
    false,
    ["sign"],
  );
  const bodyBytes = typeof body === "string" ? encoder.encode(body) : body;
  const prefix = encoder.encode(`${id}.${timestampS}.`);
  const signed = new Uint8Array(prefix.length + bodyBytes.length);
  signed.set(prefix);
  signed.set(bodyBytes, prefix.length);
  const mac = new Uint8Array(await crypto.subtle.sign("HMAC", key, signed));
  return btoa(String.fromCharCode(...mac));
}

function header(headers: VerifyWebhookOptions["headers"], name: string): string | undefined {
  if (headers instanceof Headers) return headers.get(name) ?? undefined;
  for (const [k, v] of Object.entries(headers)) if (k.toLowerCase() === name) return v;
  return undefined;
}

function base64Bytes(s: string): Uint8Array | null {
  try {
    return Uint8Array.from(atob(s), (c) => c.charCodeAt(0));
  } catch {
    return null;
  }
}

/** Compares two byte strings in time that depends only on their lengths. */
export function constantTimeEqual(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  let diff = 0;
  for (let i = 0; i < a.length; i++) diff |= a[i] ^ b[i];
  return diff === 0;
}

/**
 * Verifies a delivery; resolves with its id and timestamp, or rejects with a
 * {@link WebhookVerificationError} (missing headers, timestamp out of tolerance, no matching signature).
 */
export async function verifyWebhook(options: VerifyWebhookOptions): Promise<VerifiedWebhook> {
  const id = header(options.headers, "webhook-id");
  const ts = header(options.headers, "webhook-timestamp");
  const sigs = header(options.headers, "webhook-signature");
  if (!id || !ts || !sigs) throw new WebhookVerificationError("missing webhook-id, -timestamp or -signature");
  if (!/^\d{1,12}$/.test(ts)) throw new WebhookVerificationError("invalid webhook-timestamp");
  const timestamp = Number(ts);
  const nowS = Math.floor((options.now ?? Date.now()) / 1000);
  const tolerance = options.toleranceS ?? DEFAULT_TOLERANCE_S;
  if (timestamp < nowS - tolerance) throw new WebhookVerificationError("message timestamp too old");
  if (timestamp > nowS + tolerance) throw new WebhookVerificationError("message timestamp too new");
  const presented = sigs.split(" ").flatMap((part) => {
    const comma = part.indexOf(",");
    if (comma < 0 || part.slice(0, comma) !== "v1") return [];
    const bytes = base64Bytes(part.slice(comma + 1));
    return bytes ? [bytes] : [];
  });
  if (presented.length === 0) throw new WebhookVerificationError("no v1 signature");
  const secrets = typeof options.secret === "string" ? [options.secret] : options.secret;
  let match = false;
  for (const secret of secrets) {
    const expected = base64Bytes(await computeSignature(secret, id, timestamp, options.body))!;
    // Check every candidate (no early exit) so timing does not tell which one matched.
    for (const sig of presented) if (constantTimeEqual(sig, expected)) match = true;
  }
  if (!match) throw new WebhookVerificationError("no matching signature");
  return { id, timestamp };
}
