/**
 * What the provider catalog says of one provider type (its entry, `catalog/<type>.ts`), read by the API,
 * the CLI and the demo page without loading any bridge: its `provider_config` schema, the rules that need
 * the deployment's settings, its `sessions create` flags and the demo page's fields.
 *
 * @module
 */
import type { z } from "@hono/zod-openapi";
import type { VendorEndpoints } from "../../config.ts";
import type { CredentialHolder } from "../../auth/credential_holder.ts";

/** A `sessions create` flag that fills one field of a provider's config. */
export interface CliField {
  /** The flag, without dashes (`client-secret`). */
  flag: string;
  /** The field of `provider_config[type]` it fills. */
  field: string;
  /** Its argument in the help (`<secret>`). */
  arg: string;
  /** Its help line. */
  help: string;
  /** Whether its value is a credential (the help says so; it is never printed). */
  secret: boolean;
  /**
   * How the flag's text becomes the field: as is (default); `headers`, a repeatable `'Name: value'` flag
   * merged into a header dictionary; `hz`, a whole number.
   */
  value?: "string" | "headers" | "hz";
}

/** A field the demo page asks for (browser-safe, short-lived credentials only: never an API key). */
export interface DemoField {
  /** The field of `provider_config[type]` it fills. */
  field: string;
  /** Its label on the page. */
  label: string;
  /** The input's type (`password` for a credential). */
  input: "text" | "password";
}

/** The demo page's offer of a provider type (absent: the page does not offer it). */
export interface DemoOffer {
  /** What the engine menu says of it, after its name. */
  label: string;
  fields: DemoField[];
}

/** What the service knows of one provider type. */
export interface ProviderDefinition<S extends z.ZodType = z.ZodType> {
  /** The `provider_config[type]` schema (a strict object with an OpenAPI name). */
  schema: S;
  /**
   * Rules that need the deployment's settings or the time; a message naming no value (and no provider type),
   * or null when the config is fine. `config` holds stand-ins where its credentials were: they are read
   * from `credentials`.
   */
  check?(config: z.output<S>, context: CheckContext): string | null;
  /** `sessions create` flags of its fields. */
  cli: CliField[];
  /** The demo page's fields for it. */
  demo?: DemoOffer;
}

/** What a provider's {@link ProviderDefinition.check} is given besides the config. */
export interface CheckContext {
  vendors: VendorEndpoints;
  now: number;
  /** The create's credentials (bytes). */
  credentials: CredentialHolder;
}

/**
 * A catalog entry, typed by its schema.
 *
 * @example An entry
 * ```ts
 * import { z } from "@hono/zod-openapi";
 * import { defineProvider } from "./definition.ts";
 *
 * const Config = z.strictObject({ token: z.string() }).openapi("ExampleConfig");
 * export const EXAMPLE = defineProvider({
 *   schema: Config,
 *   cli: [{ flag: "token", field: "token", arg: "<token>", help: "a token", secret: true }],
 *   demo: { label: "a token", fields: [{ field: "token", label: "Token", input: "password" }] },
 * });
 * ```
 */
export function defineProvider<S extends z.ZodType>(d: ProviderDefinition<S>): ProviderDefinition<S> {
  return d;
}
