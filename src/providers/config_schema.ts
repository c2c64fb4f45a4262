/**
 * `provider_config` schemas: one strict object per provider type, with the field rules of the interface
 * specification. Messages never include the values (they may be credentials).
 *
 * @module
 */
import { z } from "@hono/zod-openapi";
import { urlField } from "../text_fields.ts";

/** Headers that cannot be set on the engine upgrade request. */
const RESERVED_HEADERS = /^(host|connection|upgrade|content-length|transfer-encoding|sec-websocket-.*)$/i;
/** RFC 9110 token characters. */
const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
/** Printable header values (no CR/LF). */
const HEADER_VALUE = /^[\t\x20-\x7e\x80-\uffff]*$/;

/** Hosts of the vendor3 conversational-agent service allowed in a pre-minted `signed_url`. */
export const VENDOR3_SIGNED_URL_HOSTS: readonly string[] = [
  "api.elevenlabs.io",
  "api.us.elevenlabs.io",
  "api.eu.residency.elevenlabs.io",
  "api.in.residency.elevenlabs.io",
];
/** Path a vendor3 `signed_url` must have. */
export const VENDOR3_SIGNED_URL_PATH = "/v1/convai/conversation";

const secretString = (max: number) => z.string().min(1).max(max);

/** `provider_config.vendor1_realtime`. */
export const Vendor1RealtimeConfig = z.strictObject({
  client_secret: secretString(8192).openapi({
    description: "Ephemeral client secret minted by the customer backend.",
  }),
}).openapi("Vendor1RealtimeConfig");

/** `provider_config.vendor2`. */
export const Vendor2Config = z.strictObject({
  access_token: secretString(8192).openapi({
    description: "Short-lived token minted by the customer backend with an agent grant.",
  }),
  agent_id: z.string().min(1).max(256),
}).openapi("Vendor2Config");

/** `provider_config.external_engine`. */
export const ExternalEngineConfig = z.strictObject({
  url: urlField("wss", 2048).openapi({
    description: "wss:// URL of an engine implementing the V0 external conversation engine protocol.",
    format: "uri",
  }),
  auth_headers: z.record(z.string(), z.string()).superRefine((headers, ctx) => {
    const names = Object.keys(headers);
    if (names.length > 32) ctx.addIssue({ code: "custom", message: "at most 32 headers" });
    for (const name of names) {
      // The name is never echoed: a misplaced secret could be in it.
      if (!HEADER_NAME.test(name) || name.length > 256) {
        ctx.addIssue({ code: "custom", message: "contains an invalid header name" });
      } else if (RESERVED_HEADERS.test(name)) {
        ctx.addIssue({
          code: "custom",
          message: "contains a reserved header (Host, Connection, Upgrade, Sec-WebSocket-*, …)",
        });
      }
      const value = headers[name];
      if (!HEADER_VALUE.test(value) || value.length > 8192) {
        ctx.addIssue({ code: "custom", message: "contains an invalid header value" });
      }
    }
  }).openapi({
    description: "Header dictionary sent on the engine's WebSocket upgrade request (credentials go here).",
  }),
  user_sample_rate: z.number().int().min(8000).max(48000).optional().openapi({
    description: "Hz of the PCM16LE user audio sent to the engine.",
    default: 24000,
  }),
}).openapi("ExternalEngineConfig");

/** `provider_config.vendor3`. */
export const Vendor3Config = z.strictObject({
  agent_id: z.string().min(1).max(256),
  api_key: secretString(8192).optional().openapi({
    description:
      "Server-side key used by the customer backend for private agents; never placed in a URL or log.",
  }),
  signed_url: urlField(
    "wss",
    4096,
    (url) =>
      url.pathname === VENDOR3_SIGNED_URL_PATH && VENDOR3_SIGNED_URL_HOSTS.includes(url.hostname)
        ? null
        : `must be a wss:// URL with path ${VENDOR3_SIGNED_URL_PATH} on an allowed host of the provider`,
  )
    .optional()
    .openapi({
      description: "Pre-minted signed URL (valid 15 minutes), used instead of agent_id.",
      format: "uri",
    }),
}).openapi("Vendor3Config");

/** `provider_config`: exactly one key, matching `provider_type` (checked by {@link checkProviderConfigShape}). */
export const ProviderConfig = z.strictObject({
  vendor1_realtime: Vendor1RealtimeConfig.optional(),
  vendor2: Vendor2Config.optional(),
  external_engine: ExternalEngineConfig.optional(),
  vendor3: Vendor3Config.optional(),
}).openapi("ProviderConfig", {
  description: "An object with exactly one key, which must match provider_type.",
  minProperties: 1,
  maxProperties: 1,
});

/**
 * Returns a message when `config` does not hold exactly the key matching `providerType`, else null.
 */
export function checkProviderConfigShape(
  providerType: string,
  config: Record<string, unknown>,
): string | null {
  const present = Object.keys(config).filter((k) => config[k] !== undefined);
  // The messages name the fields, never a provider type value.
  if (present.length > 1) return "provider_config: must hold exactly one key";
  if (present.length === 0 || present[0] !== providerType) {
    return "provider_config: must hold exactly one key, the one named by provider_type";
  }
  return null;
}

/** True when `value` contains a `provider_connection_id` key at any depth. */
export function containsProviderConnectionId(value: unknown, depth = 0): boolean {
  if (depth > 16 || value === null || typeof value !== "object") return false;
  if (Array.isArray(value)) return value.some((v) => containsProviderConnectionId(v, depth + 1));
  return Object.entries(value as Record<string, unknown>).some(([k, v]) =>
    k.toLowerCase() === "provider_connection_id" || containsProviderConnectionId(v, depth + 1)
  );
}
