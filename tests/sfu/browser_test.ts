/**
 * The `webrtc_sfu` transport end to end in Debian's Chromium, through a real Janus (and coturn): the SDK
 * player (`createPlayer` with the session's `stream_metadata`) plays the avatar over WebRTC — frames advance,
 * the audio is decoded, the mouth opens with speech — the fake microphone reaches the engine, barge-in cuts
 * the speech, TURN relays, an expired token is refreshed, and a Janus restart is survived.
 */
import assert from "node:assert/strict";
import type { Browser, Page } from "playwright-core";
import { TokenService } from "../../src/auth/tokens.ts";
import { OffsetClock } from "../../src/clock.ts";
import { launchChromium, PLAYER_STATS_KEYS } from "../../testing/browser.ts";
import { speechLike as speech } from "../../testing/fake_bridge.ts";
import { TEST_TOKEN_SECRET } from "../../testing/harness.ts";
import { until } from "../../testing/media.ts";
import { type SfuContext, withSfu } from "../../testing/sfu.ts";
import { DARK_CAVITY_PIXELS, mouthBox, probes, SOUND_RMS } from "../../testing/mouth_probe.ts";
import { smallRendererAround } from "../../testing/media.ts";
import { stampFrame } from "../../bench/stamp.ts";
import type { Renderer } from "../../src/media/renderer.ts";

/**
 * Loads the SDK player in a page of the service and plays the session; probes record, per presented frame,
 * how much of the mouth box shows the dark mouth cavity, and every 20 ms the RMS of the received audio.
 */
async function play(
  page: Page,
  base: string,
  options: { meta: unknown; clientToken: string; relay?: boolean; refresh?: boolean },
): Promise<void> {
  await page.goto(`${base}/docs/errors`); // any page of the service: same origin as /sdk/player.js
  const box = await mouthBox();
  await page.evaluate(`(async () => {
    const { createPlayer } = await import("/sdk/player.js");
    const g = globalThis;
    const video = document.createElement("video");
    video.width = 256; video.height = 256;
    document.body.append(video);
    g.states = []; g.mouth = []; g.audio = [];
    g.peerConnections = [];
    const NativePeerConnection = g.RTCPeerConnection;
    g.RTCPeerConnection = class extends NativePeerConnection {
      constructor(...a) { super(...a); g.peerConnections.push(this); }
    };
    g.player = createPlayer({
      video,
      streamMetadata: ${JSON.stringify(options.meta)},
      clientToken: ${JSON.stringify(options.clientToken)},
      ${options.relay ? `iceTransportPolicy: "relay",` : ""}
      ${options.refresh ? `refreshToken: () => g.freshToken(),` : ""}
      onState: (s) => g.states.push(s.state),
    });
    const box = ${JSON.stringify(box)};
    const canvas = document.createElement("canvas");
    canvas.width = 256; canvas.height = 256;
    const ctx = canvas.getContext("2d", { willReadFrequently: true });
    const onFrame = () => {
      if (video.videoWidth === 256) {
        ctx.drawImage(video, 0, 0, 256, 256);
        const d = ctx.getImageData(box.x, box.y, box.w, box.h).data;
        const dark = ${DARK_CAVITY_PIXELS}(d);
        g.mouth.push({ t: Date.now(), dark });
      }
      video.requestVideoFrameCallback(onFrame);
    };
    video.requestVideoFrameCallback(onFrame);
    let sound = null;
    setInterval(() => {
      const stream = video.srcObject;
      if (!sound && stream && stream.getAudioTracks().length) sound = ${SOUND_RMS}(stream.getAudioTracks());
      if (!sound) return;
      g.audio.push({ t: Date.now(), rms: sound.rms() });
    }, 20);
  })()`);
}

/** Waits until the page's player is `playing`. */
async function playing(page: Page): Promise<void> {
  await page.waitForFunction(`globalThis.player.state().state === "playing"`, undefined, { timeout: 30_000 });
}

/** Frames the page's video has decoded so far. */
function frames(page: Page): Promise<number> {
  return page.evaluate(
    `document.querySelector("video").getVideoPlaybackQuality().totalVideoFrames`,
  ) as Promise<
    number
  >;
}

/** Waits until the page has decoded `n` more frames than now. */
async function framesAdvance(page: Page, n: number): Promise<void> {
  const from = await frames(page);
  await page.waitForFunction(
    `document.querySelector("video").getVideoPlaybackQuality().totalVideoFrames > ${from + n}`,
    undefined,
    { timeout: 30_000 },
  );
}

async function withBrowser(fn: (browser: Browser) => Promise<void>): Promise<void> {
  const browser = await launchChromium({ media: true, webrtc: true });
  try {
    await fn(browser);
  } finally {
    await browser.close();
  }
}

