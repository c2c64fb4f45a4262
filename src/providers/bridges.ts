/**
 * The bridges: for each provider type, how a session connects to its engine (the runtime drives the
 * connection through the `ProviderBridge` port of `types.ts`). Each type's bridge is its own module,
 * `src/providers/<type>/bridge.ts`, exporting `createBridge` (a {@link BridgeFactory}); this module finds it
 * by the type's name (the provider definitions' `PROVIDER_TYPES`), with a dynamic import: there is no list of bridges to
 * keep. Only a process that runs sessions loads this module (the bridges and their wire code, `wire/`);
 * the API side and the CLI read the provider definitions (`definitions/provider_types.ts`) instead.
 *
 * @module
 */
import { type Clock, systemClock } from "../clock.ts";
import type { Logger } from "../log.ts";
import { PROVIDER_TYPES, type ProviderSettings, type ProviderType } from "./definitions/provider_types.ts";
import type { BridgeDeps, BridgeFactory, ProviderBridge } from "./types.ts";
import { InputTurns } from "./wire/input_turns.ts";

/** What {@link createBridges} takes. */
export interface BridgesOptions {
  /** The service's configuration: each provider type's settings (`Config.providers`). */
  config: { providers: ProviderSettings };
  logger: Logger;
  /** Default: the wall clock. */
  clock?: Clock;
  /** Extra CA certificates (PEM) trusted for engine connections (`SVC_ENGINE_CA_FILE`, the embedded engine's). */
  caCerts?: readonly string[];
  /**
   * The process's fairness gate of engine input, shared by every bridge (default: a gate of these bridges'
   * own; the worker side passes the one it owns).
   */
  inputTurns?: InputTurns;
  /** Keepalive of the vendor sockets (tests shorten it). */
  keepalive?: BridgeDeps["keepalive"];
}

/**
 * The `createBridge` of `type`'s bridge module, `./<type>/bridge.ts`. Throws, naming the file, when the
 * module is missing or exports no `createBridge`.
 */
export async function bridgeFactory<K extends ProviderType>(type: K): Promise<BridgeFactory<K>> {
  let module: { createBridge?: unknown };
  try {
    // A template literal Deno resolves to every `./*/bridge.ts` (they are this module's dynamic imports).
    module = await import(`./${type}/bridge.ts`);
  } catch (err) {
    throw new Error(`provider type ${type}: cannot load src/providers/${type}/bridge.ts (${String(err)})`);
  }
  if (typeof module.createBridge !== "function") {
    throw new Error(`provider type ${type}: src/providers/${type}/bridge.ts exports no createBridge`);
  }
  return module.createBridge as BridgeFactory<K>;
}

/** One bridge per provider type, each built by its module's `createBridge` with its type's settings. */
export async function createBridges(options: BridgesOptions): Promise<Record<ProviderType, ProviderBridge>> {
  const bridges: Partial<Record<ProviderType, ProviderBridge>> = {};
  const inputTurns = options.inputTurns ?? new InputTurns();
  for (const type of PROVIDER_TYPES) {
    const create = await bridgeFactory(type) as BridgeFactory<ProviderType>;
    bridges[type] = create({
      logger: options.logger,
      clock: options.clock ?? systemClock,
      settings: options.config.providers[type] as never,
      caCerts: options.caCerts ?? [],
      inputTurns,
      keepalive: options.keepalive,
    });
  }
  return bridges as Record<ProviderType, ProviderBridge>;
}
