/**
 * The SDK's browser player (`sdk/player.js`) on its own, in Debian's Chromium: a page of the service loads
 * it and plays a live session created by a backend (this test) through the SDK client.
 *
 * - When its client token has expired it asks the app for a fresh one (`refreshToken`), reconnects to the
 *   same session, and the stale close reason goes once it plays again.
 * - It plays whatever the order of the browser's events, and never reports `playing` while the element
 *   is paused.
 * - A `refreshToken` that resolves to the wrong shape fails the player with a message saying so (never a
 *   connection with a token of "undefined").
 * - A refused microphone is reported (`microphoneError`), and the avatar plays on.
 */
import assert from "node:assert/strict";
import type { Browser, Page } from "playwright-core";
import { launchChromium, PLAYER_STATS_KEYS } from "../../testing/browser.ts";
import { type Client, createClient, type CreatedSession } from "@avatar-svc/sdk";
import { TokenService } from "../../src/auth/tokens.ts";
import { OffsetClock } from "../../src/clock.ts";
import { loadConfig } from "../../src/config.ts";
import { createApiKey } from "../../src/kv/api_keys.ts";
import { silentLogger } from "../../src/log.ts";
import { compose as startService, openKv, type Service } from "../../src/app/compose.ts";
// The worker side, loaded with this module rather than by compose()'s `await import()` during a test: its
// lip-sync module opens libespeak-ng when first imported, which the resource sanitizer would count as the
// test's own.
import "../../src/app/worker_side.ts";
import { generateEngineTls } from "../../engine/mod.ts";
import { type RealtimeEngine, startRealtimeEngine } from "../../testing/realtime_engine.ts";
import { vowelBurst } from "../../bench/engine.ts";

const SECRET = "player-test-secret-0123456789abcdef0123456789";
/** Generous: the machine may be busy. */
const DEADLINE_MS = 30_000;
/** 400 ms of "ah" (espeak-ng, opened outside the tests: the sanitizer would count the library as a test's). */
const AH = vowelBurst(400);
/** The page's document: the functions passed to `page.evaluate` run in the browser. */
// deno-lint-ignore no-explicit-any
declare const document: any;

interface Context {
  service: Service;
  backend: Client;
  /**
   * Creates a session on the in-process reference engine (it greets, then answers what it hears), or with
   * `"realtime"` on an engine that says nothing until the test makes it speak (`realtime.talk`).
   */
  session(engine?: "reference" | "realtime"): Promise<CreatedSession>;
  /** The strictly real-time engine of `session("realtime")`. */
  realtime: RealtimeEngine;
  /** A client token for `sessionId` that expired ten minutes ago. */
  expiredToken(sessionId: string): Promise<string>;
  /** A fresh page of the service's origin (so `/sdk/player.js` imports), with `pageerror`s collected. */
  page(options?: { microphone?: "granted" | "refused" }): Promise<{ page: Page; errors: string[] }>;
}

