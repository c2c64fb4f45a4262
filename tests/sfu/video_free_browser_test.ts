/**
 * Video-free over `webrtc_sfu`, end to end in Debian's Chromium through a real Janus and coturn, the page
 * forced to relay through the UDP impairment proxy in front of coturn: the SDK player given a canvas gets
 * the sound over WebRTC and the animation track on an unordered, unreliable data channel, and no video;
 * no video encoder runs while only it watches; its microphone reaches the engine; barge-in cuts the sound
 * and the mouth; a video client joining later gets video.
 */
import assert from "node:assert/strict";
import type { Browser, Page } from "playwright-core";
import { launchChromium } from "../../testing/browser.ts";
import { speechLike as speech } from "../../testing/fake_bridge.ts";
import { until } from "../../testing/media.ts";
import { type SfuContext, withSfu } from "../../testing/sfu.ts";
import { DARK_CAVITY_PIXELS, mouthBox, probes, SOUND_RMS } from "../../testing/mouth_probe.ts";

/**
 * Loads the SDK player in a page of the service, video-free (a canvas) unless `video`, relayed through
 * TURN. The page keeps its PeerConnections (`g.pcs`), every data channel message with its arrival
 * (`g.dc`), and every 20 ms the mouth box's dark pixels on the canvas and the received sound's RMS.
 */
async function play(
  page: Page,
  base: string,
  options: { meta: unknown; clientToken: string; video?: boolean },
): Promise<void> {
  await page.goto(`${base}/docs/errors`); // any page of the service: same origin as /sdk/player.js
  const box = await mouthBox();
  await page.evaluate(`(async () => {
    const g = globalThis;
    g.pcs = []; g.dc = []; g.mouth = []; g.audio = [];
    const Native = RTCPeerConnection;
    g.chans = [];
    const keep = (ch) => g.chans.push(ch) && ch.addEventListener("message", (e) => {
      const text = typeof e.data === "string" ? e.data : new TextDecoder().decode(e.data);
      try { g.dc.push({ at: Date.now(), ordered: ch.ordered, msg: JSON.parse(text) }); } catch {}
    });
    g.RTCPeerConnection = class extends Native {
      constructor(c) {
        super(c);
        g.pcs.push(this);
        this.addEventListener("datachannel", (e) => keep(e.channel));
      }
      createDataChannel(label, o) {
        const ch = super.createDataChannel(label, o);
        keep(ch);
        return ch;
      }
    };
    const { createPlayer } = await import("/sdk/player.js");
    const el = document.createElement(${options.video ? `"video"` : `"canvas"`});
    el.width = 256; el.height = 256;
    document.body.append(el);
    g.player = createPlayer({
      ${options.video ? "video: el" : "canvas: el"},
      streamMetadata: ${JSON.stringify(options.meta)},
      clientToken: ${JSON.stringify(options.clientToken)},
      iceTransportPolicy: "relay",
    });
    if (${Boolean(options.video)}) return;
    const box = ${JSON.stringify(box)};
    const ctx = el.getContext("2d", { willReadFrequently: true });
    let sound = null;
    setInterval(() => {
      const d = ctx.getImageData(box.x, box.y, box.w, box.h).data;
      const dark = ${DARK_CAVITY_PIXELS}(d);
      g.mouth.push({ t: Date.now(), dark });
      if (!sound) {
        const track = g.pcs.flatMap((pc) => pc.getTransceivers())
          .filter((t) => t.direction === "recvonly").map((t) => t.receiver.track)
          .find((t) => t.kind === "audio" && t.readyState === "live");
        if (!track) return;
        sound = ${SOUND_RMS}([track]);
      }
      g.audio.push({ t: Date.now(), rms: sound.rms() });
    }, 20);
  })()`);
}

/** The data channel messages the page got: arrival (wall clock), the channel's ordering, the message. */
type DcRecord = { at: number; ordered: boolean; msg: { type: string; t_ms: number; viseme?: string } };