Deno.test("sfu browser: the player plays the avatar over WebRTC (frames, audio, mouth), streams the microphone, and barge-in cuts the speech", async () => {
  await withSfu(async ({ h, key, create, fake, base, media }: SfuContext) => {
    const s = await create();
    assert.equal(s.transport, "webrtc_sfu");
    const engine = fake.of(s.session_id);
    await withBrowser(async (browser) => {
      const page = await browser.newPage();
      const errors: string[] = [];
      page.on("pageerror", (e) => errors.push(String(e)));
      await play(page, base, { meta: s.stream_metadata, clientToken: s.client_token });
      await playing(page);
      const state = await page.evaluate(`globalThis.player.state()`) as { ttffMs: number };
      assert.ok(state.ttffMs > 0, "time to first frame reported");
      await framesAdvance(page, 25);
      assert.equal(h.runtime.clientCount(s.session_id), 1, "the WebRTC subscriber counts as a client");

      // Silence, then 2 s of speech from the engine.
      const quietFrom = Date.now();
      await new Promise((r) => setTimeout(r, 1500));
      // The silence came as Opus DTX frames: the receiver (NetEQ) played it without stretching it, so its
      // jitter buffer did not grow before anything was said (with the silent packets themselves it stretched
      // them while its first target, 80 ms, stood, and kept the delay: 30 ms where 10–20 will do).
      const stretched = await page.evaluate(`(async () => {
        let n = null;
        for (const pc of globalThis.peerConnections.filter((pc) => pc.connectionState === "connected")) {
          for (const st of (await pc.getStats()).values()) {
            if (st.type === "inbound-rtp" && st.kind === "audio") n = (n ?? 0) + st.insertedSamplesForDeceleration;
          }
        }
        return n;
      })()`);
      assert.equal(stretched, 0, "no silence stretched by the receiver before the speech");
      const speechAt = Date.now();
      engine.events.onResponseStarted("r_1");
      for (const c of speech(2)) engine.events.onAudio(c, "r_1");
      engine.events.onResponseDone("r_1", "completed");
      await until(() => engine.played.some((p) => p.responseId === "r_1"), 20_000, "r_1 played");
      await new Promise((r) => setTimeout(r, 800)); // what was sent reaches the page
      const quiet = await probes(page, quietFrom, speechAt);
      const spoken = await probes(page, speechAt, Date.now());
      const loud = (xs: number[]) => xs.filter((x) => x > 0.03).length;
      assert.ok(quiet.audio.length > 20 && spoken.audio.length > 20, "audio was probed");
      assert.equal(loud(quiet.audio), 0, `silence is silent (max rms ${Math.max(...quiet.audio)})`);
      assert.ok(loud(spoken.audio) >= 20, `speech is heard: ${loud(spoken.audio)} loud 20 ms probes`);
      // The mouth: closed all through the silence, open in part of the speech.
      const open = (xs: number[]) => xs.filter((d) => d > Math.max(...quiet.mouth) + 25).length;
      assert.ok(quiet.mouth.length > 10 && spoken.mouth.length > 20, "frames were probed");
      assert.ok(
        open(spoken.mouth) >= 5,
        `the mouth opens with speech: dark ${JSON.stringify(spoken.mouth)} vs silence max ${
          Math.max(...quiet.mouth)
        }`,
      );

      // The microphone (Chromium's fake device) reaches the engine as PCM.
      await until(() => engine.userAudio.reduce((n, b) => n + b.length, 0) > 24000, 20_000, "mic audio");
      const pcm = engine.userAudio.flatMap((b) => [...new Int16Array(b.buffer, b.byteOffset, b.length >> 1)]);
      assert.ok(pcm.some((x) => Math.abs(x) > 1000), "the microphone audio is not silence");
      const stats = await page.evaluate(`globalThis.player.stats()`) as Record<string, number>;
      assert.ok(stats.framesDecoded > 50 && stats.bytesReceived > 0, JSON.stringify(stats));
      // The same stats as the fMP4 player's (WebCodecs and Media Source Extensions), measured here too.
      assert.deepEqual(Object.keys(stats).sort(), PLAYER_STATS_KEYS);
      assert.equal(stats.playback, "webrtc" as unknown as number);
      // The video's jitter buffer has its floor (its own estimate stepped up during a session, the mouth with
      // it): 24 ms to start (unset, Chromium reads null), then moved by the player, within 0–400, where its
      // picture and sound are far apart (in CI's full run: 162 — the page's sound held back on a loaded machine).
      const targets = await page.evaluate(
        `globalThis.peerConnections.filter((pc) => pc.connectionState === "connected")
          .flatMap((pc) => pc.getReceivers()).filter((r) => r.track.kind === "video")
          .map((r) => r.jitterBufferTarget)`,
      ) as number[];
      assert.equal(targets.length, 1, JSON.stringify(targets));
      assert.ok(
        typeof targets[0] === "number" && targets[0] >= 0 && targets[0] <= 400,
        JSON.stringify(targets),
      );
      // …and reported to the service over the signalling socket: the session's figures.
      await until(
        async () => {
          const m = await h.req("GET", `/v1/sessions/${s.session_id}/metrics`, { key });
          return m.body.frame_latency_ms.count > 0 && m.body.first_frame_ms !== null;
        },
        20_000,
        "the player's figures at the service",
      );
      const m = (await h.req("GET", `/v1/sessions/${s.session_id}/metrics`, { key })).body;
      assert.deepEqual(m.playback, ["webrtc"]);
      await until(
        async () =>
          ((await page.evaluate(`globalThis.player.stats()`)) as { micFramesSent: number }).micFramesSent >
            10,
        10_000,
        "mic frames counted",
      );

      // Barge-in: a 3 s response interrupted once it is heard; the page goes quiet soon after.
      engine.events.onResponseStarted("r_2");
      for (const c of speech(3)) engine.events.onAudio(c, "r_2");
      engine.events.onResponseDone("r_2", "completed");
      const r2At = Date.now();
      await until(async () => loud((await probes(page, r2At, Date.now())).audio) > 5, 20_000, "r_2 heard");
      engine.events.onInterrupt("r_2");
      const cutAt = Date.now();
      assert.equal(media(s.session_id).stats().queuedSamples, 0, "nothing of r_2 is queued");
      const played = engine.played.find((p) => p.responseId === "r_2");
      assert.ok(played?.interrupted, "reported interrupted");
      await new Promise((r) => setTimeout(r, 2500));
      const after = await probes(page, cutAt + 1000, Date.now());
      assert.equal(loud(after.audio), 0, `quiet after the barge-in (max rms ${Math.max(...after.audio)})`);

      const end = await h.req("POST", `/v1/sessions/${s.session_id}/end`, { key });
      assert.equal(end.status, 200);
      assert.ok(end.body.chunks_rendered > 50, `chunks_rendered ${end.body.chunks_rendered}`);
      await page.waitForFunction(`globalThis.player.state().state === "ended"`, undefined, {
        timeout: 20_000,
      });
      assert.deepEqual(errors, []);
    });
  });
});

