/**
 * The SDK player video-free (`canvas` instead of `video`), in Debian's Chromium, on a live session of the
 * in-process reference engine with the `transparent` background: it plays the sound, draws the avatar
 * from the service's art in step with the sound, and the page shows through around the avatar (read back
 * from a screenshot of the page, not from the canvas). The drawer alone: what it draws when (its cost and
 * the mouth against the sound are measured by `bench/video_free_browser.ts`).
 */
import assert from "node:assert/strict";
import type { Page } from "playwright-core";
import { withLiveService } from "../../testing/live_service.ts";
// The worker side, loaded with this module rather than by compose()'s `await import()` during a test: its
// lip-sync module opens libespeak-ng when first imported, which the resource sanitizer would count as the
// test's own.
import "../../src/app/worker_side.ts";

/** Generous: the machine may be busy. */
const DEADLINE_MS = 30_000;
// deno-lint-ignore no-explicit-any
declare const document: any;

/** The RGB of a 1×1 PNG (Playwright's screenshot of one pixel). */
async function pngPixel(png: Uint8Array): Promise<[number, number, number]> {
  const dv = new DataView(png.buffer, png.byteOffset, png.byteLength);
  let colorType = 0;
  const idat: Uint8Array[] = [];
  for (let o = 8; o + 8 <= png.length;) {
    const len = dv.getUint32(o);
    const type = new TextDecoder().decode(png.subarray(o + 4, o + 8));
    if (type === "IHDR") colorType = png[o + 8 + 9];
    if (type === "IDAT") idat.push(png.subarray(o + 8, o + 8 + len));
    o += 12 + len;
  }
  const raw = new Uint8Array(
    await new Response(new Blob(idat as BlobPart[]).stream().pipeThrough(new DecompressionStream("deflate")))
      .arrayBuffer(),
  );
  assert.ok(colorType === 2 || colorType === 6, `PNG colour type ${colorType}`);
  // One pixel: whatever the row's filter, its bytes are the pixel (no neighbours to predict from).
  return [raw[1], raw[2], raw[3]];
}