/** Runs `fn` with a service, a backend client and Chromium; closes everything afterwards. */
async function withPlayer(fn: (ctx: Context) => Promise<void>): Promise<void> {
  const dir = await Deno.makeTempDir();
  const tls = await generateEngineTls();
  const config = loadConfig({
    PORT: "0",
    SVC_KV: `${dir}/svc.kv`,
    SVC_REFERENCE_ENGINE_PORT: "0",
    SVC_REFERENCE_ENGINE_DIR: `${dir}/engine`,
    SVC_TOKEN_SECRET: SECRET,
    SVC_DEMO_PAGE: "false",
  });
  const service = await startService(config, { logger: silentLogger, caCerts: [tls.caPem] });
  const kv = await openKv(config.kv);
  const realtime = startRealtimeEngine({ tls });
  const browsers: Browser[] = [];
  const sessions: string[] = [];
  let backend: Client | null = null;
  try {
    const { plaintext } = await createApiKey(kv, {
      projectId: "proj_player",
      name: "backend",
      scopes: ["sessions:read", "sessions:write"],
      now: Date.now(),
      createdBy: "bootstrap",
    });
    // The app's backend, with the SDK client.
    const client = createClient({ baseUrl: service.url!, apiKey: plaintext });
    backend = client;
    const engine = service.referenceEngine!;
    await fn({
      service,
      backend: client,
      realtime,
      async session(kind = "reference") {
        const s = await client.createSession({
          provider_type: "external_engine",
          provider_config: {
            external_engine: kind === "realtime"
              ? { url: realtime.url, auth_headers: {} }
              : { url: engine.url, auth_headers: { Authorization: `Bearer ${engine.token}` } },
          },
        });
        sessions.push(s.session_id);
        return s;
      },
      async expiredToken(sessionId) {
        const past = new OffsetClock();
        past.advance(-15 * 60_000);
        const t = await new TokenService({ current: SECRET, previous: null }, past).mint(
          sessionId,
          "proj_player",
          "client",
        );
        return t.token;
      },
      async page(options = {}) {
        const browser = await launchChromium({ media: true, microphone: options.microphone ?? "granted" });
        browsers.push(browser);
        const page = await browser.newPage();
        const errors: string[] = [];
        page.on("pageerror", (e) => errors.push(String(e)));
        await page.goto(`${service.url}/docs/errors`); // any page of the service: same origin as the player
        return { page, errors };
      },
    });
  } finally {
    for (const b of browsers) await b.close();
    // sessions a failed test left running
    for (const id of sessions) await backend?.endSession(id, { force: true }).catch(() => {});
    kv.close();
    await service.close();
    await realtime.close();
    await Deno.remove(dir, { recursive: true });
  }
}

/**
 * Starts a player in the page on `mediaUrl`. Every state it reports is recorded in `globalThis.states`
 * with whether the `<video>` was paused at that moment.
 */
async function startPlayer(
  page: Page,
  args: { mediaUrl: string; clientToken: string; playback?: "auto" | "mse" | "webcodecs" },
): Promise<void> {
  await page.evaluate(async ({ mediaUrl, clientToken, playback }) => {
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
      playback: playback ?? "auto",
      // deno-lint-ignore no-explicit-any
      onState: (s: any) => g.states.push({ ...s, paused: video.paused }),
      refreshToken: () => g.freshToken(),
    });
  }, { playback: "auto" as const, ...args });
}

/** Waits until the player is `playing` and the element's clock and decoded frames move on. */
async function waitPlaying(page: Page): Promise<void> {
  await page.waitForFunction('globalThis.player.state().state === "playing"', undefined, {
    timeout: DEADLINE_MS,
  });
  const at = await page.evaluate(() => {
    const v = document.querySelector("video")!;
    return { time: v.currentTime, frames: v.getVideoPlaybackQuality().totalVideoFrames };
  });
  await page.waitForFunction(
    (a: { time: number; frames: number }) => {
      const v = document.querySelector("video")!;
      return !v.paused && v.currentTime > a.time + 0.5 &&
        v.getVideoPlaybackQuality().totalVideoFrames > a.frames;
    },
    at,
    { timeout: DEADLINE_MS },
  );
}

type Recorded =
  & { state: string; paused: boolean; reason?: string; closeCode?: number }
  & Record<
    string,
    unknown
  >;

const recorded = (page: Page) => page.evaluate("globalThis.states") as Promise<Recorded[]>;

/** `playing` is only ever reported while the element plays. */
function assertNeverPlayingWhilePaused(states: Recorded[]): void {
  for (const s of states) {
    if (s.state === "playing") {
      assert.equal(s.paused, false, `reported playing while paused: ${JSON.stringify(s)}`);
    }
  }
}

