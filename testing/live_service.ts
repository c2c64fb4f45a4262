/**
 * A live service for browser tests: composed by the one composition root with the in-process reference
 * engine (its own directory and KV file), an API key of a project, the SDK's client, sessions on the
 * reference engine, and Debian's Chromium with a page on the service's origin (the SDK's player loads from
 * `/sdk/`). Everything is ended, closed and removed afterwards, whatever the test did.
 *
 * @module
 */
import type { Browser, Page } from "playwright-core";
import { createClient } from "@avatar-svc/sdk";
import { compose, openKv, type Service } from "../src/app/compose.ts";
import type { Scope } from "../src/auth/scopes.ts";
import { loadConfig } from "../src/config.ts";
import { createApiKey } from "../src/kv/api_keys.ts";
import { silentLogger } from "../src/log.ts";
import { launchChromium } from "./browser.ts";

/** What a test gets. */
export interface LiveService {
  service: Service;
  client: ReturnType<typeof createClient>;
  apiKey: string;
  /** Creates a session on the in-process reference engine (ended afterwards). */
  session(
    avatarConfig: { avatar_id?: string; bg_id?: string },
  ): Promise<Awaited<ReturnType<ReturnType<typeof createClient>["createSession"]>>>;
  /** A new page of Chromium (launched on first use, with sound) on one of the service's pages. */
  page(viewport?: { width: number; height: number }): Promise<Page>;
}

/**
 * The app's backend of a test: an API key of `projectId` with `scopes` made in the service's KV (as the
 * operator's bootstrap does) and the SDK's client on it.
 */
export async function backendOf(
  service: Service,
  kv: Deno.Kv,
  projectId: string,
  scopes: Scope[],
): Promise<{ client: ReturnType<typeof createClient>; apiKey: string }> {
  const { plaintext } = await createApiKey(kv, {
    projectId,
    name: "backend",
    scopes,
    now: Date.now(),
    createdBy: "bootstrap",
  });
  return { client: createClient({ baseUrl: service.url!, apiKey: plaintext }), apiKey: plaintext };
}

/** Runs `fn` against a live service; ends its sessions, closes the browser and the service afterwards. */
export async function withLiveService(
  options: { projectId: string; scopes: Scope[] },
  fn: (live: LiveService) => Promise<void>,
): Promise<void> {
  const dir = await Deno.makeTempDir();
  const config = loadConfig({
    PORT: "0",
    SVC_KV: `${dir}/svc.kv`,
    SVC_REFERENCE_ENGINE_PORT: "0",
    SVC_REFERENCE_ENGINE_DIR: `${dir}/engine`,
    SVC_DEMO_PAGE: "false",
  });
  const service = await compose(config, { logger: silentLogger });
  const kv = await openKv(config.kv);
  let browser: Browser | null = null;
  const sessions: string[] = [];
  let client: ReturnType<typeof createClient> | null = null;
  try {
    const backend = await backendOf(service, kv, options.projectId, options.scopes);
    const sdk = client = backend.client;
    const plaintext = backend.apiKey;
    await fn({
      service,
      client: sdk,
      apiKey: plaintext,
      async session(avatarConfig) {
        const engine = service.referenceEngine!;
        const s = await sdk.createSession({
          provider_type: "external_engine",
          provider_config: {
            external_engine: { url: engine.url, auth_headers: { Authorization: `Bearer ${engine.token}` } },
          },
          avatar_config: avatarConfig,
        });
        sessions.push(s.session_id);
        return s;
      },
      async page(viewport) {
        browser ??= await launchChromium({ media: true });
        const page = await browser.newPage(viewport ? { viewport } : {});
        await page.goto(`${service.url}/docs/errors`); // a page of the service: same origin as the player
        return page;
      },
    });
  } finally {
    await (browser as Browser | null)?.close();
    for (const id of sessions) await client?.endSession(id, { force: true }).catch(() => {});
    kv.close();
    await service.close();
    await Deno.remove(dir, { recursive: true });
  }
}