Deno.test("video-free player: the avatar drawn over the page (transparent background), in step with the sound", async () => {
  await withLiveService(
    { projectId: "proj_video_free", scopes: ["sessions:read", "sessions:write"] },
    async (live) => {
      const s = await live.session({ avatar_id: "ada", bg_id: "transparent" });
      const page: Page = await live.page({ width: 400, height: 400 });
      const errors: string[] = [];
      page.on("pageerror", (e) => errors.push(String(e)));
      await page.evaluate(async ({ streamMetadata, clientToken }) => {
        document.body.innerHTML = "";
        document.body.style.margin = "0";
        document.body.style.background = "#ff00ff"; // the page: magenta
        const canvas = document.createElement("canvas");
        canvas.width = 256;
        canvas.height = 256;
        canvas.style.cssText = "position:absolute;left:0;top:0;width:256px;height:256px";
        document.body.append(canvas);
        const { createPlayer } = await import("/sdk/player.js");
        // deno-lint-ignore no-explicit-any
        const g = globalThis as any;
        g.states = [];
        g.player = createPlayer({
          canvas,
          streamMetadata,
          clientToken,
          microphone: false,
          // deno-lint-ignore no-explicit-any
          onState: (st: any) => g.states.push(st.state),
        });
      }, { streamMetadata: s.stream_metadata, clientToken: s.client_token });
      await page.waitForFunction('globalThis.player.state().state === "playing"', undefined, {
        timeout: DEADLINE_MS,
      }).catch(async (e) => {
        console.log(
          await page.evaluate(
            "JSON.stringify([globalThis.states, globalThis.player.stats(), globalThis.player.state()])",
          ),
        );
        throw e;
      });
      // The greeting plays: the sound is decoded and the clock runs.
      await page.waitForFunction("globalThis.player.stats().audioDecodedMs > 1500", undefined, {
        timeout: DEADLINE_MS,
      });
      // The sound catches up: a start-up's busy page raises the anchor 0.3–0.6 s behind for a moment
      // (measured 7 Dec, alone and beside two CPU hogs); it falls once the sound comes on time (`lowerBy`).
      // Waited for, not read at a set moment (528 ms at 1.5 s of sound in a CI run of 7 Dec). Here the page
      // is busy because the machine has no sound device: Chromium's `new AudioContext()` held the main thread
      // 235–328 ms (a CPU profile: `createAudioClock`'s own time 331 ms), and the first media waited behind it.
      await page.waitForFunction("(globalThis.player.stats().anchorMs ?? Infinity) < 500", undefined, {
        timeout: DEADLINE_MS,
      }).catch(async (e) => {
        const anchorMs = await page.evaluate("globalThis.player.stats().anchorMs");
        throw new Error(`the sound still plays ${anchorMs} ms behind`, { cause: e });
      });
      const stats = await page.evaluate("globalThis.player.stats()") as Record<string, number>;
      assert.ok(
        stats.audioDecodedMs < 5000,
        `the sound caught up only after ${stats.audioDecodedMs} ms of it`,
      );
      assert.equal(stats.framesDecoded, 0, "no video decoded");

      // The page shows through around the avatar; the avatar covers it where it is drawn.
      const pixel = async (x: number, y: number) =>
        await pngPixel(await page.screenshot({ clip: { x, y, width: 1, height: 1 }, type: "png" }));
      const corner = await pixel(6, 6);
      assert.deepEqual(corner, [255, 0, 255], `the page under the canvas's corner: ${corner}`);
      // Ada's cheek at view-box (200, 270) → canvas px (100, 135): her skin (#efc3a0) or its shade (#d79b78;
      // the head moves a few px), never the page.
      const cheek = await pixel(100, 135);
      const near = (c: number[], hex: number) =>
        [hex >> 16, (hex >> 8) & 255, hex & 255].every((v, i) => Math.abs(c[i] - v) <= 32);
      assert.ok(near(cheek, 0xefc3a0) || near(cheek, 0xd79b78), `the avatar's skin: ${cheek}`);

      // The drawer itself (no clock involved: instants are given): a frame is drawn only when what it shows
      // changes (a still avatar once, a moving head at most 25 times a second), and the mouth's cross-fade is
      // centred on the viseme's stamp (halfway there when its sound is heard).
      const drawer = await page.evaluate(async () => {
        const { createAvatarDrawer } = await import("/sdk/avatar_canvas.js");
        const make = async (soundStarts?: number[]) => {
          const canvas = document.createElement("canvas");
          canvas.width = 512;
          canvas.height = 512;
          const d = createAvatarDrawer({
            canvas,
            origin: location.origin,
            ...(soundStarts ? { soundStarts: () => soundStarts } : {}),
          });
          d.configure({ art_path: "/media/v0/art/ada", bg_id: "studio" });
          for (let i = 0; !d.ready(); i++) {
            if (i > 1500) throw new Error("the art did not load in 30 s");
            await new Promise((r) => setTimeout(r, 20));
          }
          const ctx = canvas.getContext("2d");
          // The sum of every pixel's RGB: the mouth is the only part that changes below.
          const shade = () => {
            const px = ctx.getImageData(0, 0, 512, 512).data;
            let sum = 0;
            for (let i = 0; i < px.length; i += 4) sum += px[i] + px[i + 1] + px[i + 2];
            return sum;
          };
          return { d, shade };
        };
        const still = await make();
        for (let t = 0; t < 2000; t += 10) still.d.draw(t);
        const moving = await make();
        for (let t = 0; t <= 2000; t += 200) {
          moving.d.push({ type: "head", t_ms: t, dx: (t / 200) % 2 ? 3 : -3, dy: 0 });
        }
        for (let t = 0; t < 1000; t += 5) moving.d.draw(t);
        const fade = await make();
        fade.d.push({ type: "viseme", t_ms: 0, viseme: "sil" });
        fade.d.push({ type: "viseme", t_ms: 500, viseme: "aa" });
        const at = (t: number) => (fade.d.draw(t), fade.shade());
        // The sound of that opening starts 30 ms before its stamp (the player knows it from the decoded
        // audio): the cross-fade is centred there instead; one 100 ms before is another sound's.
        const early = await make([470]);
        const far = await make([400]);
        for (const x of [early, far]) {
          x.d.push({ type: "viseme", t_ms: 0, viseme: "sil" });
          x.d.push({ type: "viseme", t_ms: 500, viseme: "aa" });
        }
        const atEarly = (t: number) => (early.d.draw(t), early.shade());
        return {
          still: still.d.stats().frames,
          moving: moving.d.stats().frames,
          sil: at(400),
          before: at(478),
          mid: at(500),
          after: at(522),
          aa: at(700),
          earlyBefore: atEarly(448),
          earlyMid: atEarly(470),
          earlyAfter: atEarly(492),
          farMid: (far.d.draw(500), far.shade()),
        };
      }) as Record<string, number>;
      assert.equal(drawer.still, 1, "a still avatar is drawn once");
      assert.ok(drawer.moving > 1 && drawer.moving <= 26, `a moving head: ${drawer.moving} frames in 1 s`);
      assert.equal(drawer.before, drawer.sil, "22 ms before the stamp the mouth is still closed");
      assert.equal(drawer.after, drawer.aa, "22 ms after the stamp the mouth is fully open");
      const span = drawer.aa - drawer.sil;
      assert.ok(span !== 0, "the open mouth differs from the closed one");
      assert.ok(
        Math.abs(drawer.mid - (drawer.sil + drawer.aa) / 2) < Math.abs(span) / 4,
        `at the stamp the mouth is halfway: ${JSON.stringify(drawer)}`,
      );
      assert.equal(drawer.earlyBefore, drawer.sil, "closed 22 ms before its sound starts");
      assert.equal(drawer.earlyAfter, drawer.aa, "open 22 ms after its sound starts");
      assert.ok(
        Math.abs(drawer.earlyMid - (drawer.sil + drawer.aa) / 2) < Math.abs(span) / 4,
        `halfway where its sound starts: ${JSON.stringify(drawer)}`,
      );
      assert.equal(drawer.farMid, drawer.mid, "a sound start 100 ms before the stamp is not this opening's");
      assert.deepEqual(errors, []);
      await page.evaluate("globalThis.player.close()");
    },
  );
});

