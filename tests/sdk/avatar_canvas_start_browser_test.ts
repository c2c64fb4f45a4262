/**
 * The canvas drawer's start (issue 33: every connect fast, the canvas player too). The first picture: the
 * drawer draws the avatar at rest from one SVG document as soon as the art is in — from the hello's
 * `animation.art`, without a request — before it has rasterised the layers the moving avatar is drawn from;
 * then the first
 * layered frame, whose first layers are rasterised together on one sheet (`layerSheet`). In Debian's
 * Chromium the two show the same pixels (within anti-aliasing), both when the layers are nested in one
 * document (the stock avatar) and when one layer defines an id another uses (the layers then kept apart and
 * rasterised one by one; nested, the head's gradient would be the body's). Then the 14 other mouths,
 * rasterised together on one sheet: each is the pixels of that mouth drawn whole.
 */
import assert from "node:assert/strict";
import { withLiveService } from "../../testing/live_service.ts";
// The worker side, loaded with this module rather than by compose()'s `await import()` during the test (its
// lip-sync module opens libespeak-ng when first imported, which the resource sanitizer would count).
import "../../src/app/worker_side.ts";

// deno-lint-ignore no-explicit-any
declare const document: any;
// deno-lint-ignore no-explicit-any
declare const Image: any;
// deno-lint-ignore no-explicit-any
declare const stockAndClash: () => Promise<{ art: any; clash: any }>;
// deno-lint-ignore no-explicit-any
declare const newCanvas: () => any;

/**
 * Page helpers (evaluated in the page first): the stock art and a copy whose body defines a red `face` (in one
 * document the head's `url(#face)` would take it: the layers cannot be nested), and a 256×256 canvas on the page.
 */
const PAGE_HELPERS = `
globalThis.stockAndClash = async () => {
  const art = await (await fetch("/media/v0/art/ada")).json();
  const defs = '<defs><radialGradient id="face"><stop offset="0" stop-color="#f00"/></radialGradient></defs>';
  return { art, clash: { ...art, body: art.body.replace("</svg>", defs + "</svg>") } };
};
globalThis.newCanvas = () => {
  const canvas = document.createElement("canvas");
  canvas.width = 256;
  canvas.height = 256;
  document.body.append(canvas);
  return canvas;
};
`;

Deno.test("canvas drawer: the first picture, at rest in one piece from the hello's art, is the layered drawing's", async () => {
  await withLiveService({ projectId: "proj_rest_picture", scopes: ["sessions:read"] }, async (live) => {
    const page = await live.page();
    await page.evaluate(PAGE_HELPERS);
    const result = await page.evaluate(async () => {
      const { createAvatarDrawer } = await import("/sdk/avatar_canvas.js");
      const { art, clash } = await stockAndClash();
      const run = async (doc: unknown) => {
        const canvas = newCanvas();
        const requests: string[] = [];
        const d = createAvatarDrawer({
          canvas,
          origin: location.origin,
          fetch: (url: string) => {
            requests.push(url);
            return fetch(url);
          },
        });
        d.configure({ art_path: "/media/v0/art/ada", art: doc, bg_id: "studio" });
        const pixels = (): number[] => Array.from(canvas.getContext("2d").getImageData(0, 0, 256, 256).data);
        const end = Date.now() + 30_000;
        // Polled every few ms: the layers wait for the first picture to be drawn (or 1 s).
        while (!d.draw(0)) {
          if (Date.now() > end) throw new Error("no first picture");
          await new Promise((r) => setTimeout(r, 2));
        }
        const first = pixels();
        const framesAtFirst = d.stats().frames;
        while (!d.ready()) {
          if (Date.now() > end) throw new Error("the layers did not load");
          await new Promise((r) => setTimeout(r, 20));
        }
        d.draw(0);
        const layered = pixels();
        const frames = d.stats().frames;
        d.close();
        canvas.remove();
        let differing = 0, maxDelta = 0, opaque = 0;
        for (let i = 0; i < first.length; i++) {
          const delta = Math.abs(first[i] - layered[i]);
          if (delta > 2) differing++;
          maxDelta = Math.max(maxDelta, delta);
          if (i % 4 === 3 && first[i] === 255) opaque++;
        }
        return { framesAtFirst, frames, differing, maxDelta, opaque, requests };
      };
      return { stock: await run(art), clash: await run(clash) };
    });
    for (const [name, r] of Object.entries(result)) {
      const what = `${name}: ${JSON.stringify(r)}`;
      assert.deepEqual(r.requests, [], `${name}: the art came with the hello, nothing was fetched`);
      // The first picture was the one at rest (one frame), the layered drawing another, drawn whole.
      assert.equal(r.framesAtFirst, 1, what);
      assert.equal(r.frames, 2, what);
      assert.ok(r.opaque > 256 * 256 * 0.9, `${what}: the studio background covers the canvas`);
      // Edges anti-aliased once in one piece or per layer: at most a few values differ by more than 2 levels
      // (none did in Debian's Chromium; the head's gradient taken from the body's red made 22,586 differ).
      assert.ok(r.differing < 256 * 256 * 4 * 0.005, what);
    }
  });
});

