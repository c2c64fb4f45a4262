/**
 * Signs outgoing webhooks (Standard Webhooks, symmetric `v1`) and generates signing secrets.
 *
 * @module
 */
import { computeSignature } from "./verify.ts";

/** A new signing secret: `whsec_` + base64 of 32 random bytes. */
export function generateWebhookSecret(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(32));
  return `whsec_${btoa(String.fromCharCode(...bytes))}`;
}

/**
 * The `webhook-signature` header value: one `v1,<base64>` per secret, space-separated (the current secret
 * first; during a rotation's grace period the previous one too, so receivers can switch at their pace).
 */
export async function signatureHeader(
  secrets: readonly string[],
  id: string,
  timestampS: number,
  body: string,
): Promise<string> {
  const parts: string[] = [];
  for (const s of secrets) parts.push(`v1,${await computeSignature(s, id, timestampS, body)}`);
  return parts.join(" ");
}

/** The three Standard Webhooks headers of one attempt, plus the content type. */
export async function webhookHeaders(
  secrets: readonly string[],
  id: string,
  timestampS: number,
  body: string,
): Promise<Record<string, string>> {
  return {
    "content-type": "application/json",
    "webhook-id": id,
    "webhook-timestamp": String(timestampS),
    "webhook-signature": await signatureHeader(secrets, id, timestampS, body),
  };
}