for (const playback of ["webcodecs", "mse"] as const) {
  Deno.test(`sdk player (${playback}): an expired token makes it ask for a fresh one, then it plays the same session`, async () => {
    await withPlayer(async ({ backend, session: newSession, expiredToken, page: newPage }) => {
      const session = await newSession();
      const { page, errors } = await newPage();
      let refreshes = 0;
      await page.exposeFunction("freshToken", async () => {
        refreshes++;
        const t = await backend.createClientToken(session.session_id);
        return { clientToken: t.client_token };
      });
      await startPlayer(page, {
        mediaUrl: session.stream_metadata.media_url!,
        clientToken: await expiredToken(session.session_id),
        playback,
      });
      await waitPlaying(page);
      const states = await recorded(page);
      const result = await page.evaluate(
        "({ state: globalThis.player.state(), stats: globalThis.player.stats() })",
      ) as {
        state: Recorded & { ttffMs: number };
        stats: { reconnects: number; bytesReceived: number; playback: string };
      };
      assert.ok(refreshes >= 1, "the player asked the app for a fresh token");
      const last = states.findLastIndex((s) => s.state === "reconnecting");
      assert.ok(last >= 0, `states: ${states.map((s) => s.state).join(" → ")}`);
      assert.equal(states[last].closeCode, 4401, "the expired token was the reason");
      const playing = states.slice(last + 1).find((s) => s.state === "playing");
      assert.ok(playing, `playing after the reconnection: ${states.map((s) => s.state).join(" → ")}`);
      assert.ok((playing.ttffMs as number) > 0, "time to first frame reported");
      assert.equal(playing.reason, undefined, "the stale close reason is gone once it plays again");
      assert.equal(playing.closeCode, undefined, "the stale close code is gone once it plays again");
      // (a live stream may stall for a moment on a busy machine: buffering, then playing again)
      assert.ok(["playing", "buffering"].includes(result.state.state), result.state.state);
      assert.equal(result.state.reason, undefined);
      assert.equal(result.state.closeCode, undefined);
      assert.ok(result.stats.reconnects >= 1);
      assert.ok(result.stats.bytesReceived > 0);
      assert.equal(result.stats.playback, playback);
      assertNeverPlayingWhilePaused(states);
      // It is the same session, still active.
      assert.equal((await backend.getSession(session.session_id)).status, "active");
      await page.evaluate("globalThis.player.close()");
      await backend.endSession(session.session_id);
      assert.deepEqual(errors, []);
    });
  });
}

Deno.test("sdk player (mse): plays when the first video frame is shown before any audio is buffered", async () => {
  await withPlayer(async ({ backend, session: newSession, page: newPage }) => {
    const session = await newSession();
    const { page, errors } = await newPage();
    // The audio fragments of the first 800 ms reach the player late (as when the audio encoder starts
    // slowly on a busy machine): the first video frame is decoded and shown while nothing is playable yet,
    // and only a later append makes audio and video both buffered.
    await page.evaluate(() => {
      const Base = globalThis.WebSocket;
      // deno-lint-ignore no-explicit-any
      (globalThis as any).WebSocket = class extends Base {
        override set onmessage(fn: ((e: MessageEvent) => void) | null) {
          const releaseAt = performance.now() + 800;
          const held: MessageEvent[] = [];
          const isAudio = (data: unknown) =>
            data instanceof ArrayBuffer && data.byteLength > 48 &&
            new TextDecoder().decode(new Uint8Array(data, 4, 4)) === "moof" &&
            new DataView(data).getUint32(44) !== 1; // tfhd track_ID (1 is the video track)
          const flush = () => held.splice(0).forEach((m) => fn?.call(this, m));
          super.onmessage = (e: MessageEvent) => {
            if (performance.now() < releaseAt && isAudio(e.data)) {
              if (held.push(e) === 1) setTimeout(flush, releaseAt - performance.now());
              return;
            }
            if (performance.now() >= releaseAt) flush();
            fn?.call(this, e);
          };
        }
      };
    });
    await startPlayer(page, {
      mediaUrl: session.stream_metadata.media_url!,
      clientToken: session.client_token,
      playback: "mse",
    });
    await waitPlaying(page);
    assertNeverPlayingWhilePaused(await recorded(page));
    await page.evaluate("globalThis.player.close()");
    await backend.endSession(session.session_id);
    assert.deepEqual(errors, []);
  });
});

