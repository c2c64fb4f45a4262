/**
 * The provider catalog: what the API, the CLI and the demo page know of each provider type (the names are
 * in `src/vocabulary/provider_types.ts`), without loading any bridge. Each type's entry is its own file
 * (`catalog/<type>.ts`: its `provider_config` schema, the rules that need the deployment's settings, its
 * `sessions create` flags, the demo page's fields; see `definition.ts`); this module lists them.
 *
 * How a session connects to each one (its bridge) is listed in `../bridges.ts`, which only the worker side
 * loads. `docs/providers.md` describes each engine.
 *
 * @module
 */
import type { z } from "@hono/zod-openapi";
import { isProviderType, type ProviderType } from "../../vocabulary/provider_types.ts";
import type { CheckContext, DemoField, ProviderDefinition } from "./definition.ts";
import { EXTERNAL_ENGINE } from "./external_engine.ts";
import { VENDOR1_REALTIME } from "./vendor1_realtime.ts";
import { VENDOR2 } from "./vendor2.ts";
import { VENDOR3 } from "./vendor3.ts";

/** Every provider type and what the service knows of it (one entry per name of `PROVIDER_TYPES`). */
export const PROVIDERS = {
  vendor1_realtime: VENDOR1_REALTIME,
  vendor2: VENDOR2,
  external_engine: EXTERNAL_ENGINE,
  vendor3: VENDOR3,
} as const satisfies { [K in ProviderType]: ProviderDefinition<z.ZodType> };

/**
 * The provider types the demo page offers, with their menu label and fields (in `PROVIDER_TYPES` order).
 *
 * @example Usage
 * ```ts
 * import { demoOffers } from "./catalog.ts";
 * demoOffers().map((o) => o.type); // ["vendor1_realtime", "vendor2", "vendor3"]
 * ```
 */
export function demoOffers(): { type: ProviderType; label: string; fields: DemoField[] }[] {
  const out = [];
  for (const [type, definition] of Object.entries(PROVIDERS) as [ProviderType, ProviderDefinition][]) {
    if (definition.demo) out.push({ type, ...definition.demo });
  }
  return out;
}

/**
 * The deployment-dependent rules of a provider config (see {@link ProviderDefinition.check}); null when it
 * passes (or when the type or config is not one to check: the schema answers those).
 */
export function checkProviderConfig(
  type: string,
  config: unknown,
  context: CheckContext,
): string | null {
  if (!isProviderType(type) || config === null || typeof config !== "object") return null;
  const definition = PROVIDERS[type] as ProviderDefinition;
  return definition.check?.(config, context) ?? null;
}
