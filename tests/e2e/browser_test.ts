/**
 * End to end in a real browser: the service on its embedded defaults (reference engine in-process, real
 * ffmpeg), Debian's Chromium driven headless by Playwright-core with a fake microphone, the demo page
 * and the SDK player. Saves a screenshot to tests/artifacts/demo.png (git-ignored).
 */
import assert from "node:assert/strict";
import { launchChromium } from "../helpers/browser.ts";
import { loadConfig } from "../../src/config.ts";
import { createLogger } from "../../src/log.ts";
import { compose as startService } from "../../src/app/compose.ts";

const ARTIFACTS = new URL("../artifacts/", import.meta.url);

Deno.test("browser: the demo page plays the avatar, streams the microphone and ends cleanly", async () => {
  const dir = await Deno.makeTempDir();
  const logs: string[] = [];
  const service = await startService(
    loadConfig({
      PORT: "0",
      SVC_KV: `${dir}/svc.kv`,
      SVC_REFERENCE_ENGINE_PORT: "0",
      SVC_REFERENCE_ENGINE_DIR: `${dir}/engine`,
    }),
    { logger: createLogger({ sink: (l) => logs.push(l) }) },
  );
  const browser = await launchChromium({ media: true });
  try {
    assert.ok(service.demoUrl, "the demo page is served on the embedded defaults");
    const page = await browser.newPage({ viewport: { width: 900, height: 620 } });
    const errors: string[] = [];
    page.on("pageerror", (e) => errors.push(String(e)));
    await page.goto(service.demoUrl);
    await page.waitForFunction(`document.querySelectorAll("#avatar option").length >= 3`);
    await page.selectOption("#avatar", "kai");
    await page.selectOption("#bg", "sunset");
    await page.click("#start");

    // The player reaches "playing" and reports its time to first frame.
    await page.waitForFunction(
      () => {
        // deno-lint-ignore no-explicit-any
        const p = (globalThis as any).demoPlayer;
        return p && p.state().state === "playing";
      },
      undefined,
      { timeout: 15_000 },
    );
    // deno-lint-ignore no-explicit-any
    const state = await page.evaluate(() => (globalThis as any).demoPlayer.state());
    assert.ok(state.ttffMs > 0 && state.ttffMs < 10_000, `ttff ${state.ttffMs}`);
    assert.equal(state.muted, false);

    const sample = () =>
      page.evaluate(`(() => {
        const v = document.querySelector("video");
        return {
          frames: v.getVideoPlaybackQuality().totalVideoFrames,
          time: v.currentTime,
          audioBytes: v.webkitAudioDecodedByteCount,
          paused: v.paused,
        };
      })()`) as Promise<{ frames: number; time: number; audioBytes: number; paused: boolean }>;
    const a = await sample();
    await new Promise((r) => setTimeout(r, 2000));
    const b = await sample();
    assert.ok(!b.paused, "playing");
    assert.ok(b.frames > a.frames + 20, `video frames decoded and advancing: ${a.frames} → ${b.frames}`);
    assert.ok(b.time > a.time + 1.2, `currentTime advancing: ${a.time} → ${b.time}`);
    assert.ok(
      b.audioBytes > a.audioBytes && b.audioBytes > 0,
      `audio decoded: ${a.audioBytes} → ${b.audioBytes}`,
    );

    // The engine received the page's microphone audio (Chromium's fake device).
    const sessionId = await page.evaluate(`document.querySelector("#session").textContent`) as string;
    const engineStats = () =>
      service.referenceEngine!.stats().sessions.find((s) =>
        s.session_id.startsWith(sessionId.replace("…", ""))
      );
    const deadline = Date.now() + 5000;
    while ((engineStats()?.user_audio_bytes ?? 0) === 0 && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 100));
    }
    assert.ok((engineStats()?.user_audio_bytes ?? 0) > 0, "the engine received microphone audio");
    // deno-lint-ignore no-explicit-any
    const stats = await page.evaluate(() => (globalThis as any).demoPlayer.stats());
    assert.ok(stats.micFramesSent > 10, `mic frames sent: ${stats.micFramesSent}`);

    await Deno.mkdir(ARTIFACTS, { recursive: true });
    await page.screenshot({ path: new URL("demo.png", ARTIFACTS).pathname });

    // Ending the session stops the stream.
    await page.click("#end");
    await page.waitForFunction(
      `document.querySelector("#session").textContent.startsWith("ended")`,
      undefined,
      {
        timeout: 15_000,
      },
    );
    const summary = await page.evaluate(`document.querySelector("#session").textContent`) as string;
    assert.match(summary, /^ended, [\d.]+ s, \d+ chunks$/);
    const chunks = Number(summary.match(/(\d+) chunks/)![1]);
    // deno-lint-ignore no-explicit-any
    assert.equal(await page.evaluate(() => (globalThis as any).demoPlayer.state().state), "ended");
    // (the few hundred ms already buffered play out, then nothing more arrives)
    await new Promise((r) => setTimeout(r, 1500));
    const c = await sample();
    await new Promise((r) => setTimeout(r, 1000));
    const d = await sample();
    assert.equal(d.frames, c.frames, "no more frames after the end");
    assert.equal(d.time, c.time, "the playhead stopped");
    // chunks_rendered counts the video frames rendered and encoded (one fMP4 fragment each, 25 a second):
    // at least the 1.2 s of video seen playing above, at most 25 per second of the session's duration.
    const seconds = Number(summary.match(/^ended, ([\d.]+) s/)![1]);
    assert.ok(chunks >= 30 && chunks <= (seconds + 1) * 25, `chunks_rendered ${chunks} over ${seconds} s`);
    assert.equal(service.media!.active, 0, "the render slot is free");
    assert.deepEqual(errors, []);
    const allLogs = logs.join("\n");
    assert.ok(!allLogs.includes(service.referenceEngine!.token), "the engine token is never logged");
    assert.ok(!/svc_sk_/.test(allLogs), "no API key in the logs");
  } finally {
    await browser.close();
    await service.close();
    await Deno.remove(dir, { recursive: true });
  }
});