Deno.test("sdk player: a refreshToken answer of the wrong shape fails it with a message saying so", async () => {
  await withPlayer(async ({ backend, session: newSession, expiredToken, page: newPage, service }) => {
    const session = await newSession();
    const { page, errors } = await newPage();
    const fresh = await backend.createClientToken(session.session_id);
    // The API's own field name instead of the player's `clientToken`: an easy slip.
    await page.exposeFunction("freshToken", () => ({ client_token: fresh.client_token }));
    await startPlayer(page, {
      mediaUrl: session.stream_metadata.media_url!,
      clientToken: await expiredToken(session.session_id),
    });
    await page.waitForFunction('globalThis.player.state().state === "failed"', undefined, {
      timeout: DEADLINE_MS,
    });
    const states = await recorded(page);
    const failed = states.at(-1)!;
    assert.match(
      failed.reason!,
      /^refreshToken\(\) must resolve to \{ clientToken: string, mediaUrl\?: string \}.*it resolved to an object with the keys client_token$/,
    );
    assert.ok(!failed.reason!.includes(fresh.client_token), "the token itself is not in the message");
    assert.equal(failed.closeCode, 4401, "the close that led to the refresh");
    assert.ok(!states.some((s) => s.closeCode === 4403), "no connection was tried with a bad token");
    assert.equal(service.media!.active, 1, "the session itself is untouched");
    await backend.endSession(session.session_id);
    assert.deepEqual(errors, []);
  });
});

Deno.test("sdk player: a refused microphone is reported, and the avatar plays on", async () => {
  await withPlayer(async ({ backend, session: newSession, page: newPage }) => {
    const session = await newSession();
    const { page, errors } = await newPage({ microphone: "refused" });
    await startPlayer(page, {
      mediaUrl: session.stream_metadata.media_url!,
      clientToken: session.client_token,
    });
    await waitPlaying(page);
    await page.waitForFunction("globalThis.player.state().microphoneError !== undefined", undefined, {
      timeout: DEADLINE_MS,
    });
    const state = await page.evaluate("globalThis.player.state()") as Recorded;
    assert.equal(state.microphone, false);
    assert.equal(state.microphoneError, "the microphone was refused");
    assert.ok(["playing", "buffering"].includes(state.state), state.state);
    assert.equal(state.reason, undefined, "a refused microphone is not a reason to stop");
    const states = await recorded(page);
    assert.ok(!states.some((s) => s.state === "failed" || s.state === "ended"), "it played on");
    assertNeverPlayingWhilePaused(states);
    await page.evaluate("globalThis.player.close()");
    await backend.endSession(session.session_id);
    assert.deepEqual(errors, []);
  });
});

