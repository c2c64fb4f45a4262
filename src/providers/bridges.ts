/**
 * The bridges: for each provider type, how a session connects to its engine (the runtime drives the
 * connection through the `ProviderBridge` port of `types.ts`). Only a process that runs sessions loads
 * this module (the bridges and their wire code, `wire/`); the API side and the CLI read the provider
 * registry (`registry.ts`) instead.
 *
 * @module
 */
import { type Clock, systemClock } from "../clock.ts";
import type { Config } from "../config.ts";
import type { Logger } from "../log.ts";
import { PROVIDER_TYPES, type ProviderType } from "../vocabulary/provider_types.ts";
import { ExternalEngineBridge } from "./external_engine/bridge.ts";
import type { BridgeDeps, ProviderBridge } from "./types.ts";
import { Vendor1RealtimeBridge } from "./vendor1_realtime/bridge.ts";
import { Vendor2Bridge } from "./vendor2/bridge.ts";
import { Vendor3Bridge } from "./vendor3/bridge.ts";

/** Builds the bridge of each provider type. */
const BRIDGES: { [K in ProviderType]: (deps: BridgeDeps) => ProviderBridge } = {
  vendor1_realtime: (deps) => new Vendor1RealtimeBridge(deps),
  vendor2: (deps) => new Vendor2Bridge(deps),
  external_engine: (deps) =>
    new ExternalEngineBridge({ caCerts: deps.caCerts, logger: deps.logger, clock: deps.clock }),
  vendor3: (deps) => new Vendor3Bridge(deps),
};

/** What {@link createBridges} takes. */
export interface BridgesOptions {
  /** The service's configuration (the vendors' endpoints). */
  config: Pick<Config, "vendors">;
  logger: Logger;
  /** Default: the wall clock. */
  clock?: Clock;
  /** Extra CA certificates (PEM) trusted for engine connections (`SVC_ENGINE_CA_FILE`, the embedded engine's). */
  caCerts?: readonly string[];
  /** Keepalive of the vendor sockets (tests shorten it). */
  keepalive?: BridgeDeps["keepalive"];
}

/** One bridge per provider type. */
export function createBridges(options: BridgesOptions): Record<ProviderType, ProviderBridge> {
  const deps: BridgeDeps = {
    logger: options.logger,
    clock: options.clock ?? systemClock,
    vendors: options.config.vendors,
    caCerts: options.caCerts ?? [],
    keepalive: options.keepalive,
  };
  return Object.fromEntries(PROVIDER_TYPES.map((type) => [type, BRIDGES[type](deps)])) as Record<
    ProviderType,
    ProviderBridge
  >;
}
