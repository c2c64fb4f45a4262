/**
 * `provider_config`: an object with exactly one key, matching `provider_type`, whose value is that
 * provider's config. The per-provider schemas are the provider definitions (`definitions/<type>.ts`, listed in
 * `provider_types.ts`); this module assembles the request schema and the checks around it. Messages never include
 * the values (they may be credentials).
 *
 * @module
 */
import { z } from "@hono/zod-openapi";
import {
  checkProviderConfig,
  PROVIDER_TYPES,
  type ProviderCheckContext,
  PROVIDERS,
  type ProviderType,
} from "./provider_types.ts";

type Schemas = { [K in ProviderType]: z.ZodOptional<(typeof PROVIDERS)[K]["schema"]> };

/** `provider_config`: exactly one key, matching `provider_type` (checked by {@link checkProviderConfigShape}). */
export const ProviderConfig = z.strictObject(
  Object.fromEntries(PROVIDER_TYPES.map((t) => [t, PROVIDERS[t].schema.optional()])) as Schemas,
).openapi("ProviderConfig", {
  description: "An object with exactly one key, which must match provider_type.",
  minProperties: 1,
  maxProperties: 1,
});

/**
 * Returns a message when `config` does not hold exactly the key matching `providerType`, or (given the
 * deployment's settings and the create's credentials) when that key's config breaks a rule that depends on
 * them; else null.
 */
export function checkProviderConfigShape(
  providerType: string,
  config: Record<string, unknown>,
  settings?: ProviderCheckContext,
): string | null {
  const present = Object.keys(config).filter((k) => config[k] !== undefined);
  // The messages name the fields, never a provider type value.
  if (present.length > 1) return "provider_config: must hold exactly one key";
  if (present.length === 0 || present[0] !== providerType) {
    return "provider_config: must hold exactly one key, the one named by provider_type";
  }
  return settings ? checkProviderConfig(providerType, config[providerType], settings) : null;
}

/** True when `value` contains a `provider_connection_id` key at any depth. */
export function containsProviderConnectionId(value: unknown, depth = 0): boolean {
  if (depth > 16 || value === null || typeof value !== "object") return false;
  if (Array.isArray(value)) return value.some((v) => containsProviderConnectionId(v, depth + 1));
  return Object.entries(value as Record<string, unknown>).some(([k, v]) =>
    k.toLowerCase() === "provider_connection_id" || containsProviderConnectionId(v, depth + 1)
  );
}
