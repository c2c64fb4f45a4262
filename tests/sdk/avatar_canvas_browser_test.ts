/**
 * The canvas drawer redraws only what changed (issue 33: the canvas player as light as promised): while the
 * head stays where it was, a frame draws only the boxes of the eyes and the mouth that changed. Whatever it
 * drew in part must be the picture a whole redraw gives: in Debian's Chromium, a drawer stepping through
 * visemes, cross-fades, a blink and head moves at 120 Hz shows, at chosen instants, exactly the pixels of a
 * fresh drawer drawing that instant whole. The box itself is tested in `avatar_damage_test.ts`.
 */
import assert from "node:assert/strict";
import { withLiveService } from "../../testing/live_service.ts";
// The worker side, loaded with this module rather than by compose()'s `await import()` during the test (its
// lip-sync module opens libespeak-ng when first imported, which the resource sanitizer would count).
import "../../src/app/worker_side.ts";

// deno-lint-ignore no-explicit-any
declare const document: any;

/** The animation track: visemes with cross-fades, a blink, then the head moving. */
const MESSAGES = [
  { type: "viseme", t_ms: 0, viseme: "sil" },
  { type: "viseme", t_ms: 100, viseme: "aa" },
  { type: "viseme", t_ms: 180, viseme: "PP" },
  { type: "viseme", t_ms: 260, viseme: "oh" },
  { type: "face", t_ms: 300, state: "speaking", eyes: "closed", look: "neutral" },
  { type: "viseme", t_ms: 340, viseme: "E" },
  { type: "face", t_ms: 420, state: "speaking", eyes: "open", look: "neutral" },
  { type: "viseme", t_ms: 500, viseme: "sil" },
  { type: "head", t_ms: 600, dx: 0, dy: 0 },
  { type: "head", t_ms: 900, dx: 6, dy: -4 },
  { type: "viseme", t_ms: 950, viseme: "aa" },
];
/** Instants compared: mid-fade, eyes closed, mouth and eyes changing at once, head moved, after it. */
const INSTANTS = [118, 312, 350, 432, 760, 1000];

Deno.test("canvas drawer: a frame drawn in part shows the pixels of the same instant drawn whole", async () => {
  await withLiveService({ projectId: "proj_canvas_partial", scopes: ["sessions:read"] }, async (live) => {
    const page = await live.page();
    const result = await page.evaluate(async ({ messages, instants }) => {
      const { createAvatarDrawer } = await import("/sdk/avatar_canvas.js");
      const until = async (cond: () => boolean) => {
        const end = Date.now() + 30_000;
        while (!cond()) {
          if (Date.now() > end) throw new Error("the art did not load");
          await new Promise((r) => setTimeout(r, 20));
        }
      };
      const drawer = async () => {
        const canvas = document.createElement("canvas");
        canvas.width = 256;
        canvas.height = 256;
        document.body.append(canvas);
        const d = createAvatarDrawer({ canvas, origin: location.origin });
        d.configure({ art_path: "/media/v0/art/ada", bg_id: "studio" });
        await until(() => d.ready());
        for (const m of messages) d.push(m);
        return { d, canvas };
      };
      // deno-lint-ignore no-explicit-any
      const pixels = (canvas: any): number[] =>
        Array.from(canvas.getContext("2d").getImageData(0, 0, 256, 256).data);
      const stepping = await drawer();
      const out: { t: number; differing: number; maxDelta: number; drawn: number }[] = [];
      let next = 0;
      for (let t = 0; t <= 1100 && next < instants.length; t += 8) {
        const at = Math.min(t, instants[next]);
        stepping.d.draw(at);
        if (at !== instants[next]) continue;
        const a = pixels(stepping.canvas);
        const whole = await drawer();
        whole.d.draw(at);
        const b = pixels(whole.canvas);
        whole.d.close();
        whole.canvas.remove();
        let differing = 0, maxDelta = 0;
        for (let i = 0; i < a.length; i++) {
          const delta = Math.abs(a[i] - b[i]);
          if (delta > 0) differing++;
          maxDelta = Math.max(maxDelta, delta);
        }
        out.push({ t: at, differing, maxDelta, drawn: stepping.d.stats().frames });
        next++;
        t = at;
      }
      return out;
    }, { messages: MESSAGES, instants: INSTANTS });
    assert.equal(result.length, INSTANTS.length, JSON.stringify(result));
    for (const r of result) {
      assert.ok(r.maxDelta <= 1, `at ${r.t} ms ${r.differing} values differ, by up to ${r.maxDelta}`);
    }
    // It stepped through the track, drawing when the picture changed (not once per instant compared).
    assert.ok(result.at(-1)!.drawn > 20, JSON.stringify(result));
  });
});