Deno.test("sfu browser: through TURN only (coturn, time-limited credentials) the avatar plays and the mic gets through", async () => {
  await withSfu(async ({ create, fake, base, turn, h, key }) => {
    const s = await create();
    const ice = s.stream_metadata.ice_servers;
    assert.equal(ice.length, 1);
    assert.deepEqual(ice[0].urls, [turn!.url]);
    const [expiry, id] = ice[0].username.split(":");
    assert.equal(id, s.session_id.replaceAll(":", "-"));
    const ttl = Number(expiry) * 1000 - Date.now();
    assert.ok(
      ttl > 4 * 60_000 && ttl <= 5 * 60_000 + 1000,
      `the credential lives as long as the token (${ttl} ms)`,
    );
    await withBrowser(async (browser) => {
      const page = await browser.newPage();
      await play(page, base, { meta: s.stream_metadata, clientToken: s.client_token, relay: true });
      await playing(page);
      await framesAdvance(page, 25);
      const engine = fake.of(s.session_id);
      await until(() => engine.userAudio.length > 10, 20_000, "mic audio through the relay");
      // coturn allocated relays for the session's credential (the page allowed nothing but relays).
      const log = await turn!.log();
      assert.ok(log.includes(`user <${ice[0].username}>: incoming packet ALLOCATE processed, success`), log);
      assert.ok(
        log.includes(`user <${ice[0].username}>: incoming packet CREATE_PERMISSION processed, success`),
      );
    });
    assert.equal((await h.req("POST", `/v1/sessions/${s.session_id}/end`, { key })).status, 200);
  }, { turn: true });
});

