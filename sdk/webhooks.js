// @ts-check
// @ts-self-types="./webhooks.d.ts"
/**
 * Verifies the service's lifecycle webhooks (Standard Webhooks, symmetric `v1` signatures). The service
 * signs with the same functions (`src/webhooks/sign.ts` imports this module). Types and documentation:
 * `webhooks.d.ts`.
 *
 * @module
 */

/** Default tolerance between `webhook-timestamp` and now: 5 minutes, either way. */
export const DEFAULT_TOLERANCE_S = 300;

/** Why a webhook did not verify (see `webhooks.d.ts`). */
export class WebhookVerificationError extends Error {
  /** @param {string} message */
  constructor(message) {
    super(message);
    this.name = "WebhookVerificationError";
  }
}

const encoder = new TextEncoder();

/** @param {string} secret */
export function decodeWebhookSecret(secret) {
  const b64 = secret.startsWith("whsec_") ? secret.slice("whsec_".length) : secret;
  let bin;
  try {
    bin = atob(b64);
  } catch {
    throw new WebhookVerificationError("the signing secret is not valid base64");
  }
  if (bin.length === 0) throw new WebhookVerificationError("the signing secret is empty");
  return Uint8Array.from(bin, (c) => c.charCodeAt(0));
}

/**
 * @param {string} secret
 * @param {string} id
 * @param {number} timestampS
 * @param {string | Uint8Array} body
 */
export async function computeSignature(secret, id, timestampS, body) {
  const key = await crypto.subtle.importKey(
    "raw",
    decodeWebhookSecret(secret),
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
  let bin = "";
  for (const b of mac) bin += String.fromCharCode(b);
  return btoa(bin);
}

/**
 * @param {Headers | Record<string, string | undefined>} headers
 * @param {string} name
 * @returns {string | undefined}
 */
function header(headers, name) {
  if (typeof Headers !== "undefined" && headers instanceof Headers) return headers.get(name) ?? undefined;
  for (const [k, v] of Object.entries(headers)) if (k.toLowerCase() === name) return v;
  return undefined;
}

/** @param {string} s */
function base64Bytes(s) {
  try {
    return Uint8Array.from(atob(s), (c) => c.charCodeAt(0));
  } catch {
    return null;
  }
}

/**
 * @param {Uint8Array} a
 * @param {Uint8Array} b
 */
export function constantTimeEqual(a, b) {
  if (a.length !== b.length) return false;
  let diff = 0;
  for (let i = 0; i < a.length; i++) diff |= a[i] ^ b[i];
  return diff === 0;
}

/** @param {import("./webhooks.d.ts").VerifyWebhookOptions} options */
export async function verifyWebhook(options) {
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
    const expected =
      /** @type {Uint8Array} */ (base64Bytes(await computeSignature(secret, id, timestamp, options.body)));
    // Check every candidate (no early exit) so timing does not tell which one matched.
    for (const sig of presented) if (constantTimeEqual(sig, expected)) match = true;
  }
  if (!match) throw new WebhookVerificationError("no matching signature");
  return { id, timestamp };
}