/** What the page's PeerConnections negotiated and received, by kind. */
async function received(page: Page): Promise<{ sdp: string; inbound: Record<string, number> }> {
  return await page.evaluate(`(async () => {
    const inbound = {};
    let sdp = "";
    for (const pc of globalThis.pcs) {
      if (pc.connectionState === "closed") continue;
      sdp += pc.remoteDescription?.sdp ?? "";
      for (const s of (await pc.getStats()).values()) {
        if (s.type === "inbound-rtp") inbound[s.kind] = (inbound[s.kind] ?? 0) + (s.packetsReceived ?? 0);
      }
    }
    return { sdp, inbound };
  })()`) as { sdp: string; inbound: Record<string, number> };
}

async function withBrowser(fn: (browser: Browser) => Promise<void>): Promise<void> {
  const browser = await launchChromium({ media: true, webrtc: true });
  try {
    await fn(browser);
  } finally {
    await browser.close();
  }
}

Deno.test("sfu video-free: sound over WebRTC, the animation track on an unordered data channel, no video, no encoder; barge-in cuts both; a video client later gets video", async () => {
  await withSfu(async ({ h, key, create, fake, base, media, proxy, janus }: SfuContext) => {
    const s = await create();
    const engine = fake.of(s.session_id);
    await withBrowser(async (browser) => {
      const page = await (await browser.newContext()).newPage();
      const errors: string[] = [];
      page.on("pageerror", (e) => errors.push(String(e)));
      const artRequests: string[] = [];
      page.on("request", (r) => {
        if (r.url().includes("/media/v0/art/")) artRequests.push(r.url());
      });
      await play(page, base, { meta: s.stream_metadata, clientToken: s.client_token });
      const logs: string[] = [];
      page.on("console", (m) => logs.push(m.text()));
      await page.waitForFunction(`globalThis.player.state().state === "playing"`, undefined, {
        timeout: 30_000,
      }).catch(async (err) => {
        const diag = await page.evaluate(`(async () => ({
          state: globalThis.player.state(),
          stats: globalThis.player.stats(),
          dc: globalThis.dc.length,
          chans: globalThis.chans.map((c) => [c.label, c.id, c.readyState, c.ordered, c.maxRetransmits]),
          pcs: globalThis.pcs.map((p) => [p.connectionState, p.iceConnectionState, p.sctp?.state]),
        }))()`);
        const jl = (await janus.log()).split("\n").filter((l) => /data|sctp|channel/i.test(l)).slice(0, 40);
        throw new Error(`${err}\n${JSON.stringify(diag)}\n${logs.join("\n")}\n${jl.join("\n")}`);
      });
      await until(() => h.runtime.clientCount(s.session_id) === 1, 20_000, "the subscriber to count");
      // Only a video-free client watches: the video encoder is retired, and stays so.
      const m = media(s.session_id);
      await until(() => m.encoderPids().length === 0, 20_000, "no video encoder");
      const rendered = m.stats().framesRendered;

      // Silence, then 2 s of speech.
      const quietFrom = Date.now();
      await new Promise((r) => setTimeout(r, 1500));
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
      const open = (xs: number[]) => xs.filter((d) => d > Math.max(...quiet.mouth) + 25).length;
      assert.ok(
        open(spoken.mouth) >= 5,
        `the drawn mouth opens with speech: dark ${JSON.stringify(spoken.mouth)} vs silence max ${
          Math.max(...quiet.mouth)
        }`,
      );
      // The art came with the hello (on the signalling socket): the page never asked for it.
      assert.deepEqual(artRequests, []);
      // The animation track came on the data channel, unordered, stamped on the sound's timeline.
      const dc = await page.evaluate(`globalThis.dc`) as DcRecord[];
      const visemes = dc.filter((r) => r.msg.type === "viseme");
      assert.ok(visemes.length >= 5, `visemes on the data channel: ${visemes.length} of ${dc.length}`);
      assert.ok(dc.every((r) => r.ordered === false), "every message came on the unordered channel");
      assert.ok(visemes.some((r) => r.msg.viseme !== "sil"));
      // No video: none negotiated, none received; nothing rendered meanwhile.
      const got = await received(page);
      assert.ok(!/\r\nm=video /.test(got.sdp) && /\r\nm=application /.test(got.sdp), got.sdp);
      assert.ok((got.inbound.audio ?? 0) > 50 && !got.inbound.video, JSON.stringify(got.inbound));
      assert.deepEqual(m.encoderPids(), [], "no video encoder while only the video-free client watches");
      assert.equal(m.stats().framesRendered, rendered, "no frame rendered");
      // The microphone, as for a video client.
      await until(() => engine.userAudio.reduce((n, b) => n + b.length, 0) > 24000, 20_000, "mic audio");
      // Everything crossed the impairment proxy in front of coturn, both ways.
      const ps = proxy!.stats();
      assert.ok(ps.up.sent > 100 && ps.down.sent > 100, JSON.stringify(ps));

      // Barge-in: a 3 s response interrupted once heard; the sound and the mouth stop, and no viseme
      // of the cut speech arrives afterwards.
      engine.events.onResponseStarted("r_2");
      for (const c of speech(3)) engine.events.onAudio(c, "r_2");
      engine.events.onResponseDone("r_2", "completed");
      const r2At = Date.now();
      await until(async () => loud((await probes(page, r2At, Date.now())).audio) > 5, 20_000, "r_2 heard");
      engine.events.onInterrupt("r_2");
      const cutAt = Date.now();
      // The page has probed 4 s past the cut (a busy machine's probes come late: wait for them, not a time).
      await until(
        async () => (await page.evaluate(`globalThis.audio.at(-1)?.t ?? 0`) as number) > cutAt + 4000,
        20_000,
        "probes past the cut",
      );
      // Uncut, the rest of the 3 s response would sound for seconds (≈ 2/3 of its 20 ms probes loud); cut,
      // what was already on its way plays out, then silence.
      const after = await probes(page, cutAt, cutAt + 4000);
      assert.ok(
        loud(after.audio) <= 25,
        `the sound stops soon after the barge-in: ${loud(after.audio)} loud probes`,
      );
      const end = await probes(page, cutAt + 3000, cutAt + 4000);
      assert.equal(loud(end.audio), 0, `quiet after the barge-in (max rms ${Math.max(...end.audio)})`);
      assert.equal(open(end.mouth), 0, `the mouth closed after the barge-in: ${JSON.stringify(end.mouth)}`);
      const late = (await page.evaluate(`globalThis.dc`) as DcRecord[]).filter((r) =>
        r.at > cutAt + 1000 && r.msg.type === "viseme" && r.msg.viseme !== "sil"
      );
      assert.deepEqual(late, [], "no open viseme arrives after the cut");

      // A video client joins: the video runs again and reaches it.
      const viewer = await (await browser.newContext()).newPage();
      await play(viewer, base, { meta: s.stream_metadata, clientToken: s.client_token, video: true });
      await viewer.waitForFunction(
        `document.querySelector("video")?.getVideoPlaybackQuality().totalVideoFrames > 25`,
        undefined,
        { timeout: 30_000 },
      );
      assert.equal(m.encoderPids().length, 1, "the video encoder runs for the video client");
      const seen = await received(viewer);
      assert.ok((seen.inbound.video ?? 0) > 0, JSON.stringify(seen.inbound));
      // …and the video-free client still gets no video.
      assert.ok(!(await received(page)).inbound.video);
      assert.deepEqual(errors, []);
    });
    assert.equal((await h.req("POST", `/v1/sessions/${s.session_id}/end`, { key })).status, 200);
  }, { impair: { seed: 1 } });
});