Deno.test("canvas drawer: the mouths rasterised together on one sheet are each the pixels of that mouth drawn whole", async () => {
  await withLiveService({ projectId: "proj_mouth_sheet", scopes: ["sessions:read"] }, async (live) => {
    const page = await live.page();
    const result = await page.evaluate(async () => {
      const { mouthSheet } = await import("/sdk/avatar_canvas.js");
      const art = await (await fetch("/media/v0/art/ada")).json();
      const names = Object.keys(art.mouths).filter((v) => v !== "sil");
      const svgs = names.map((v) => art.mouths[v]);
      const canvasOf = (w: number, h: number) => {
        const c = document.createElement("canvas");
        c.width = w;
        c.height = h;
        return c.getContext("2d", { willReadFrequently: true });
      };
      const whole = async (svg: string, w: number, h: number) => {
        const img = new Image();
        img.src = `data:image/svg+xml;charset=utf-8,${
          encodeURIComponent(svg.replace('width="512" height="512"', `width="${w}" height="${h}"`))
        }`;
        await img.decode();
        const cx = canvasOf(w, h);
        cx.drawImage(img, 0, 0, w, h);
        return cx.getImageData(0, 0, w, h).data;
      };
      const out: Record<string, unknown> = {};
      // A canvas on which the view box maps to whole pixels, and one on which it does not.
      for (const [w, h] of [[256, 256], [300, 300]]) {
        const layers = await mouthSheet(svgs, art.mouth_box, w, h);
        if (!layers) throw new Error("no sheet");
        let worst = 0, differing = 0, covered = 0;
        for (let i = 0; i < names.length; i++) {
          const cx = canvasOf(w, h);
          cx.drawImage(layers[i].b, layers[i].x, layers[i].y);
          const a = cx.getImageData(0, 0, w, h).data;
          const b = await whole(svgs[i], w, h);
          // Premultiplied (a colour's value at alpha 1 of 255 means nothing), per pixel the largest channel.
          for (let j = 0; j < a.length; j += 4) {
            let d = Math.abs(a[j + 3] - b[j + 3]);
            for (let k = 0; k < 3; k++) {
              d = Math.max(d, Math.abs(a[j + k] * a[j + 3] - b[j + k] * b[j + 3]) / 255);
            }
            if (d > 8) differing++;
            worst = Math.max(worst, d);
            if (b[j + 3] > 0) covered++;
          }
          layers[i].b.close();
        }
        out[`${w}x${h}`] = { worst, differing, covered };
      }
      // Mouths that define the same id (as the art did before 7 Dec: every one `mcav`) are not put together.
      const clashing = svgs.map((svg, i) => svg.replaceAll(`m${names[i]}-`, "m"));
      out.clashing = await mouthSheet(clashing, art.mouth_box, 256, 256);
      return out;
    });
    for (const size of ["256x256", "300x300"]) {
      // deno-lint-ignore no-explicit-any
      const r = result[size] as any;
      assert.ok(r.covered > 14 * 100, `${size}: ${JSON.stringify(r)} (the mouths drew something)`);
      // (exact on a canvas where the view box maps to whole pixels; 41 of 5,632 pixels past 8 levels at 300)
      assert.ok(r.differing <= r.covered * 0.02, `${size}: ${JSON.stringify(r)}`);
    }
    assert.equal(result.clashing, null);
  });
});

Deno.test("canvas drawer: before the head's layers are in, a viseme is drawn over the picture at rest as the layered drawing shows it", async () => {
  await withLiveService({ projectId: "proj_early_mouths", scopes: ["sessions:read"] }, async (live) => {
    const page = await live.page();
    await page.evaluate(PAGE_HELPERS);
    const result = await page.evaluate(async () => {
      const { createAvatarDrawer } = await import("/sdk/avatar_canvas.js");
      // (the mouths of the clashing art cannot share a document with what lies under them)
      const { art, clash } = await stockAndClash();
      const run = async (doc: unknown) => {
        const canvas = newCanvas();
        const d = createAvatarDrawer({ canvas, origin: location.origin });
        d.configure({ art: doc, bg_id: "studio" });
        // An open mouth from the start: drawn at 200 ms it is past its cross-fade.
        d.push({ type: "viseme", t_ms: 0, viseme: "aa" });
        const pixels = (): number[] => Array.from(canvas.getContext("2d").getImageData(0, 0, 256, 256).data);
        const end = Date.now() + 30_000;
        const stages: string[] = [];
        let rest: number[] | null = null, early: number[] | null = null;
        // Polled every few ms, drawing as a player does each refresh.
        while (!d.ready()) {
          if (Date.now() > end) throw new Error(`the layers did not load (${stages})`);
          const stage = d.stats().stage;
          if (stage === "none") d.draw(200);
          if (stage === "rest" && !rest) rest = pixels();
          if (stage === "mouths" && !early) {
            const before = d.stats().frames;
            d.draw(200);
            if (d.stats().frames !== before + 1) throw new Error("the mouth was not drawn");
            early = pixels();
          }
          if (stages.at(-1) !== stage) stages.push(stage);
          await new Promise((r) => setTimeout(r, 2));
        }
        d.draw(200);
        const layered = pixels();
        d.close();
        canvas.remove();
        // Pixels differing by more than 2 levels in any channel.
        const differ = (a: number[] | null, b: number[]) => {
          if (!a) return null;
          let n = 0;
          for (let i = 0; i < a.length; i += 4) {
            if ([0, 1, 2, 3].some((k) => Math.abs(a[i + k] - b[i + k]) > 2)) n++;
          }
          return n;
        };
        return { stages, restVsLayered: differ(rest, layered), earlyVsLayered: differ(early, layered) };
      };
      return { stock: await run(art), clash: await run(clash) };
    });
    const { stock, clash } = result;
    assert.deepEqual(stock.stages, ["none", "rest", "mouths", "moving"], JSON.stringify(stock));
    // The open mouth is not the picture at rest's closed one; drawn over it, it is the layered drawing's.
    assert.ok(stock.restVsLayered! > 100, JSON.stringify(stock));
    assert.ok(stock.earlyVsLayered! < 256 * 256 * 0.005, JSON.stringify(stock));
    // Mouths that cannot share a document with what lies under them wait for the moving avatar.
    assert.deepEqual(clash.stages, ["none", "rest", "moving"], JSON.stringify(clash));
  });
});
