/**
 * The names of the provider types: which kind of conversation engine a session talks to
 * (`provider_type`). What the service knows of each one (its `provider_config` schema, its CLI flags, the
 * bridge that connects a session to it) is keyed by these names in `src/providers/`.
 *
 * @module
 */

/** Every provider type, in the interface specification's order. */
export const PROVIDER_TYPES = ["vendor1_realtime", "vendor2", "external_engine", "vendor3"] as const;
/** One provider type. */
export type ProviderType = (typeof PROVIDER_TYPES)[number];

/**
 * Whether `value` names a provider type.
 *
 * @example Usage
 * ```ts
 * import { isProviderType } from "./provider_types.ts";
 * isProviderType("external_engine"); // true
 * isProviderType("vendor9"); // false
 * ```
 */
export function isProviderType(value: unknown): value is ProviderType {
  return (PROVIDER_TYPES as readonly unknown[]).includes(value);
}
