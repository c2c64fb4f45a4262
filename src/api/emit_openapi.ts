/**
 * Emits the OpenAPI document from the route definitions, without a running service: the API side is
 * composed over an in-memory KV, not listening, with no lifecycle.
 *
 * @module
 */
import { compose } from "../app/compose.ts";
import { loadConfig } from "../config.ts";
import { silentLogger } from "../log.ts";

/** The OpenAPI 3.1 document as committed in `openapi.json` (2-space JSON, trailing newline). */
export async function emitOpenApi(): Promise<string> {
  const service = await compose(
    loadConfig({
      SVC_KV: ":memory:",
      SVC_REFERENCE_ENGINE: "false",
      SVC_MEDIA_ENABLED: "false",
      SVC_DEMO_PAGE: "false",
    }),
    { logger: silentLogger, listen: false, lifecycle: false, tokenSecret: null },
  );
  try {
    return JSON.stringify(service.document(), null, 2) + "\n";
  } finally {
    await service.dispose();
  }
}
