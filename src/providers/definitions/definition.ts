/**
 * What the provider definitions says of one provider type (its entry, `definitions/<type>.ts`), read by the API,
 * the CLI, the demo page and the configuration without loading any bridge: its `provider_config` schema and
 * which of its fields are credentials, its settings (the environment variables saying where its engine
 * lives), the rules that need those settings, its `sessions create` flags and the demo page's fields.
 *
 * @module
 */
import type { z } from "@hono/zod-openapi";
import type { Settings, SettingValues } from "../../settings.ts";

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

/**
 * How a credential field of `provider_config[type]` is read from the raw body (`credential_reader.ts`) and
 * so how its stand-in is made: `secret`, a string; `headers`, a dictionary whose values are secrets; a
 * `url`, a `wss://` URL whose userinfo, path, query and fragment are secret (`path`: the one path the
 * schema accepts).
 */
export type CredentialKind = "secret" | "headers" | { url: "wss"; path?: string };

/** What the service knows of one provider type. */
export interface ProviderDefinition<S extends z.ZodType = z.ZodType, T extends Settings = Settings> {
  /** The `provider_config[type]` schema (a strict object with an OpenAPI name). */
  schema: S;
  /**
   * Its credential fields: they never become JavaScript strings (`credential_reader.ts` reads them as bytes
   * into the session's credential holder).
   */
  credentials: Record<string, CredentialKind>;
  /**
   * Its settings: where its engine lives (`SVC_…` variables, read by `config.ts` into
   * `Config.providers[type]`, handed to its bridge and to {@link ProviderDefinition.check}).
   */
  settings: T;
  /**
   * Rules that need the deployment's settings or the time; a message naming no value (and no provider type),
   * or null when the config is fine. `config` holds stand-ins where its credentials were: they are read
   * from `credentials`.
   */
  check?(config: z.output<S>, context: CheckContext<T>): string | null;
  /** `sessions create` flags of its fields. */
  cli: CliField[];
  /** The demo page's fields for it. */
  demo?: DemoOffer;
}

/** What a provider's {@link ProviderDefinition.check} is given besides the config. */
export interface CheckContext<T extends Settings = Settings> {
  /** Its settings, as the configuration read them. */
  settings: SettingValues<T>;
  now: number;
  /** The create's credentials (bytes; the session's credential holder). */
  credentials: { secret(name: string): Uint8Array | null };
}

/**
 * A provider definition, typed by its schema.
 *
 * @example An entry
 * ```ts
 * import { z } from "@hono/zod-openapi";
 * import { defineProvider } from "./definition.ts";
 *
 * import { wssUrl } from "../../settings.ts";
 *
 * const Config = z.strictObject({ token: z.string() }).openapi("ExampleConfig");
 * export const EXAMPLE = defineProvider({
 *   schema: Config,
 *   credentials: { token: "secret" },
 *   settings: { url: { env: "SVC_EXAMPLE_URL", schema: wssUrl, default: "wss://api.example.com/v1" } },
 *   cli: [{ flag: "token", field: "token", arg: "<token>", help: "a token", secret: true }],
 *   demo: { label: "a token", fields: [{ field: "token", label: "Token", input: "password" }] },
 * });
 * ```
 */
export function defineProvider<S extends z.ZodType, T extends Settings>(
  d: ProviderDefinition<S, T>,
): ProviderDefinition<S, T> {
  return d;
}
