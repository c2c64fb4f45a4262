/**
 * Emits the OpenAPI document from the route definitions, without a running service: the API side's app
 * (`createApp`) is built over an in-memory KV, with a session service whose host has no worker (the
 * document needs the routes, never a session). Nothing here composes a process (`src/app/compose.ts`).
 *
 * @module
 */
import { TokenService } from "../auth/tokens.ts";
import { systemClock } from "../clock.ts";
import { loadConfig } from "../config.ts";
import { SessionRouter } from "../fleet/session_router.ts";
import { openKv } from "../kv/open.ts";
import { silentLogger } from "../log.ts";
import { SessionService } from "../sessions/service.ts";
import { createApp } from "./app.ts";

/** The OpenAPI 3.1 document as committed in `openapi.json` (2-space JSON, trailing newline). */
export async function emitOpenApi(): Promise<string> {
  const config = loadConfig({
    SVC_KV: ":memory:",
    SVC_REFERENCE_ENGINE: "false",
    SVC_MEDIA_ENABLED: "false",
    SVC_DEMO_PAGE: "false",
  });
  // Closed when this function returns (`using`), after the app's work has settled (below).
  using kv = await openKv(":memory:");
  const clock = systemClock;
  const logger = silentLogger;
  const tokens = new TokenService(null, clock);
  const instanceId = "openapi";
  const host = new SessionRouter({ kv, clock, logger, instanceId });
  const sessions = new SessionService({ kv, clock, config, host, tokens, logger });
  const { document, settled } = createApp({
    kv,
    clock,
    config,
    tokens,
    logger,
    instanceId,
    api: { sessions },
  });
  try {
    return JSON.stringify(document(), null, 2) + "\n";
  } finally {
    await settled();
  }
}
