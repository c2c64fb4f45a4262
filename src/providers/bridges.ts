/**
 * The bridges: for each provider type, how a session connects to its engine (the runtime drives the
 * connection through the `ProviderConnector` port of `types.ts`). Only a process that runs sessions loads
 * this module (the bridges and their wire code, `wire/`); the API side and the CLI read the provider
 * registry (`registry.ts`) instead.
 *
 * @module
 */
import { type Clock, systemClock } from "../clock.ts";
import type { Config } from "../config.ts";
import type { Logger } from "../log.ts";
import { PROVIDER_TYPES, type ProviderType } from "../vocabulary/provider_types.ts";
import { ExternalEngineConnector } from "./external_engine/bridge.ts";
import type { ConnectorDeps, ProviderConnector } from "./types.ts";
import { Vendor1RealtimeConnector } from "./vendor1_realtime/bridge.ts";
import { Vendor2Connector } from "./vendor2/bridge.ts";
import { Vendor3Connector } from "./vendor3/bridge.ts";

/** Builds the connector of each provider type. */
const CONNECTORS: { [K in ProviderType]: (deps: ConnectorDeps) => ProviderConnector } = {
  vendor1_realtime: (deps) => new Vendor1RealtimeConnector(deps),
  vendor2: (deps) => new Vendor2Connector(deps),
  external_engine: (deps) =>
    new ExternalEngineConnector({ caCerts: deps.caCerts, logger: deps.logger, clock: deps.clock }),
  vendor3: (deps) => new Vendor3Connector(deps),
};

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
  return Object.fromEntries(PROVIDER_TYPES.map((type) => [type, CONNECTORS[type](deps)])) as Record<
    ProviderType,
    ProviderConnector
  >;
}
