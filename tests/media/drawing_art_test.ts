/**
 * A customer's rigged drawing as avatar layers: fitted to the frame, cut by the rig's ids, the 15 viseme
 * mouths drawn in the rig's box in its lip colour, blinks swapping the eye groups; rasterised, the pixels
 * say so.
 */
import assert from "node:assert/strict";
import { acceptSvg } from "../../src/avatar_svg/accept.ts";
import { artDocumentOfLayers } from "../../src/media/art/document.ts";
import { layersOfDrawing } from "../../src/media/art/drawing_art.ts";
import { svgDocument } from "../../src/media/art/layers.ts";
import { VISEME_POSES } from "../../src/media/art/mouth.ts";
import { CATALOG } from "../../src/media/catalog.ts";
import { VISEMES } from "../../src/media/lipsync/visemes.ts";
import { rasterise } from "../../src/media/raster.ts";
import { RIGGED } from "../../testing/rigged_drawing.ts";

function px(rgba: Uint8Array, x: number, y: number): number[] {
  const i = (y * 512 + x) * 4;
  return [rgba[i], rgba[i + 1], rgba[i + 2], rgba[i + 3]];
}

Deno.test("drawing art: the rig cuts the drawing into layers fitted to the frame", async () => {
  const layers = layersOfDrawing(acceptSvg(RIGGED));
  // Fitted: scale 2.56, 128 px bands above and below; the mouth's box follows.
  assert.deepEqual(layers.mouthBox, { x: 230.4, y: 268.8, width: 51.2, height: 25.6 });
  const body = await rasterise(layers.body, 512, 512);
  const head = await rasterise(layers.head, 512, 512);
  assert.deepEqual(px(body, 256, 128 + 90 * 2.56 | 0).slice(0, 3), [0x20, 0x40, 0xc0], "ground in the body");
  assert.equal(px(body, 256, 250)[3], 0, "no head in the body");
  assert.deepEqual(
    px(head, 256, 128 + 20 * 2.56 | 0).slice(0, 3),
    [0x20, 0xc0, 0x40],
    "the head group's fill",
  );
  assert.ok(!layers.head.includes("#d02030"), "the rig's #mouth is never drawn");
  assert.ok(!layers.body.includes("eyes-open") && !layers.head.includes("ffffff"));
  const open = await rasterise(layers.eyes("open", "neutral"), 512, 512);
  const closed = await rasterise(layers.eyes("closed", "neutral"), 512, 512);
  const eye = [Math.round(88 * 2.56), Math.round(128 + 38 * 2.56) - 4] as const;
  assert.deepEqual(px(open, ...eye).slice(0, 3), [255, 255, 255], "open eye");
  assert.notDeepEqual(px(closed, ...eye).slice(0, 3), [255, 255, 255], "closed in a blink");
  assert.notEqual(
    layers.eyes("open", "thinking"),
    layers.eyes("open", "neutral"),
    "brows lift with the look",
  );
});

Deno.test("drawing art: the 15 mouths are drawn in the rig's box, in its lip colour, and differ", async () => {
  const layers = layersOfDrawing(acceptSvg(RIGGED));
  const doc = artDocumentOfLayers(CATALOG, "av_x", layers);
  assert.deepEqual(Object.keys(doc.mouths).sort(), [...VISEMES].sort());
  assert.ok(doc.mouths.aa.includes("#d02030"));
  const aa = await rasterise(svgDocument(layers.mouthElements(VISEME_POSES.aa)), 512, 512);
  const sil = await rasterise(svgDocument(layers.mouthElements(VISEME_POSES.sil)), 512, 512);
  let inside = 0, outside = 0, differ = 0;
  for (let y = 0; y < 512; y++) {
    for (let x = 0; x < 512; x++) {
      const a = px(aa, x, y)[3];
      const inBox = x >= 226 && x <= 286 && y >= 262 && y <= 300;
      if (a > 0) inBox ? inside++ : outside++;
      if (a !== px(sil, x, y)[3]) differ++;
    }
  }
  assert.ok(inside > 200, `mouth pixels in the box: ${inside}`);
  assert.equal(outside, 0, "nothing of the mouth outside its box");
  assert.ok(differ > 100, `aa and sil differ in ${differ} px`);
});

Deno.test("viseme names: the API's list is the media plane's", async () => {
  const { VISEME_NAMES } = await import("../../src/vocabulary/viseme_names.ts");
  assert.deepEqual([...VISEME_NAMES], [...VISEMES]);
});
