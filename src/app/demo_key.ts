/**
 * The demo page's backend key: an API key of the demo project, minted at start-up and kept in memory only
 * (its hash is stored like any key's), revoked when the process stops. On one host the page needs the
 * embedded engine and media; an API process's page offers the vendor engines.
 *
 * @module
 */
import { DEMO_PROJECT_ID } from "../api/demo_project.ts";
import type { Clock } from "../clock.ts";
import { createApiKey, revokeApiKey } from "../kv/api_keys.ts";
import type { Cleanup } from "./cleanup.ts";

/** The demo page's backend: its key, and the embedded engine it offers (on one host). */
export interface DemoBackend {
  apiKey: string;
  engine?: { url: string; token: string };
}

/** Mints the demo project's key; registers its revocation. */
export async function mintDemoKey(
  kv: Deno.Kv,
  clock: Clock,
  instanceId: string,
  engine: { url: string; token: string } | undefined,
  cleanup: Cleanup,
): Promise<DemoBackend> {
  const { plaintext, record } = await createApiKey(kv, {
    projectId: DEMO_PROJECT_ID,
    name: "demo page (in memory)",
    scopes: ["sessions:read", "sessions:write", "avatars:read", "avatars:write"],
    now: clock.now(),
    createdBy: instanceId,
  });
  const keyId = record.key_id;
  cleanup.push(() => revokeApiKey(kv, DEMO_PROJECT_ID, keyId, clock.now()));
  return { apiKey: plaintext, engine };
}
