/**
 * The provider registry: what the API and the CLI know of each provider type (the names are in
 * `src/vocabulary/provider_types.ts`), without loading any bridge:
 *
 * - `schema`: its `provider_config` object (the API validates it; the OpenAPI document shows it);
 * - `check`: the rules that need the deployment's settings or the time (answered with 400 before any
 *   session is written), on the validated config and the credentials' bytes;
 * - `cli`: the `sessions create` flags that fill its fields (the CLI builds its help and request from them).
 *
 * How a session connects to each one (its bridge) is in `bridges.ts`, which only the worker side loads.
 * `docs/providers.md` describes each engine.
 *
 * @module
 */
import type { z } from "@hono/zod-openapi";
import type { VendorEndpoints } from "../../config.ts";
import { isProviderType, type ProviderType } from "../../vocabulary/provider_types.ts";
import { ExternalEngineConfig } from "./external_engine.ts";
import type { CredentialHolder } from "../../auth/credential_holder.ts";
import { Vendor1RealtimeConfig } from "./vendor1_realtime.ts";
import { Vendor2Config } from "./vendor2.ts";
import { Vendor3Config } from "./vendor3.ts";
import { signedUrlProblem } from "./vendor3_signed_url.ts";

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
}

/** What a provider's {@link ProviderDefinition.check} is given besides the config. */
export interface CheckContext {
  vendors: VendorEndpoints;
  now: number;
  /** The create's credentials (bytes). */
  credentials: CredentialHolder;
}

function define<S extends z.ZodType>(d: ProviderDefinition<S>): ProviderDefinition<S> {
  return d;
}

/** Every provider type and what the service knows of it (one entry per name of `PROVIDER_TYPES`). */
export const PROVIDERS = {
  vendor1_realtime: define({
    schema: Vendor1RealtimeConfig,
    cli: [{
      flag: "client-secret",
      field: "client_secret",
      arg: "<secret>",
      help: "client secret",
      secret: true,
    }],
  }),
  vendor2: define({
    schema: Vendor2Config,
    cli: [
      { flag: "access-token", field: "access_token", arg: "<token>", help: "access token", secret: true },
      { flag: "agent-id", field: "agent_id", arg: "<id>", help: "the agent's id", secret: false },
    ],
  }),
  external_engine: define({
    schema: ExternalEngineConfig,
    cli: [
      { flag: "engine-url", field: "url", arg: "<wss://…>", help: "the engine's wss:// URL", secret: false },
      {
        flag: "engine-header",
        field: "auth_headers",
        arg: "<'Name: value'>",
        help: "a header of the engine's upgrade request",
        secret: true,
        value: "headers",
      },
      {
        flag: "sample-rate",
        field: "user_sample_rate",
        arg: "<hz>",
        help: "user audio rate, 8000..48000",
        secret: false,
        value: "hz",
      },
    ],
  }),
  vendor3: define({
    schema: Vendor3Config,
    check: (_config, { vendors, now, credentials }) => {
      const signed = credentials.secret("signed_url");
      return signed ? signedUrlProblem(signed, vendors.vendor3SignedUrlHosts, now) : null;
    },
    cli: [
      { flag: "agent-id", field: "agent_id", arg: "<id>", help: "the agent's id", secret: false },
      {
        flag: "provider-api-key",
        field: "api_key",
        arg: "<key>",
        help: "the vendor's API key",
        secret: true,
      },
      {
        flag: "signed-url",
        field: "signed_url",
        arg: "<wss://…>",
        help: "a pre-minted signed URL",
        secret: true,
      },
    ],
  }),
} as const satisfies { [K in ProviderType]: ProviderDefinition<z.ZodType> };

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
