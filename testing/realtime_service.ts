/**
 * A live service for player tests whose sessions run on the strictly real-time engine
 * (`testing/realtime_engine.ts`: it says nothing until the test makes it speak, then sends each 20 ms chunk
 * as it is spoken): composed by the one composition root without the reference engine, trusting the
 * engine's test CA, with an API key of a project and the SDK's client. Its sessions are ended, the engine,
 * the KV and the service closed and the directory removed afterwards, whatever the test did.
 *
 * @module
 */
import { createClient, type CreatedSession } from "@avatar-svc/sdk";
import { compose, openKv, type Service } from "../src/app/compose.ts";
import { loadConfig } from "../src/config.ts";
import { silentLogger } from "../src/log.ts";
import { generateEngineTls } from "../engine/mod.ts";
import { type RealtimeEngine, startRealtimeEngine } from "./realtime_engine.ts";
import { backendOf } from "./live_service.ts";
// The worker side, loaded with this module rather than by compose()'s `await import()` during a test: its
// lip-sync module opens libespeak-ng when first imported, which the resource sanitizer would count as the
// test's own.
import "../src/app/worker_side.ts";

/** What a test gets. */
export interface RealtimeService {
  service: Service;
  client: ReturnType<typeof createClient>;
  engine: RealtimeEngine;
  /**
   * Creates a session on the engine (`transport` as the create takes it; ended afterwards) and waits until
   * the engine has its connection (`deadlineMs`).
   */
  session(options: { transport?: "websocket_fmp4"; deadlineMs: number }): Promise<CreatedSession>;
}

/** Runs `fn` against a live service on the real-time engine; everything is closed afterwards. */
export async function withRealtimeService(
  projectId: string,
  fn: (live: RealtimeService) => Promise<void>,
): Promise<void> {
  const dir = await Deno.makeTempDir();
  const tls = await generateEngineTls();
  await Deno.writeTextFile(`${dir}/ca.pem`, tls.caPem);
  const config = loadConfig({
    PORT: "0",
    SVC_KV: `${dir}/svc.kv`,
    SVC_REFERENCE_ENGINE: "false",
    SVC_ENGINE_CA_FILE: `${dir}/ca.pem`,
    SVC_DEMO_PAGE: "false",
  });
  const service = await compose(config, { logger: silentLogger });
  const kv = await openKv(config.kv);
  const engine = startRealtimeEngine({ tls });
  const sessions: string[] = [];
  let client: ReturnType<typeof createClient> | null = null;
  try {
    const sdk = client =
      (await backendOf(service, kv, projectId, ["sessions:read", "sessions:write"])).client;
    await fn({
      service,
      client: sdk,
      engine,
      async session({ transport, deadlineMs }) {
        const s = await sdk.createSession({
          provider_type: "external_engine",
          provider_config: { external_engine: { url: engine.url, auth_headers: {} } },
          ...(transport ? { transport } : {}),
        });
        sessions.push(s.session_id);
        const end = Date.now() + deadlineMs;
        while (!engine.sessions.has(s.session_id)) {
          if (Date.now() > end) throw new Error("timed out waiting for the engine's connection");
          await new Promise((r) => setTimeout(r, 100));
        }
        return s;
      },
    });
  } finally {
    for (const id of sessions) await client?.endSession(id, { force: true }).catch(() => {});
    await engine.close();
    kv.close();
    await service.close();
    await Deno.remove(dir, { recursive: true });
  }
}