Deno.test("video-free player: the sound waits for the animation track (its stamps held back 150 ms in the page, the anchor covers them)", async () => {
  // Until 6 Dec the anchor covered the sound's lateness only: on a short device path (Firefox on a sound
  // server, 10 ms) the sound was heard before the visemes of its instant were in, and the mouth opened late.
  await withLiveService(
    { projectId: "proj_video_free_late_visemes", scopes: ["sessions:read", "sessions:write"] },
    async (live) => {
      const s = await live.session({ avatar_id: "ada" });
      const page: Page = await live.page({ width: 300, height: 300 });
      const errors: string[] = [];
      page.on("pageerror", (e) => errors.push(String(e)));
      await page.evaluate(async ({ streamMetadata, clientToken }) => {
        // deno-lint-ignore no-explicit-any
        const g = globalThis as any;
        const Native = g.WebSocket;
        g.WebSocket = class extends Native {
          set onmessage(fn: (e: MessageEvent) => void) {
            super.onmessage = (e: MessageEvent) => {
              if (typeof e.data === "string" && /"type":"(viseme|face|head)"/.test(e.data)) {
                setTimeout(() => fn(e), 150);
              } else fn(e);
            };
          }
          get onmessage() {
            return super.onmessage;
          }
        };
        const canvas = document.createElement("canvas");
        canvas.width = 256;
        canvas.height = 256;
        document.body.append(canvas);
        const { createPlayer } = await import("/sdk/player.js");
        g.player = createPlayer({ canvas, streamMetadata, clientToken, microphone: false });
      }, { streamMetadata: s.stream_metadata, clientToken: s.client_token });
      // The greeting's visemes come 150 ms late: the sound comes to be held at least that long after its
      // instant (measured, alone or with the cores busy: 173–259 ms by 0.6 s of sound; without the animation's
      // part −40 … +35 ms, as with visemes on time). Waited for, not read at a set moment: read at 2.5 s of
      // sound it was 104 once in a full CI run (6 Dec) — most likely the late stamps measured only after the
      // start-up's settling, and a raise that only the animation track needs waits for a quiet moment in the
      // sound, up to 2 s (`raiseNow`). Past the start-up: while settling, a busy page's own lateness can lift
      // the anchor above 150 ms for a moment (seen: 230 ms at 0.6 s of sound, 180 after). And a start so busy
      // that the anchor went far behind (> 500 ms) falls back in the sound's pauses, within a second or so
      // (`lowerBy`, 8 Dec): waited for too. (A run of three browser test files two at a time failed in this test
      // after that change, its message not kept: a read at once of an anchor still falling is the likely cause.)
      const past = "globalThis.player.stats().audioDecodedMs > 2500";
      await page.waitForFunction(past, undefined, { timeout: DEADLINE_MS });
      const covered = "globalThis.player.stats().anchorMs > 150 && globalThis.player.stats().anchorMs < 500";
      await page.waitForFunction(covered, undefined, { timeout: DEADLINE_MS });
      const stats = await page.evaluate("globalThis.player.stats()") as Record<string, number>;
      assert.ok(stats.anchorMs < 500, `the sound plays ${stats.anchorMs} ms behind`);
      assert.deepEqual(errors, []);
      await page.evaluate("globalThis.player.close()");
    },
  );
});
