/**
 * End to end in a real browser: the service on its embedded defaults (reference engine in-process, real
 * ffmpeg), Debian's Chromium driven headless by Playwright-core with a fake microphone, the demo page
 * and the SDK player. Saves a screenshot to tests/artifacts/demo.png (git-ignored).
 *
 * Every wait is for a condition with a generous deadline, and the checks are about progress (frames
 * decoded, the clock moving, audio decoded), never rates: the machine may be busy.
 */
import assert from "node:assert/strict";
import type { Page } from "playwright-core";
import { launchChromium } from "../../testing/browser.ts";
import { speechLike } from "../../testing/speech_like.ts";
import { encodeWav } from "../../engine/wav.ts";
import { loadConfig } from "../../src/config.ts";
import { createLogger } from "../../src/log.ts";
import { compose as startService, type Service } from "../../src/app/compose.ts";
// The worker side, loaded with this module rather than by compose()'s `await import()` during a test: its
// lip-sync module opens libespeak-ng when first imported, which the resource sanitizer would count as the
// test's own.
import "../../src/app/worker_side.ts";

const ARTIFACTS = new URL("../artifacts/", import.meta.url);
/** Generous: the machine may be busy. */
const DEADLINE_MS = 30_000;

interface Sample {
  frames: number;
  time: number;
  audioBytes: number;
  paused: boolean;
}

const sample = (page: Page) =>
  page.evaluate(`(() => {
    const v = document.querySelector("video");
    return {
      frames: v.getVideoPlaybackQuality().totalVideoFrames,
      time: v.currentTime,
      // Audio decoded: by the player itself (WebCodecs), or by the element (Media Source Extensions).
      audioBytes: globalThis.demoPlayer?.stats().audioDecodedMs ?? v.webkitAudioDecodedByteCount,
      paused: v.paused,
    };
  })()`) as Promise<Sample>;

