/**
 * The SDK's browser player (`sdk/player.js`) on its own, in Debian's Chromium: a page of the service loads
 * it, plays a live session created by a backend (this test) through the SDK client, and when its client
 * token has expired asks the app for a fresh one (`refreshToken`) and reconnects to the same session.
 */
import assert from "node:assert/strict";
import { launchChromium } from "../helpers/browser.ts";
import { createClient } from "@avatar-svc/sdk";
import { TokenService } from "../../src/auth/tokens.ts";
import { OffsetClock } from "../../src/clock.ts";
import { loadConfig } from "../../src/config.ts";
import { createApiKey } from "../../src/kv/api_keys.ts";
import { silentLogger } from "../../src/log.ts";
import { compose as startService, openKv } from "../../src/app/compose.ts";

const SECRET = "player-test-secret-0123456789abcdef0123456789";
/** The page's document: the functions passed to `page.evaluate` run in the browser. */
// deno-lint-ignore no-explicit-any
declare const document: any;

Deno.test("sdk player: an expired token makes it ask for a fresh one, then it plays the same session", async () => {
  const dir = await Deno.makeTempDir();
  const config = loadConfig({
    PORT: "0",
    SVC_KV: `${dir}/svc.kv`,
    SVC_REFERENCE_ENGINE_PORT: "0",
    SVC_REFERENCE_ENGINE_DIR: `${dir}/engine`,
    SVC_TOKEN_SECRET: SECRET,
    SVC_DEMO_PAGE: "false",
  });
  const service = await startService(config, { logger: silentLogger });
  const kv = await openKv(config.kv);
  const browser = await launchChromium({ media: true });
  try {
    const { plaintext } = await createApiKey(kv, {
      projectId: "proj_player",
      name: "backend",
      scopes: ["sessions:read", "sessions:write"],
      now: Date.now(),
      createdBy: "bootstrap",
    });
    // The app's backend, with the SDK client.
    const backend = createClient({ baseUrl: service.url!, apiKey: plaintext });
    const engine = service.referenceEngine!;
    const session = await backend.createSession({
      provider_type: "external_engine",
      provider_config: {
        external_engine: { url: engine.url, auth_headers: { Authorization: `Bearer ${engine.token}` } },
      },
    });
    // A token for this very session, signed with the service's secret, that expired ten minutes ago.
    const past = new OffsetClock();
    past.advance(-15 * 60_000);
    const expired = await new TokenService({ current: SECRET, previous: null }, past).mint(
      session.session_id,
      "proj_player",
      "client",
    );

    const page = await browser.newPage();
    const errors: string[] = [];
    page.on("pageerror", (e) => errors.push(String(e)));
    let refreshes = 0;
    await page.exposeFunction("freshToken", async () => {
      refreshes++;
      const t = await backend.createClientToken(session.session_id);
      return { clientToken: t.client_token };
    });
    await page.goto(`${service.url}/docs/errors`); // any page of the service: same origin as /sdk/player.js
    await page.evaluate(async ({ mediaUrl, clientToken }) => {
      const { createPlayer } = await import("/sdk/player.js");
      const video = document.createElement("video");
      video.muted = true;
      document.body.append(video);
      // deno-lint-ignore no-explicit-any
      const g = globalThis as any;
      g.states = [];
      g.player = createPlayer({
        video,
        mediaUrl,
        clientToken,
        // deno-lint-ignore no-explicit-any
        onState: (s: any) => g.states.push(s.state),
        refreshToken: () => g.freshToken(),
      });
    }, { mediaUrl: session.stream_metadata.media_url!, clientToken: expired.token });

    await page.waitForFunction(
      // deno-lint-ignore no-explicit-any
      () => (globalThis as any).player.state().state === "playing",
      undefined,
      { timeout: 20_000 },
    );
    const result = await page.evaluate(() => {
      // deno-lint-ignore no-explicit-any
      const g = globalThis as any;
      const v = document.querySelector("video")!;
      return {
        states: g.states as string[],
        state: g.player.state(),
        stats: g.player.stats(),
        frames: v.getVideoPlaybackQuality().totalVideoFrames,
      };
    });
    assert.ok(refreshes >= 1, "the player asked the app for a fresh token");
    assert.ok(result.states.includes("reconnecting"), `states: ${result.states.join(" → ")}`);
    assert.equal(result.state.state, "playing");
    assert.ok(result.state.ttffMs > 0, "time to first frame reported");
    assert.ok(result.stats.reconnects >= 1);
    assert.ok(result.stats.bytesReceived > 0);
    // It is the same session, still active.
    assert.equal((await backend.getSession(session.session_id)).status, "active");
    await page.waitForFunction(
      (n: number) => document.querySelector("video")!.getVideoPlaybackQuality().totalVideoFrames > n + 10,
      result.frames,
      { timeout: 10_000 },
    );
    // deno-lint-ignore no-explicit-any
    await page.evaluate(() => (globalThis as any).player.close());
    await backend.endSession(session.session_id);
    assert.deepEqual(errors, []);
  } finally {
    await browser.close();
    kv.close();
    await service.close();
    await Deno.remove(dir, { recursive: true });
  }
});
