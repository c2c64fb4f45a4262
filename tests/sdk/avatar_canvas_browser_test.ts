/**
 * The canvas drawer redraws only what changed (issue 33: the canvas player as light as promised): while the
 * head stays where it was, a frame draws only the boxes of the eyes and the mouth that changed. Whatever it
 * drew in part must be the picture a whole redraw gives: in Debian's Chromium, a drawer stepping through
 * visemes, cross-fades, a blink and head moves at 120 Hz shows, at chosen instants, exactly the pixels of a
 * fresh drawer drawing that instant whole. The box itself is tested in `avatar_damage_test.ts`.
 */
import assert from "node:assert/strict";
import { loadArtBank } from "../../src/media/art_bank.ts";
import { CATALOG } from "../../src/media/catalog.ts";
import { withLiveService } from "../../testing/live_service.ts";
// The worker side, loaded with this module rather than by compose()'s `await import()` during the test (its
// lip-sync module opens libespeak-ng when first imported, which the resource sanitizer would count).
import "../../src/app/worker_side.ts";

// deno-lint-ignore no-explicit-any
declare const document: any;
/** The page's {@link DRAWER_PAGE} helper. */
// deno-lint-ignore no-explicit-any
declare const readyDrawer: (messages: unknown[]) => Promise<{ d: any; canvas: any }>;

/**
 * Page script: `readyDrawer(messages)` — a drawer on a fresh 256×256 canvas of the page, ada's art wholly
 * rasterised (30 s at most), the messages pushed.
 */
const DRAWER_PAGE = `globalThis.readyDrawer = async (messages) => {
  const { createAvatarDrawer } = await import("/sdk/avatar_canvas.js");
  const canvas = document.createElement("canvas");
  canvas.width = 256;
  canvas.height = 256;
  document.body.append(canvas);
  const d = createAvatarDrawer({ canvas, origin: location.origin });
  d.configure({ art_path: "/media/v0/art/ada", bg_id: "studio" });
  const end = Date.now() + 30_000;
  while (!d.ready()) {
    if (Date.now() > end) throw new Error("the art did not load");
    await new Promise((r) => setTimeout(r, 20));
  }
  for (const m of messages) d.push(m);
  return { d, canvas };
};`;

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
/**
 * Instants compared: mid-fade (half of each mouth), the fade done, eyes closed, mouth and eyes changing at
 * once, head moved, after it.
 */
const INSTANTS = [100, 118, 312, 350, 432, 760, 1000];

Deno.test("canvas drawer: a frame drawn in part shows the pixels of the same instant drawn whole", async () => {
  await withLiveService({ projectId: "proj_canvas_partial", scopes: ["sessions:read"] }, async (live) => {
    const page = await live.page();
    await page.evaluate(DRAWER_PAGE);
    const result = await page.evaluate(async ({ messages, instants }) => {
      const drawer = () => readyDrawer(messages);
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
    assert.ok(result.at(-1)!.drawn > 2 * INSTANTS.length, JSON.stringify(result));
  });
});

Deno.test("canvas drawer: a cross-fade is drawn in its steps, not at every refresh", async () => {
  // The mouth's box on the 256-px canvas (every pose of ada's mouth).
  const m = (await loadArtBank(CATALOG, 256, 256)).avatars.get("ada")!.mouthBox;
  await withLiveService({ projectId: "proj_canvas_steps", scopes: ["sessions:read"] }, async (live) => {
    const page = await live.page();
    await page.evaluate(DRAWER_PAGE);
    const result = await page.evaluate(async (box) => {
      // Two changes of the mouth (an opening, a closing), the eyes and the head still, drawn at 250 Hz.
      const { d, canvas } = await readyDrawer(
        [["sil", 0], ["aa", 200], ["sil", 400]].map(([viseme, t_ms]) => ({ type: "viseme", t_ms, viseme })),
      );
      // The box's mean darkness after each frame drawn, with the instant drawn.
      const ctx = canvas.getContext("2d");
      const reads: [number, number][] = [];
      let frames = d.stats().frames;
      for (let t = 0; t <= 600; t += 4) {
        d.draw(t);
        if (d.stats().frames === frames) continue;
        frames = d.stats().frames;
        const px = ctx.getImageData(box.x, box.y, box.width, box.height).data;
        let sum = 0;
        for (let i = 0; i < px.length; i += 4) sum += px[i] + px[i + 1] + px[i + 2];
        reads.push([t, Math.round(255 - sum / (px.length / 4) / 3)]);
      }
      d.close();
      return reads;
    }, { x: m.x, y: m.y, width: m.width, height: m.height });
    // The first picture, then per change: half of each mouth from a quarter of the 40 ms fade (10 ms before
    // the stamp), then the viseme from three quarters (10 ms after).
    assert.deepEqual(result.map(([t]) => t), [0, 192, 212, 392, 412], JSON.stringify(result));
    const [closed, half, open, half2, closedAgain] = result.map(([, dark]) => dark);
    assert.ok(open > closed + 10, `the open mouth is darker: ${JSON.stringify(result)}`);
    assert.equal(closedAgain, closed, JSON.stringify(result));
    // (the mouth is drawn over the one before at half: not an even mix, but well between the two)
    const q = (open - closed) / 4;
    for (const h of [half, half2]) {
      assert.ok(h > closed + q && h < open - q, `half of each: ${JSON.stringify(result)}`);
    }
  });
});
