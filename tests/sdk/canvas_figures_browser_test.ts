/**
 * The video-free (canvas) player's figures say what it did (issue 33): each picture it draws is counted as a
 * presented frame once it is on screen (the animation frame after the drawing), and measured against the
 * sound of the instant it shows, heard at the audio clock's output time (`avOffsetMs`, the session's
 * `av_offset_ms`). A player made to show its pictures 40 ms late (`canvasDisplayMs` 40 ms short of the
 * default) reports about 40 ms more than one that is not, on the same session, in Debian's Chromium; and the
 * figures reach `GET /v1/sessions/{id}/metrics`.
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

/** Plays the session video-free for 3 s of sound with `canvasDisplayMs`; returns the player's figures. */
async function play(
  page: Page,
  s: { stream_metadata: unknown; client_token: string },
  canvasDisplayMs: number,
): Promise<{ avOffsetMs: number | null }> {
  await page.evaluate(async ({ streamMetadata, clientToken, canvasDisplayMs }) => {
    document.body.innerHTML = "";
    const canvas = document.createElement("canvas");
    canvas.width = 256;
    canvas.height = 256;
    document.body.append(canvas);
    const { createPlayer } = await import("/sdk/player.js");
    // deno-lint-ignore no-explicit-any
    (globalThis as any).player = createPlayer({
      canvas,
      streamMetadata,
      clientToken,
      microphone: false,
      canvasDisplayMs,
    });
  }, { streamMetadata: s.stream_metadata, clientToken: s.client_token, canvasDisplayMs });
  await page.waitForFunction('globalThis.player.state().state === "playing"', undefined, {
    timeout: DEADLINE_MS,
  });
  const from = await page.evaluate("globalThis.player.stats().audioDecodedMs") as number;
  await page.waitForFunction(`globalThis.player.stats().audioDecodedMs > ${from + 3000}`, undefined, {
    timeout: DEADLINE_MS,
  });
  const stats = await page.evaluate("globalThis.player.stats()") as { avOffsetMs: number | null };
  await page.evaluate("globalThis.player.close()");
  return { avOffsetMs: stats.avOffsetMs };
}

Deno.test("canvas player figures: presented pictures and their offset against the sound, which follows pictures shown late", async () => {
  await withLiveService(
    { projectId: "proj_canvas_figures", scopes: ["sessions:read", "sessions:write"] },
    async (live) => {
      const s = await live.session({ avatar_id: "ada", bg_id: "studio" });
      const sessionId = s.session_id;
      const page = await live.page();
      const errors: string[] = [];
      page.on("pageerror", (e) => errors.push(String(e)));
      // Alternating, twice each: on time (the default), and 40 ms late.
      const onTime: number[] = [], late: number[] = [];
      for (let round = 0; round < 2; round++) {
        for (const [into, displayMs] of [[onTime, 16], [late, 16 - 40]] as const) {
          const r = await play(page, s, displayMs);
          assert.ok(r.avOffsetMs !== null, "the canvas player measures its offset");
          into.push(r.avOffsetMs!);
        }
      }
      const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
      const shift = mean(late) - mean(onTime);
      assert.ok(
        Math.abs(shift - 40) <= 15,
        `pictures shown 40 ms late read ${shift.toFixed(1)} ms later (on time ${onTime}, late ${late})`,
      );
      assert.ok(Math.abs(mean(onTime)) <= 30, `on time: ${onTime}`);
      // The session's figures come from these players' reports: pictures presented, offsets measured.
      let metrics: Record<string, { count?: number; presented?: number }> = {};
      const deadline = Date.now() + DEADLINE_MS;
      for (;;) {
        const res = await fetch(`${live.service.url}/v1/sessions/${sessionId}/metrics`, {
          headers: { authorization: `Bearer ${live.apiKey}` },
        });
        metrics = await res.json();
        if ((metrics.av_offset_ms?.count ?? 0) > 0 && (metrics.frames?.presented ?? 0) > 0) break;
        if (Date.now() > deadline) throw new Error(`metrics: ${JSON.stringify(metrics)}`);
        await new Promise((r) => setTimeout(r, 200));
      }
      console.log(
        `canvas player avOffsetMs: on time ${onTime}, 40 ms late ${late}; metrics ${
          JSON.stringify(metrics.av_offset_ms)
        }`,
      );
      assert.deepEqual(errors, []);
    },
  );
});
