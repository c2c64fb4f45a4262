/**
 * Entry point: `deno task start` runs the service on its embedded defaults (see README.md).
 *
 * @module
 */
import { ConfigError, loadConfigFromEnv } from "./src/config.ts";
import { startService } from "./src/server.ts";
import { FfmpegUnavailableError } from "./src/media/ffmpeg.ts";

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
  let service;
  try {
    service = await startService(config);
  } catch (err) {
    if (err instanceof FfmpegUnavailableError) {
      console.error(err.message);
      Deno.exit(1);
    }
    throw err;
  }
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
