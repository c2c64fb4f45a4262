/**
 * A `<video>` player over `webrtc_sfu` in a browser that cannot receive H.264 over WebRTC (the SFU's only
 * video codec), through a real Janus: the player draws the avatar itself, video-free (the sound, and the
 * animation track on a data channel), on a canvas whose captured stream the `<video>` shows with the sound —
 * where it would otherwise never get a picture. In Debian's Firefox ESR, which has no H.264 over WebRTC
 * without Cisco's OpenH264 plugin (a download), and in Chromium with H.264 hidden from its capabilities.
 */
import assert from "node:assert/strict";
import { launchChromium } from "../../testing/browser.ts";
import { closeFirefox, launchFirefox } from "../../testing/firefox.ts";
import { type AnyPage, until as pageUntil } from "../../testing/any_browser.ts";
import { speechLike as speech } from "../../testing/fake_bridge.ts";
import { until } from "../../testing/media.ts";
import { type SfuContext, withSfu } from "../../testing/sfu.ts";
import { DARK_CAVITY_PIXELS, mouthBox, probes, SOUND_RMS } from "../../testing/mouth_probe.ts";

/**
 * Loads the SDK player with a `<video>` in a page of the service. `hideH264`: the page's
 * `RTCRtpReceiver.getCapabilities` leaves H.264 out (Chromium has it). The page keeps its PeerConnections
 * (`g.pcs`), the URLs its WebSockets opened (`g.sockets`), and every 20 ms the mouth box's dark pixels in
 * what the `<video>` shows, scaled to 256×256, with the RMS of the sound the element plays.
 */
async function play(
  page: AnyPage,
  base: string,
  options: { meta: unknown; clientToken: string; hideH264: boolean; holdSound?: boolean },
): Promise<void> {
  // (a button whose click unmutes the element and resumes the probe's context: the user's Start click)
  await page.goto(`${base}/docs/errors`); // any page of the service: same origin as /sdk/player.js
  const box = await mouthBox();
  if (options.holdSound) await page.evaluate(HOLD_SOUND);
  await page.evaluate(`(async () => {
    const g = globalThis;
    g.pcs = []; g.sockets = []; g.mouth = []; g.audio = [];
    if (${options.hideH264}) {
      const caps = RTCRtpReceiver.getCapabilities.bind(RTCRtpReceiver);
      RTCRtpReceiver.getCapabilities = (kind) => {
        const c = caps(kind);
        return c && { ...c, codecs: c.codecs.filter((x) => !/h264/i.test(x.mimeType)) };
      };
    }
    const Native = RTCPeerConnection;
    g.RTCPeerConnection = class extends Native {
      constructor(c) { super(c); g.pcs.push(this); }
    };
    const NativeWs = WebSocket;
    g.WebSocket = class extends NativeWs {
      constructor(url, p) { super(url, p); g.sockets.push(String(url)); }
    };
    const { createPlayer } = await import("/sdk/player.js");
    g.receivesH264 = (await import("/sdk/player_webrtc_sdp.js")).receivesH264();
    const video = document.createElement("video");
    video.width = 256; video.height = 256;
    document.body.append(video);
    const start = document.createElement("button");
    start.id = "start"; start.textContent = "Start";
    start.onclick = () => { video.muted = false; void video.play(); void g.actx?.resume(); };
    document.body.append(start);
    g.player = createPlayer({
      video,
      streamMetadata: ${JSON.stringify(options.meta)},
      clientToken: ${JSON.stringify(options.clientToken)},
      microphone: false, // (a page capturing the microphone may autoplay sound: not the case tested)
    });
    const box = ${JSON.stringify(box)};
    const probe = document.createElement("canvas");
    probe.width = 256; probe.height = 256;
    const ctx = probe.getContext("2d", { willReadFrequently: true });
    let sound = null;
    setInterval(() => {
      if (video.readyState >= 2 && video.videoWidth > 0) {
        ctx.drawImage(video, 0, 0, 256, 256);
        const d = ctx.getImageData(box.x, box.y, box.w, box.h).data;
        const dark = ${DARK_CAVITY_PIXELS}(d);
        g.mouth.push({ t: Date.now(), dark });
      }
      const stream = video.srcObject;
      if (!sound && stream && stream.getAudioTracks().length) {
        sound = ${SOUND_RMS}(stream.getAudioTracks());
        g.actx = sound.context;
      }
      if (!sound) return;
      g.audio.push({ t: Date.now(), rms: sound.rms() });
    }, 20);
  })()`);
}