Deno.test("sdk player: invalid options throw a TypeError at once, never echoing a token", async () => {
  // (imported without its DOM types: only the option checks run here, before anything touches a browser API)
  const { createPlayer } = await import(new URL("../../sdk/player.js", import.meta.url).href);
  const video = { play: () => Promise.resolve() };
  const ok = { video, mediaUrl: "wss://svc.example/media/v0/sessions/session:x", clientToken: "tok" };
  const cases: [Record<string, unknown>, RegExp][] = [
    [{ ...ok, video: undefined }, /video must be a <video> element/],
    [
      { ...ok, mediaUrl: undefined },
      /mediaUrl must be the session's ws:\/\/ or wss:\/\/ media URL.*got undefined/,
    ],
    [{ ...ok, mediaUrl: "https://svc.example/x" }, /mediaUrl .* got a string of the wrong form/],
    [{ ...ok, clientToken: "" }, /clientToken must be the session's client_token; got an empty string/],
    [{ ...ok, clientToken: { client_token: "secret-token" } }, /got an object with the keys client_token$/],
    [{ ...ok, refreshToken: "later" }, /refreshToken must be a function/],
    [
      { ...ok, outputLatencyMs: -5 },
      /outputLatencyMs must be a number of ms from 0 to 1000, or "read"; got -5$/,
    ],
    [{ ...ok, outputLatencyMs: 1001 }, /outputLatencyMs .* got 1001$/],
    [{ ...ok, outputLatencyMs: Number.NaN }, /outputLatencyMs .* got NaN$/],
    [{ ...ok, outputLatencyMs: "40" }, /outputLatencyMs .* got a string of the wrong form$/],
    [{ ...ok, outputLatencyMs: null }, /outputLatencyMs .* got null$/],
  ];
  for (const [options, message] of cases) {
    assert.throws(
      () => createPlayer(options),
      (err: Error) =>
        err instanceof TypeError && message.test(err.message) && !err.message.includes("secret"),
      JSON.stringify(Object.keys(options)),
    );
  }
});

/** The player's stats in the page. */
// deno-lint-ignore no-explicit-any
const stats = (page: Page) => page.evaluate("globalThis.player.stats()") as Promise<any>;

Deno.test("sdk player (webcodecs): the sound on an AudioContext, frames shown against it, its figures measured and reported to the service", async () => {
  await withPlayer(async ({ backend, session: newSession, page: newPage, realtime }) => {
    // (an engine that speaks when told: mouth vs sound is measured at each sound start the player hears)
    const session = await newSession("realtime");
    const { page, errors } = await newPage();
    await page.exposeFunction("freshToken", () => Promise.reject(new Error("not needed")));
    await startPlayer(page, {
      mediaUrl: session.stream_metadata.media_url!,
      clientToken: session.client_token,
    });
    await waitPlaying(page);
    assert.ok(realtime.sessions.has(session.session_id), "a running session's engine is connected");
    const talking = realtime.talk(session.session_id, { pcm: AH, bursts: 10, gapMs: 600, spreadMs: 40 });
    talking.catch(() => {}); // (awaited below; a failure before that closes the engine)
    // Sound decoded and played, frames shown, each measured against the service's clock and its sound.
    await page.waitForFunction(
      `(() => { const s = globalThis.player.stats(); return s.audioDecodedMs > 500 && s.avOffsetMs !== null && s.latencyMs > 0; })()`,
      undefined,
      { timeout: DEADLINE_MS },
    );
    const st = await stats(page);
    assert.equal(st.playback, "webcodecs");
    assert.deepEqual(
      Object.keys(st).sort(),
      PLAYER_STATS_KEYS,
      "the same stats on every transport (sdk/player.d.ts PlayerStats)",
    );
    assert.ok(
      st.anchorMs !== null && st.anchorMs > 0,
      `the sound plays behind the service's clock: ${st.anchorMs}`,
    );
    // The element shows what the player decoded (through a MediaStream of its own).
    assert.ok(await page.evaluate(`document.querySelector("video").srcObject instanceof MediaStream`));
    // What it measured reaches the service (a report every 2 s).
    let m = await backend.getSessionMetrics(session.session_id);
    const deadline = Date.now() + DEADLINE_MS;
    while ((m.first_frame_ms === null || m.av_offset_ms.count === 0) && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 200));
      m = await backend.getSessionMetrics(session.session_id);
    }
    assert.deepEqual(m.playback, ["webcodecs"]);
    assert.ok(m.first_frame_ms !== null && m.first_frame_ms > 0, `first frame ${m.first_frame_ms}`);
    assert.ok(m.frame_latency_ms.count > 0 && m.av_offset_ms.count > 0, JSON.stringify(m));
    await talking;
    await page.evaluate("globalThis.player.close()");
    await backend.endSession(session.session_id);
    assert.deepEqual(errors, []);
  });
});

