/**
 * The whole service as `deno task start` composes it (reference engine, real ffmpeg, the demo page) with an SFU
 * configured through the environment, against a real Janus: the demo page picks the transport, `auto` and
 * `webrtc_sfu` play over WebRTC, the reference engine hears the page's microphone, and the end stops it all.
 */
import assert from "node:assert/strict";
import { compose } from "../../src/app/compose.ts";
// The worker side, loaded with this module rather than by compose()'s `await import()` during a test: its
// lip-sync module opens libespeak-ng when first imported, which the resource sanitizer would count as the
// test's own.
import "../../src/app/worker_side.ts";
import { loadConfig } from "../../src/config.ts";
import { createLogger } from "../../src/log.ts";
import { launchChromium } from "../../testing/browser.ts";
import { startJanus } from "../../testing/janus.ts";

Deno.test("sfu demo: the demo page picks webrtc_sfu, plays over WebRTC, streams the mic to the reference engine, ends cleanly", async () => {
  const dir = await Deno.makeTempDir();
  const janus = await startJanus();
  const logs: string[] = [];
  let service: Awaited<ReturnType<typeof compose>> | null = null;
  const browser = await launchChromium({ media: true, webrtc: true });
  try {
    service = await compose(
      loadConfig({
        PORT: "0",
        SVC_KV: `${dir}/svc.kv`,
        SVC_REFERENCE_ENGINE_PORT: "0",
        SVC_REFERENCE_ENGINE_DIR: `${dir}/engine`,
        SVC_SFU_JANUS_URL: janus.url,
        SVC_SFU_ADMIN_SECRET: janus.secret,
      }),
      { logger: createLogger({ sink: (l) => logs.push(l) }) },
    );
    assert.ok(service.demoUrl);
    assert.ok(service.media?.serves("webrtc_sfu"), "the SFU is configured from the environment");
    const page = await browser.newPage();
    const errors: string[] = [];
    page.on("pageerror", (e) => errors.push(String(e)));
    await page.goto(service.demoUrl);
    await page.waitForFunction(`document.querySelectorAll("#avatar option").length >= 3`);
    await page.selectOption("#transport", "webrtc_sfu");
    await page.click("#start");
    await page.waitForFunction(`globalThis.demoPlayer?.state().state === "playing"`, undefined, {
      timeout: 30_000,
    });
    assert.match(await page.evaluate(`document.querySelector("#log").textContent`) as string, /webrtc_sfu/);
    assert.ok(
      await page.evaluate(`document.querySelector("video").srcObject instanceof MediaStream`),
      "played through WebRTC (a MediaStream), not Media Source Extensions",
    );
    const frames = () =>
      page.evaluate(`document.querySelector("video").getVideoPlaybackQuality().totalVideoFrames`) as Promise<
        number
      >;
    const before = await frames();
    await page.waitForFunction(
      `document.querySelector("video").getVideoPlaybackQuality().totalVideoFrames > ${before + 25}`,
      undefined,
      { timeout: 30_000 },
    );
    const sessionId = (await page.evaluate(`document.querySelector("#session").textContent`) as string)
      .replace("…", "");
    const engineStats = () =>
      service!.referenceEngine!.stats().sessions.find((s) => s.session_id.startsWith(sessionId));
    const deadline = Date.now() + 20_000;
    while ((engineStats()?.user_audio_bytes ?? 0) === 0 && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 100));
    }
    assert.ok((engineStats()?.user_audio_bytes ?? 0) > 0, "the reference engine received the microphone");
    await page.click("#end");
    await page.waitForFunction(
      `document.querySelector("#session").textContent.startsWith("ended")`,
      undefined,
      {
        timeout: 20_000,
      },
    );
    assert.equal(await page.evaluate(`globalThis.demoPlayer.state().state`), "ended");
    assert.equal(service.media!.active, 0, "the render slot is free");
    assert.deepEqual(errors, []);
    const all = logs.join("\n");
    assert.ok(!all.includes(janus.secret), "the SFU secret is never logged");
  } finally {
    await browser.close();
    await service?.close();
    await janus.stop();
    await Deno.remove(dir, { recursive: true });
  }
});
