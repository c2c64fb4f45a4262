/**
 * Entry point: `deno task start` runs the service on its embedded defaults (see README.md). `SVC_ROLE`
 * picks what this process is: `all` (default), `api` (the HTTP API only: runs on Deno Deploy) or `worker`
 * (a session host); see docs/deployment.md.
 *
 * @module
 */
import { compose } from "./src/app/compose.ts";
import { loadConfigFromEnv, StartupError } from "./src/config.ts";

if (import.meta.main) {
  let service;
  let config;
  try {
    config = loadConfigFromEnv();
    service = await compose(config);
  } catch (err) {
    // An invalid environment (`ConfigError`), or what it names unusable (a missing ffmpeg): one line.
    if (err instanceof StartupError) {
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
