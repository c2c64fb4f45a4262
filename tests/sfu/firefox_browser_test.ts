/**
 * The `webrtc_sfu` player in Firefox ESR (Debian's, through WebDriver BiDi), through a real Janus: video-free
 * (a canvas), as Debian's Firefox has no H.264 decoder (OpenH264 is a download) but plays the sound (Opus)
 * and the animation track's data channel. The player answers the SFU's offer as Chromium's does — at once,
 * without its candidates, applied once the worker says `started`, the browser the DTLS server
 * (`a=setup:passive`, `sdk/player_webrtc_sdp.js`) — and Firefox connects and plays that way.
 */
import assert from "node:assert/strict";
import { launchFirefox } from "../../testing/firefox.ts";
import { speechLike as speech } from "../../testing/fake_bridge.ts";
import { until } from "../../testing/media.ts";
import { type SfuContext, withSfu } from "../../testing/sfu.ts";

/** Polls `script` in the page until it is truthy (Puppeteer's own wait takes a function, not a string). */
async function pageUntil(
  page: { evaluate(s: string): Promise<unknown> },
  script: string,
  timeoutMs: number,
  what: string,
): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!(await page.evaluate(script))) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

Deno.test("sfu in firefox: the video-free player connects through Janus (its answer the DTLS server), hears the speech and gets the animation track", async () => {
  await withSfu(async ({ create, fake, base }: SfuContext) => {
    const s = await create();
    const engine = fake.of(s.session_id);
    const browser = await launchFirefox({ autoplay: "allowed" });
    try {
      const page = await browser.newPage();
      await page.goto(`${base}/docs/errors`); // a page of the service: same origin as /sdk/player.js
      await page.evaluate(`(async () => {
        const g = globalThis;
        g.pcs = []; g.dc = 0; g.sent = [];
        const Native = RTCPeerConnection;
        g.RTCPeerConnection = class extends Native {
          constructor(c) {
            super(c);
            g.pcs.push(this);
          }
          createDataChannel(label, o) {
            const ch = super.createDataChannel(label, o);
            ch.addEventListener("message", () => g.dc++);
            return ch;
          }
        };
        const NativeWs = WebSocket;
        g.WebSocket = class extends NativeWs {
          send(data) {
            if (typeof data === "string") g.sent.push(data);
            return super.send(data);
          }
        };
        const { createPlayer } = await import("/sdk/player.js");
        const el = document.createElement("canvas");
        el.width = 256; el.height = 256;
        document.body.append(el);
        g.player = createPlayer({
          canvas: el,
          streamMetadata: ${JSON.stringify(s.stream_metadata)},
          clientToken: ${JSON.stringify(s.client_token)},
        });
      })()`);
      await pageUntil(
        page,
        `globalThis.pcs.some((pc) => pc.connectionState === "connected")`,
        30_000,
        "the PeerConnection to connect",
      );
      await pageUntil(page, `globalThis.player.state().state === "playing"`, 30_000, "the player to play");

      // The answer the SFU got: no candidates, the browser the DTLS server; and it is what Firefox applied.
      const answer = await page.evaluate(`(() => {
        const sent = globalThis.sent.map((t) => JSON.parse(t)).find((m) => m.type === "answer");
        const pc = globalThis.pcs.find((pc) => pc.connectionState === "connected");
        return { sent: sent?.sdp ?? "", local: pc.localDescription.sdp };
      })()`) as { sent: string; local: string };
      assert.match(answer.sent, /^a=setup:passive/m);
      assert.doesNotMatch(answer.sent, /^a=setup:active/m);
      assert.doesNotMatch(answer.sent, /^a=candidate:/m);
      assert.match(answer.local, /^a=setup:passive/m);

      const audioPackets = () =>
        page.evaluate(`(async () => {
          let n = 0;
          for (const pc of globalThis.pcs) {
            if (pc.connectionState !== "connected") continue;
            for (const st of (await pc.getStats()).values()) {
              if (st.type === "inbound-rtp" && st.kind === "audio") n += st.packetsReceived ?? 0;
            }
          }
          return n;
        })()`) as Promise<number>;
      const before = await audioPackets();
      const messagesBefore = await page.evaluate(`globalThis.dc`) as number;
      engine.events.onResponseStarted("r_1");
      for (const c of speech(1)) engine.events.onAudio(c, "r_1");
      engine.events.onResponseDone("r_1", "completed");
      await until(() => engine.played.some((p) => p.responseId === "r_1"), 20_000, "r_1 played");
      // A second of speech is 50 Opus packets; the animation track carries its visemes.
      await until(async () => (await audioPackets()) - before >= 40, 20_000, "the speech's packets");
      await until(
        async () => (await page.evaluate(`globalThis.dc`) as number) > messagesBefore,
        20_000,
        "animation messages on the data channel",
      );
      await page.evaluate(`globalThis.player.close()`);
    } finally {
      await browser.close();
    }
  });
});
