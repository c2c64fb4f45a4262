/**
 * The provider definitions: the provider types, and what the API, the CLI, the demo page and the configuration
 * know of each one, without loading any bridge. This module's {@link PROVIDERS} is the one list: the names
 * (`provider_type`, the OpenAPI `ProviderType` enum), the `provider_config` schemas, the credential fields,
 * the settings `config.ts` reads, the CLI flags and the demo page's fields all come from it. Each type's
 * entry is its own file (`definitions/<type>.ts`; see `definition.ts`).
 *
 * How a session connects to each one (its bridge, `src/providers/<type>/bridge.ts`) is found by the
 * type's name on the worker side (`../bridges.ts`), which the API side and the CLI never load.
 * `docs/providers.md` describes each engine; docs/architecture.md lists the files a new one touches.
 *
 * The definitions sit on the bottom floor with the session vocabulary (which takes the names from it): it
 * imports nothing of the service but the platform's leaves.
 *
 * @module
 */
import type { z } from "@hono/zod-openapi";
import type { Settings, SettingValues } from "../../settings.ts";
import type { CheckContext, DemoField, ProviderDefinition } from "./definition.ts";
import { EXTERNAL_ENGINE } from "./external_engine.ts";
import { VENDOR1_REALTIME } from "./vendor1_realtime.ts";
import { VENDOR2 } from "./vendor2.ts";
import { VENDOR3 } from "./vendor3.ts";

/** Every provider type and what the service knows of it, in the interface specification's order. */
export const PROVIDERS = {
  vendor1_realtime: VENDOR1_REALTIME,
  vendor2: VENDOR2,
  external_engine: EXTERNAL_ENGINE,
  vendor3: VENDOR3,
} as const satisfies Record<string, ProviderDefinition<z.ZodType, Settings>>;

/** One provider type (a key of {@link PROVIDERS}). */
export type ProviderType = keyof typeof PROVIDERS;

/** Every provider type, in {@link PROVIDERS}' order. */
export const PROVIDER_TYPES = Object.keys(PROVIDERS) as [ProviderType, ...ProviderType[]];

/** Each provider type's settings, as `config.ts` reads them (`Config.providers`). */
export type ProviderSettings = {
  [K in ProviderType]: SettingValues<(typeof PROVIDERS)[K]["settings"]>;
};

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
  return typeof value === "string" && Object.hasOwn(PROVIDERS, value);
}

/**
 * The provider types the demo page offers, with their menu label and fields (in `PROVIDER_TYPES` order).
 *
 * @example Usage
 * ```ts
 * import { demoOffers } from "./provider_types.ts";
 * demoOffers().map((o) => o.type); // ["vendor1_realtime", "vendor2", "vendor3"]
 * ```
 */
export function demoOffers(): { type: ProviderType; label: string; fields: DemoField[] }[] {
  const out = [];
  for (const type of PROVIDER_TYPES) {
    const demo = (PROVIDERS[type] as ProviderDefinition).demo;
    if (demo) out.push({ type, ...demo });
  }
  return out;
}

/** What {@link checkProviderConfig} is given besides the config: every type's settings, the time, the credentials. */
export interface ProviderCheckContext extends Omit<CheckContext, "settings"> {
  providers: ProviderSettings;
}

/**
 * The deployment-dependent rules of a provider config (see {@link ProviderDefinition.check}); null when it
 * passes (or when the type or config is not one to check: the schema answers those).
 */
export function checkProviderConfig(
  type: string,
  config: unknown,
  context: ProviderCheckContext,
): string | null {
  if (!isProviderType(type) || config === null || typeof config !== "object") return null;
  const definition = PROVIDERS[type] as ProviderDefinition;
  const { providers, ...rest } = context;
  return definition.check?.(config, { ...rest, settings: providers[type] }) ?? null;
}