/** Polls `check` every 100 ms until it returns true; throws with `what` after `DEADLINE_MS`. */
async function until(check: () => Promise<boolean> | boolean, what: string): Promise<void> {
  const deadline = Date.now() + DEADLINE_MS;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out after ${DEADLINE_MS} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** Runs `fn` with the service on its embedded defaults (demo page on) and its logs. */
async function withService(fn: (service: Service, logs: string[]) => Promise<void>): Promise<void> {
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
  try {
    assert.ok(service.demoUrl, "the demo page is served on the embedded defaults");
    await fn(service, logs);
  } finally {
    await service.close();
    await Deno.remove(dir, { recursive: true });
  }
}

/** Opens the demo page; every page error and every answer of 400 or more is collected. */
async function openDemo(page: Page, url: string): Promise<{ errors: string[]; failed: string[] }> {
  const errors: string[] = [];
  const failed: string[] = [];
  page.on("pageerror", (e) => errors.push(String(e)));
  page.on("response", (r) => {
    if (r.status() >= 400) failed.push(`${r.status()} ${r.url()}`);
  });
  await page.goto(url);
  await page.waitForFunction(`document.querySelectorAll("#avatar option").length >= 3`, undefined, {
    timeout: DEADLINE_MS,
  });
  return { errors, failed };
}

Deno.test("browser: the demo page plays the avatar, streams the microphone and ends cleanly", async () => {
  await withService(async (service, logs) => {
    // The microphone says something, then is silent long enough for the engine to answer: the answer's
    // sound starts are what the player measures mouth vs sound on (the greeting began before it joined).
    const wav = await Deno.makeTempFile({ suffix: ".wav" });
    const rate = 48_000;
    const said = speechLike(rate, 1);
    const utterance = new Int16Array(rate * 8);
    utterance.set(said);
    await Deno.writeFile(wav, encodeWav(utterance, rate));
    const browser = await launchChromium({ media: true, microphoneWav: wav });
    try {
      const page = await browser.newPage({ viewport: { width: 900, height: 620 } });
      const { errors, failed } = await openDemo(page, service.demoUrl!);
      await page.selectOption("#avatar", "kai");
      await page.selectOption("#bg", "sunset");
      const clicked = Date.now();
      await page.click("#start");

      // The player reaches "playing" and reports its time to first frame.
      await page.waitForFunction(
        `globalThis.demoPlayer && globalThis.demoPlayer.state().state === "playing"`,
        undefined,
        { timeout: DEADLINE_MS },
      );
      const state = await page.evaluate(`globalThis.demoPlayer.state()`) as {
        ttffMs: number;
        muted: boolean;
      };
      assert.ok(state.ttffMs > 0 && state.ttffMs <= Date.now() - clicked, `ttff ${state.ttffMs}`);
      assert.equal(state.muted, false);

      // Video frames are decoded, the clock moves on, audio is decoded: progress, whatever the pace.
      const a = await sample(page);
      let b = a;
      await until(async () => {
        b = await sample(page);
        return !b.paused && b.frames > a.frames + 20 && b.time > a.time + 1.2 && b.audioBytes > a.audioBytes;
      }, `playback to advance from ${JSON.stringify(a)} (last: ${JSON.stringify(b)})`);

      // The engine received the page's microphone audio (Chromium's fake device).
      const sessionId = await page.evaluate(`document.querySelector("#session").textContent`) as string;
      const engineStats = () =>
        service.referenceEngine!.stats().sessions.find((s) =>
          s.session_id.startsWith(sessionId.replace("…", ""))
        );
      await until(() => (engineStats()?.user_audio_bytes ?? 0) > 0, "the engine to receive microphone audio");
      await until(
        async () => (await page.evaluate(`globalThis.demoPlayer.stats().micFramesSent`) as number) > 10,
        "more than 10 microphone frames sent",
      );
      assert.equal(await page.textContent("#micstate"), "on");
      assert.equal(await page.isChecked("#mic"), true);

      // The live figures next to the avatar: the player's own, and the session's as the service keeps them.
      await page.waitForFunction(
        `/\\d+ ms/.test(document.querySelector("#latency").textContent) &&
          /ms/.test(document.querySelector("#avoffset").textContent) &&
          /ms \\(\\d+\\)$/.test(document.querySelector("#frame_latency").textContent)`,
        undefined,
        { timeout: DEADLINE_MS },
      );
      assert.equal(await page.textContent("#playback"), "webcodecs");

      await Deno.mkdir(ARTIFACTS, { recursive: true });
      await page.screenshot({ path: new URL("demo.png", ARTIFACTS).pathname });

      // Ending the session stops the stream.
      await page.click("#end");
      await page.waitForFunction(
        `document.querySelector("#session").textContent.startsWith("ended")`,
        undefined,
        {
          timeout: DEADLINE_MS,
        },
      );
      const summary = await page.evaluate(`document.querySelector("#session").textContent`) as string;
      assert.match(summary, /^ended, [\d.]+ s, \d+ chunks$/);
      const chunks = Number(summary.match(/(\d+) chunks/)![1]);
      assert.equal(await page.evaluate(`globalThis.demoPlayer.state().state`), "ended");
      // What was already buffered plays out, then the playhead stops for good: wait until it has not
      // moved for a whole second, then check it stays put.
      let still = await sample(page);
      let stillSince = Date.now();
      await until(async () => {
        const s = await sample(page);
        if (s.frames !== still.frames || s.time !== still.time) {
          still = s;
          stillSince = Date.now();
        }
        return Date.now() - stillSince >= 1000;
      }, "the playhead to stop after the end");
      await page.waitForTimeout(500);
      const d = await sample(page);
      assert.equal(d.frames, still.frames, "no more frames after the end");
      assert.equal(d.time, still.time, "the playhead stopped");
      // chunks_rendered counts the video frames rendered and encoded (one fMP4 fragment each, at most 25 a
      // second): at least the 1.2 s of video seen playing above, at most 25 per second of the session.
      const seconds = Number(summary.match(/^ended, ([\d.]+) s/)![1]);
      assert.ok(chunks >= 30 && chunks <= (seconds + 1) * 25, `chunks_rendered ${chunks} over ${seconds} s`);
      await until(() => service.media!.active === 0, "the render slot to be free");
      assert.deepEqual(errors, []);
      assert.deepEqual(failed, [], "every request of the page succeeded (its icon included)");
      const allLogs = logs.join("\n");
      assert.ok(!allLogs.includes(service.referenceEngine!.token), "the engine token is never logged");
      assert.ok(!/svc_sk_/.test(allLogs), "no API key in the logs");
    } finally {
      await browser.close();
      await Deno.remove(wav);
    }
  });
});

Deno.test("browser: with the microphone refused, the demo page says so, unticks the box and plays on", async () => {
  await withService(async (service) => {
    const browser = await launchChromium({ media: true, microphone: "refused" });
    try {
      const page = await browser.newPage();
      const { errors, failed } = await openDemo(page, service.demoUrl!);
      assert.equal(await page.isChecked("#mic"), true, "the microphone is asked for by default");
      await page.click("#start");
      await page.waitForFunction(
        `document.querySelector("#micstate").textContent.includes("refused")`,
        undefined,
        { timeout: DEADLINE_MS },
      );
      assert.equal(await page.textContent("#micstate"), "off: the microphone was refused");
      assert.equal(await page.isChecked("#mic"), false, "the box no longer claims the microphone is on");
      await page.waitForFunction(`document.querySelector("#state").textContent === "playing"`, undefined, {
        timeout: DEADLINE_MS,
      });
      const a = await sample(page);
      await until(async () => {
        const b = await sample(page);
        return !b.paused && b.frames > a.frames && b.time > a.time + 0.5;
      }, "the avatar to play without a microphone");
      await page.click("#end");
      await page.waitForFunction(
        `document.querySelector("#session").textContent.startsWith("ended")`,
        undefined,
        {
          timeout: DEADLINE_MS,
        },
      );
      assert.deepEqual(errors, []);
      assert.deepEqual(failed, []);
    } finally {
      await browser.close();
    }
  });
});
