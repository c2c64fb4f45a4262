/**
 * A project avatar video-free, in Debian's Chromium, through the SDK: made with the SDK's `createAvatar`
 * from a style (a red shirt, green lips: colours no stock avatar has), named in `avatar_config` of a live
 * session of the in-process reference engine, and drawn by the SDK's canvas player from the art the service
 * serves that session — its shirt on the canvas, and its mouth (the lips' green) moving while the greeting
 * plays (read from the canvas's pixels at intervals: the mouth's area changes as the visemes do).
 */
import assert from "node:assert/strict";
import { withLiveService } from "../../testing/live_service.ts";
// The worker side, loaded with this module rather than by compose()'s `await import()` during a test: its
// lip-sync module opens libespeak-ng when first imported, which the resource sanitizer would count as the
// test's own.
import "../../src/app/worker_side.ts";

/** Generous: the machine may be busy. */
const DEADLINE_MS = 30_000;
// deno-lint-ignore no-explicit-any
declare const document: any;

Deno.test("project avatar video-free: made with the SDK, drawn by the SDK's canvas player, its mouth moving", async () => {
  const scopes = ["sessions:read", "sessions:write", "avatars:read", "avatars:write"] as const;
  await withLiveService({ projectId: "proj_avatar_browser", scopes: [...scopes] }, async (live) => {
    const avatar = await live.client.createAvatar({
      name: "Green lips",
      style: { clothing_color: "#e02020", clothing_style: "tshirt", lip_color: "#10d010" },
    });
    assert.match(avatar.avatar_id, /^av_/);
    const s = await live.session({ avatar_id: avatar.avatar_id, bg_id: "transparent" });
    const page = await live.page({ width: 400, height: 400 });
    const errors: string[] = [];
    page.on("pageerror", (e) => errors.push(String(e)));
    await page.evaluate(async ({ streamMetadata, clientToken }) => {
      document.body.innerHTML = "";
      const canvas = document.createElement("canvas");
      canvas.width = 256;
      canvas.height = 256;
      document.body.append(canvas);
      const { createPlayer } = await import("/sdk/player.js");
      // deno-lint-ignore no-explicit-any
      const g = globalThis as any;
      g.canvas = canvas;
      g.player = createPlayer({ canvas, streamMetadata, clientToken, microphone: false });
    }, { streamMetadata: s.stream_metadata, clientToken: s.client_token });
    await page.waitForFunction('globalThis.player.state().state === "playing"', undefined, {
      timeout: DEADLINE_MS,
    });
    // While the greeting plays: the lips' green pixels on the canvas, every 80 ms for 3 s of sound, and the
    // shirt's colour at the bottom centre.
    const seen = await page.evaluate(async () => {
      // deno-lint-ignore no-explicit-any
      const g = globalThis as any;
      const ctx = g.canvas.getContext("2d");
      const lips: number[] = [];
      const from = g.player.stats().audioDecodedMs;
      for (let i = 0; i < 200 && g.player.stats().audioDecodedMs < from + 3000; i++) {
        const px = ctx.getImageData(0, 0, 256, 256).data;
        let n = 0;
        for (let p = 0; p < px.length; p += 4) {
          if (px[p + 3] > 200 && px[p + 1] > 150 && px[p] < 90 && px[p + 2] < 90) n++;
        }
        lips.push(n);
        await new Promise((r) => setTimeout(r, 80));
      }
      const shirt = [...ctx.getImageData(128, 248, 1, 1).data];
      return { lips, shirt, stats: g.player.stats() };
    });
    assert.equal(seen.stats.framesDecoded, 0, "no video decoded");
    const [r, gr, b] = seen.shirt;
    assert.ok(r > 130 && r > 3 * gr && r > 3 * b, `the avatar's red shirt on the canvas: ${seen.shirt}`);
    assert.ok(Math.max(...seen.lips) > 0, `the project avatar's green lips drawn: ${seen.lips}`);
    const shapes = new Set(seen.lips);
    assert.ok(shapes.size >= 3, `the mouth moves while it speaks (lip areas seen: ${[...shapes]})`);
    assert.deepEqual(errors, []);
    await page.evaluate("globalThis.player.close()");
  });
});
