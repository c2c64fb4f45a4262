/**
 * The provider registry: the one list of conversation engine types. A new engine is added here, with
 * everything the service needs to know of it:
 *
 * - `schema`: its `provider_config` object (the API validates it; the OpenAPI document shows it);
 * - `check`: the rules that need the deployment's settings or the time (answered with 400 before any
 *   session is written), on the validated config and the credentials' bytes;
 * - `connector`: how a session connects to it (the runtime drives the connection through the
 *   `ProviderConnector` port of `types.ts`);
 * - `cli`: the `sessions create` flags that fill its fields (the CLI builds its help and request from them).
 *
 * The order is the interface specification's. `docs/providers.md` describes each engine.
 *
 * @module
 */
import type { z } from "@hono/zod-openapi";
import { type Clock, systemClock } from "../clock.ts";
import type { Config, VendorEndpoints } from "../config.ts";
import type { Logger } from "../log.ts";
import { ExternalEngineConnector } from "./external_engine.ts";
import { ExternalEngineConfig } from "./external_engine/schema.ts";
import type { ConnectorDeps, ProviderConnector } from "./types.ts";
import type { CredentialHolder } from "../runtime/credential_holder.ts";
import { Vendor1RealtimeConnector } from "./vendor1_realtime/connector.ts";
import { Vendor1RealtimeConfig } from "./vendor1_realtime/schema.ts";
import { Vendor2Connector } from "./vendor2/connector.ts";
import { Vendor2Config } from "./vendor2/schema.ts";
import { Vendor3Connector } from "./vendor3/connector.ts";
import { Vendor3Config } from "./vendor3/schema.ts";
import { signedUrlProblem } from "./vendor3/signed_url.ts";

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
  /** Builds the connector of this type. */
  connector(deps: ConnectorDeps): ProviderConnector;
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

/** Every provider type and what the service knows of it. */
export const PROVIDERS = {
  vendor1_realtime: define({
    schema: Vendor1RealtimeConfig,
    connector: (deps) => new Vendor1RealtimeConnector(deps),
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
    connector: (deps) => new Vendor2Connector(deps),
    cli: [
      { flag: "access-token", field: "access_token", arg: "<token>", help: "access token", secret: true },
      { flag: "agent-id", field: "agent_id", arg: "<id>", help: "the agent's id", secret: false },
    ],
  }),
  external_engine: define({
    schema: ExternalEngineConfig,
    connector: (deps) =>
      new ExternalEngineConnector({ caCerts: deps.caCerts, logger: deps.logger, clock: deps.clock }),
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
    connector: (deps) => new Vendor3Connector(deps),
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
} as const;

/** One provider type. */
export type ProviderType = keyof typeof PROVIDERS;

/** Every provider type, in the interface specification's order. */
export const PROVIDER_TYPES = Object.keys(PROVIDERS) as [ProviderType, ...ProviderType[]];

/** Whether `value` names a provider type. */
export function isProviderType(value: unknown): value is ProviderType {
  return typeof value === "string" && Object.hasOwn(PROVIDERS, value);
}

/** What {@link createConnectors} takes. */
export interface ConnectorsOptions {
  /** The service's configuration (the vendors' endpoints). */
  config: Pick<Config, "vendors">;
  logger: Logger;
  /** Default: the wall clock. */
  clock?: Clock;
  /** Extra CA certificates (PEM) trusted for engine connections (`SVC_ENGINE_CA_FILE`, the embedded engine's). */
  caCerts?: readonly string[];
  /** Keepalive of the vendor sockets (tests shorten it). */
  keepalive?: ConnectorDeps["keepalive"];
}

/** One connector per provider type. */
export function createConnectors(options: ConnectorsOptions): Record<ProviderType, ProviderConnector> {
  const deps: ConnectorDeps = {
    logger: options.logger,
    clock: options.clock ?? systemClock,
    vendors: options.config.vendors,
    caCerts: options.caCerts ?? [],
    keepalive: options.keepalive,
  };
  return Object.fromEntries(
    PROVIDER_TYPES.map((type) => [type, PROVIDERS[type].connector(deps)]),
  ) as Record<ProviderType, ProviderConnector>;
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