Deno.test("sfu browser: an expired session token is refreshed through refreshToken and the player plays on the same session", async () => {
  await withSfu(async ({ create, base, h, key }) => {
    const s = await create();
    const past = new OffsetClock();
    past.advance(-15 * 60_000);
    const expired = await new TokenService({ current: TEST_TOKEN_SECRET, previous: null }, past).mint(
      s.session_id,
      "proj_sfu",
      "media",
    );
    await withBrowser(async (browser) => {
      const page = await browser.newPage();
      let refreshes = 0;
      await page.exposeFunction("freshToken", async () => {
        refreshes++;
        const t = await h.req("POST", `/v1/sessions/${s.session_id}/client-token`, { key });
        return { clientToken: t.body.client_token, streamMetadata: t.body.stream_metadata };
      });
      await play(page, base, {
        meta: { ...s.stream_metadata, session_token: expired.token },
        clientToken: s.client_token,
        refresh: true,
      });
      await playing(page);
      await framesAdvance(page, 10);
      const states = await page.evaluate(`globalThis.states`) as string[];
      assert.ok(refreshes >= 1, "the player asked the app for fresh metadata");
      assert.ok(states.includes("reconnecting"), states.join(" → "));
      const stats = await page.evaluate(`globalThis.player.stats()`) as { reconnects: number };
      assert.ok(stats.reconnects >= 1);
      assert.equal(h.runtime.clientCount(s.session_id), 1);
    });
    // The browser is gone: the session has no client any more (the idle timeout runs from here).
    await until(() => h.runtime.clientCount(s.session_id) === 0, 20_000, "the subscriber to leave");
    const got = await h.req("GET", `/v1/sessions/${s.session_id}`, { key });
    assert.equal(got.body.status, "active");
    assert.equal((await h.req("POST", `/v1/sessions/${s.session_id}/end`, { key })).status, 200);
  });
});

Deno.test("sfu browser: Janus restarting mid-session: the player takes the new offer and the avatar plays on", async () => {
  await withSfu(async ({ create, base, janus, h, key }) => {
    const s = await create();
    await withBrowser(async (browser) => {
      const page = await browser.newPage();
      await play(page, base, { meta: s.stream_metadata, clientToken: s.client_token });
      await playing(page);
      await framesAdvance(page, 10);
      await janus.kill();
      await janus.restart();
      await framesAdvance(page, 25);
      assert.equal(await page.evaluate(`globalThis.player.state().state`), "playing");
    });
    const got = await h.req("GET", `/v1/sessions/${s.session_id}`, { key });
    assert.equal(got.body.status, "active");
    assert.equal((await h.req("POST", `/v1/sessions/${s.session_id}/end`, { key })).status, 200);
  });
});

/** The small reference renderer with each frame's index stamped as a barcode in its top 32 rows. */
function indexStampingRenderer(): Promise<Renderer> {
  return smallRendererAround((req, render, format) => {
    const frame = render(req);
    const stamp = (f: Uint8Array) => stampFrame(f, format, req.index);
    return frame instanceof Uint8Array ? stamp(frame) : frame.then(stamp);
  });
}

Deno.test("sfu browser: a viewer joining right after the create gets its first frame from Janus's cached opening keyframe", async () => {
  // Keyframes every 10 s: a viewer that missed the cached opening keyframe (frame 0) would see nothing
  // before frame 250. The opening keyframe reaches Janus whole only when the worker's RTP socket was bound
  // before it was sent (Deno reverses the sends queued on an unbound socket; Janus then caches one packet).
  await withSfu(async ({ create, base, h, key }) => {
    const s = await create();
    await withBrowser(async (browser) => {
      const page = await browser.newPage();
      await page.goto(`${base}/docs/errors`);
      await page.evaluate(`(async () => {
        const { createPlayer } = await import("/sdk/player.js");
        const g = globalThis;
        const video = document.createElement("video");
        document.body.append(video);
        const canvas = document.createElement("canvas");
        canvas.width = 256; canvas.height = 32;
        const ctx = canvas.getContext("2d", { willReadFrequently: true });
        g.firstIndex = null;
        video.requestVideoFrameCallback(() => {
          ctx.drawImage(video, 0, 0, 256, 32, 0, 0, 256, 32);
          const d = ctx.getImageData(0, 0, 256, 32).data;
          let v = 0;
          for (let i = 0; i < 32; i++) v = v * 2 + (d[(16 * 256 + i * 8 + 4) * 4] > 128 ? 1 : 0);
          g.firstIndex = v;
        });
        g.player = createPlayer({
          video,
          streamMetadata: ${JSON.stringify(s.stream_metadata)},
          clientToken: ${JSON.stringify(s.client_token)},
          microphone: false,
        });
      })()`);
      await page.waitForFunction(`globalThis.firstIndex !== null`, undefined, { timeout: 30_000 });
      const first = await page.evaluate(`globalThis.firstIndex`) as number;
      assert.ok(first < 250, `the first frame shown is frame ${first}: not the cached opening keyframe (0)`);
      // The callback draws the element's current picture, which on a busy machine may already be a few
      // frames on (seen in CI: 1, and 4 with the whole suite running). Frames 1–249 are predicted and nothing
      // here answers a keyframe request, so showing any of them means the cached opening keyframe arrived;
      // within the first second is what a joiner that got it sees.
      assert.ok(
        first < 25,
        `the first frame shown is frame ${first}: not within a second of the cached keyframe`,
      );
    });
    assert.equal((await h.req("POST", `/v1/sessions/${s.session_id}/end`, { key })).status, 200);
  }, { renderer: await indexStampingRenderer(), gopFrames: 250 });
});