/**
 * Page script: the sound held as a user's browser holds it (headless browsers here play at once, whatever
 * their settings): until a trusted pointer or key event, an unmuted element's `play()` is refused
 * (`NotAllowedError`), a muted one plays, and an `AudioContext` stays suspended.
 */
const HOLD_SOUND = `(() => {
  let gestured = false;
  for (const t of ["pointerdown", "keydown", "click"]) {
    addEventListener(t, (e) => { if (e.isTrusted) gestured = true; }, true);
  }
  const play = HTMLMediaElement.prototype.play;
  HTMLMediaElement.prototype.play = function () {
    if (!gestured && !this.muted) return Promise.reject(new DOMException("held", "NotAllowedError"));
    return play.call(this);
  };
  const resume = AudioContext.prototype.resume;
  AudioContext.prototype.resume = function () { return gestured ? resume.call(this) : Promise.resolve(); };
  const AC = AudioContext;
  globalThis.AudioContext = class extends AC {
    constructor(o) { super(o); if (!gestured) void this.suspend(); }
  };
})()`;

/**
 * Plays a session in `page` and checks the avatar drawn in the `<video>`, with its sound, while it speaks.
 * `click`: the page holds the sound until a user gesture ({@link HOLD_SOUND}) — the picture comes at once,
 * muted, and the sound after a click on the page's Start button.
 */