for (const playback of ["webcodecs", "mse"] as const) {
  Deno.test(`sdk player (${playback}): after a 2 s stall it skips what is past, plays at the live edge again and says so`, async () => {
    await withPlayer(async ({ backend, session: newSession, page: newPage }) => {
      const session = await newSession();
      const { page, errors } = await newPage();
      await page.exposeFunction("freshToken", () => Promise.reject(new Error("not needed")));
      // The page's network stalls on demand: every message of the media socket is held, then all delivered.
      await page.evaluate(() => {
        const Base = globalThis.WebSocket;
        // deno-lint-ignore no-explicit-any
        const g = globalThis as any;
        g.stallUntil = 0;
        g.WebSocket = class extends Base {
          override set onmessage(fn: ((e: MessageEvent) => void) | null) {
            const held: MessageEvent[] = [];
            let timer: ReturnType<typeof setTimeout> | null = null;
            super.onmessage = (e: MessageEvent) => {
              const wait = g.stallUntil - performance.now();
              if (wait > 0) {
                held.push(e);
                if (!timer) {
                  timer = setTimeout(() => {
                    timer = null;
                    held.splice(0).forEach((m) => fn?.call(this, m));
                  }, wait);
                }
                return;
              }
              fn?.call(this, e);
            };
          }
        };
      });
      await startPlayer(page, {
        mediaUrl: session.stream_metadata.media_url!,
        clientToken: session.client_token,
        playback,
      });
      await waitPlaying(page);
      // Playing at the live edge: the WebCodecs player's sound on its clock (its anchor set), the pictures
      // on time (before the anchor nothing can be behind: there is nothing to skip).
      await page.waitForFunction(
        `(() => { const s = globalThis.player.stats();
          return s.latencyMs > 0 && (s.playback === "mse" || s.anchorMs !== null); })()`,
        undefined,
        { timeout: DEADLINE_MS },
      );
      const before = await stats(page);
      await page.evaluate("globalThis.stallUntil = performance.now() + 2000");
      // After the stall it catches up (skips what is past) and says so in its stats. (On a starved machine
      // the player may also stall and catch up on its own, skipping less, before the held media arrives:
      // wait for the skip of the network stall, not for the first catch-up.)
      await page.waitForFunction(
        (b: { stalls: number; catchUps: number; skippedMs: number }) => {
          // deno-lint-ignore no-explicit-any
          const s = (globalThis as any).player.stats();
          return s.stalls > b.stalls && s.catchUps > b.catchUps && s.skippedMs >= b.skippedMs + 500;
        },
        { stalls: before.stalls, catchUps: before.catchUps, skippedMs: before.skippedMs },
        { timeout: DEADLINE_MS },
      ).catch(async (e) => {
        throw new Error(
          `no catch-up skipping >= 500 ms after the stall: ${JSON.stringify(await stats(page))}`,
          {
            cause: e,
          },
        );
      });
      const after = await stats(page);
      assert.ok(after.skippedMs >= before.skippedMs + 500, `skipped ${after.skippedMs} ms of late media`);
      if (playback === "webcodecs") {
        assert.ok(after.lastCatchUpMs !== null, "the time back to the live edge is measured");
      }
      // Playing again: frames advance and the player is back in `playing`; the service hears of the stall.
      await waitPlaying(page);
      let m = await backend.getSessionMetrics(session.session_id);
      const deadline = Date.now() + DEADLINE_MS;
      while (m.catch_ups.count === 0 && Date.now() < deadline) {
        await new Promise((r) => setTimeout(r, 200));
        m = await backend.getSessionMetrics(session.session_id);
      }
      assert.ok(m.stalls.count >= 1 && m.catch_ups.count >= 1, JSON.stringify(m));
      await page.evaluate("globalThis.player.close()");
      await backend.endSession(session.session_id);
      assert.deepEqual(errors, []);
    });
  });
}
