/**
 * Emits the OpenAPI document from the route definitions, without a running service.
 *
 * @module
 */
import { systemClock } from "../clock.ts";
import { loadConfig } from "../config.ts";
import { silentLogger } from "../log.ts";
import { SessionRuntime } from "../runtime/session_runtime.ts";
import { UnavailableConnector } from "../providers/unavailable.ts";
import { TokenService } from "../auth/tokens.ts";
import { createApp } from "./app.ts";

/** The OpenAPI 3.1 document as committed in `openapi.json` (2-space JSON, trailing newline). */
export async function emitOpenApi(): Promise<string> {
  const kv = await Deno.openKv(":memory:");
  try {
    const none = new UnavailableConnector();
    const runtime = new SessionRuntime({
      connectors: { external_engine: none, vendor1_realtime: none, vendor2: none, vendor3: none },
      logger: silentLogger,
    });
    const { document } = createApp({
      kv,
      clock: systemClock,
      config: loadConfig({ SVC_KV: ":memory:", SVC_REFERENCE_ENGINE: "false" }),
      runtime,
      tokens: new TokenService(null, systemClock),
      logger: silentLogger,
      instanceId: "openapi",
    });
    return JSON.stringify(document(), null, 2) + "\n";
  } finally {
    kv.close();
  }
}