async function drawnInVideo(
  ctx: SfuContext,
  page: AnyPage,
  options: { hideH264: boolean; click?: () => Promise<void> },
): Promise<void> {
  const { hideH264, click } = options;
  const { create, fake, base, h, key, media } = ctx;
  const s = await create();
  const engine = fake.of(s.session_id);
  await play(page, base, {
    meta: s.stream_metadata,
    clientToken: s.client_token,
    hideH264,
    holdSound: click !== undefined,
  });
  assert.equal(await page.evaluate(`globalThis.receivesH264`), false, "the browser has no H.264 over WebRTC");
  await pageUntil(page, `globalThis.player.state().state === "playing"`, "the player to play", 30_000);
  await until(() => h.runtime.clientCount(s.session_id) === 1, 20_000, "the subscriber to count");
  // It asked for no video: none negotiated, and no encoder runs for it.
  const sockets = await page.evaluate(`globalThis.sockets`) as string[];
  assert.ok(sockets.length >= 1 && sockets.every((u) => /[?&]video=0(&|$)/.test(u)), sockets.join(" "));
  const sdp = await page.evaluate(
    `globalThis.pcs.filter((p) => p.connectionState !== "closed").map((p) => p.remoteDescription?.sdp ?? "").join("")`,
  ) as string;
  assert.ok(!/\r\nm=video /.test(sdp) && /\r\nm=application /.test(sdp), sdp);
  await until(() => media(s.session_id).encoderPids().length === 0, 20_000, "no video encoder");
  // The `<video>` shows the player's canvas and plays the sound: one picture track, one sound track.
  const tracks = await page.evaluate(`(() => {
    const s = document.querySelector("video").srcObject;
    return s ? { video: s.getVideoTracks().length, audio: s.getAudioTracks().length } : null;
  })()`);
  assert.deepEqual(tracks, { video: 1, audio: 1 });
  if (click) {
    // The picture before any click: the avatar at rest in the element, its sound held back (muted).
    await pageUntil(page, `globalThis.mouth.length > 0`, "a picture in the <video> before the click", 20_000);
    const state = await page.evaluate(`globalThis.player.state()`) as { muted: boolean };
    assert.equal(state.muted, true, "the sound waits for the user's gesture");
    await click();
    await pageUntil(page, `!document.querySelector("video").muted`, "the element unmuted", 20_000);
  }

  const quietFrom = Date.now();
  await pageUntil(
    page,
    `globalThis.mouth.filter((m) => m.t >= ${quietFrom}).length >= 20 && globalThis.audio.filter((a) => a.t >= ${quietFrom}).length >= 20`,
    "probes of the silence",
    20_000,
  );
  const speechAt = Date.now();
  engine.events.onResponseStarted("r_1");
  for (const c of speech(2)) engine.events.onAudio(c, "r_1");
  engine.events.onResponseDone("r_1", "completed");
  await until(() => engine.played.some((p) => p.responseId === "r_1"), 20_000, "r_1 played");
  const playedAt = Date.now();
  // What was sent reaches the page, and the page has probed it (a busy machine's probes come late).
  await pageUntil(
    page,
    `(globalThis.audio.at(-1)?.t ?? 0) > Date.now() - 100 && globalThis.audio.filter((a) => a.t >= ${speechAt}).length >= 100`,
    "probes of the speech",
    20_000,
  );
  // (and what was on its way when it was played: the page probing 800 ms past that, on its own clock)
  await pageUntil(
    page,
    `(globalThis.audio.at(-1)?.t ?? 0) > ${playedAt + 800}`,
    "probes past the speech",
    20_000,
  );
  const quiet = await probes(page, quietFrom, speechAt);
  const spoken = await probes(page, speechAt, Date.now());
  const loud = (xs: number[]) => xs.filter((x) => x > 0.03).length;
  assert.equal(loud(quiet.audio), 0, `silence is silent (max rms ${Math.max(...quiet.audio)})`);
  assert.ok(
    loud(spoken.audio) >= 20,
    `the <video> plays the speech: ${loud(spoken.audio)} loud 20 ms probes`,
  );
  const open = (xs: number[]) => xs.filter((d) => d > Math.max(...quiet.mouth) + 25).length;
  assert.ok(
    open(spoken.mouth) >= 5,
    `the mouth in the <video> opens with speech: dark ${JSON.stringify(spoken.mouth)} vs silence max ${
      Math.max(...quiet.mouth)
    }`,
  );
  const stats = await page.evaluate(`globalThis.player.stats()`) as {
    framesDecoded: number;
    avOffsetMs: number | null;
    animation?: { messages: number };
  };
  assert.ok(stats.framesDecoded > 0 && (stats.animation?.messages ?? 0) > 0, JSON.stringify(stats));
  // The player measures its pictures against their sound, as every player does, and tells the service: a
  // picture is on screen by the next animation frame, within a refresh or two of the sound of its instant.
  assert.ok(
    stats.avOffsetMs !== null && Math.abs(stats.avOffsetMs) < 60,
    `avOffsetMs ${stats.avOffsetMs}`,
  );
  await until(
    async () => {
      const m = (await h.req("GET", `/v1/sessions/${s.session_id}/metrics`, { key })).body;
      return m.av_offset_ms.count > 0 && m.frames.presented > 0 && m.first_frame_ms !== null;
    },
    20_000,
    "the player's figures at the service",
  );
  await page.evaluate(`globalThis.player.close()`);
  // Closed: the element lets go of the stream, the canvas's capture stopped.
  assert.equal(await page.evaluate(`document.querySelector("video").srcObject`), null);
}

Deno.test("sfu without H.264 (Chromium, H.264 hidden): a <video> player draws the avatar itself and shows it with the sound in the <video>", async () => {
  await withSfu(async (ctx: SfuContext) => {
    const browser = await launchChromium({ media: true, webrtc: true });
    try {
      const page = await (await browser.newContext()).newPage();
      await drawnInVideo(ctx, page, { hideH264: true });
    } finally {
      await browser.close();
    }
  });
});

Deno.test("sfu without H.264 (Firefox ESR, no OpenH264): a <video> player draws the avatar itself and shows it with the sound in the <video>", async () => {
  await withSfu(async (ctx: SfuContext) => {
    const browser = await launchFirefox({ autoplay: "allowed" });
    try {
      const page = await browser.newPage();
      await drawnInVideo(ctx, page, { hideH264: false });
    } finally {
      await closeFirefox(browser);
    }
  });
});

Deno.test("sfu without H.264 (Chromium, H.264 hidden, the sound held until a gesture): the avatar in the <video> at once, muted; its sound after the user's click", async () => {
  await withSfu(async (ctx: SfuContext) => {
    const browser = await launchChromium({ media: true, webrtc: true, autoplay: "gesture" });
    try {
      const page = await (await browser.newContext()).newPage();
      await drawnInVideo(ctx, page, { hideH264: true, click: () => page.click("#start") });
    } finally {
      await browser.close();
    }
  });
});
