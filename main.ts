/**
 * Entry point: `deno task start` runs the service on its embedded defaults (see README.md).
 *
 * @module
 */
import { ConfigError, loadConfigFromEnv } from "./src/config.ts";
import { startService } from "./src/server.ts";

if (import.meta.main) {
  let config;
  try {
    config = loadConfigFromEnv();
  } catch (err) {
    if (err instanceof ConfigError) {
      console.error(err.message);
      Deno.exit(1);
    }
    throw err;
  }
  const service = await startService(config);
  let stopping = false;
  const stop = async () => {
    if (stopping) return;
    stopping = true;
    // close() is bounded by SVC_SHUTDOWN_TIMEOUT_S (+ the HTTP server's in-flight requests); past a
    // margin, exit anyway.
    const timer = setTimeout(() => Deno.exit(1), config.shutdownTimeoutMs + 15_000);
    await service.close();
    clearTimeout(timer);
    Deno.exit(0);
  };
  Deno.addSignalListener("SIGINT", stop);
  Deno.addSignalListener("SIGTERM", stop);
}
