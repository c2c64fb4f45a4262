/**
 * What the art document promises of its mouths (docs/media-plane.md, "The art"), which lets a client
 * rasterise them together (the SDK's mouth sheet): no two mouths define the same id, and a mouth draws
 * nothing outside `mouth_box` — for the stock avatars and a customer's rigged drawing, read back from resvg.
 */
import assert from "node:assert/strict";
import { acceptSvg } from "../../src/avatar_svg/accept.ts";
import { type ArtDocument, artDocument, artDocumentOfLayers } from "../../src/media/art/document.ts";
import { layersOfDrawing } from "../../src/media/art/drawing_art.ts";
import { CATALOG } from "../../src/media/catalog.ts";
import { rasterise } from "../../src/media/raster.ts";
import { RIGGED } from "../../testing/rigged_drawing.ts";

const docs = (): ArtDocument[] => [
  ...CATALOG.avatars.map((a) => artDocument(CATALOG, a.id)!),
  artDocumentOfLayers(CATALOG, "av_drawing", layersOfDrawing(acceptSvg(RIGGED))),
];

Deno.test("art document: no two mouths define the same id", () => {
  for (const doc of docs()) {
    const owner = new Map<string, string>();
    for (const [viseme, svg] of Object.entries(doc.mouths)) {
      for (const [, id] of svg.matchAll(/\sid="([^"]*)"/g)) {
        assert.ok(id.startsWith(`m${viseme}-`), `${doc.avatar_id} ${viseme}: id ${id}`);
        assert.ok(
          !owner.has(id) || owner.get(id) === viseme,
          `${doc.avatar_id}: ${id} in ${owner.get(id)} and ${viseme}`,
        );
        owner.set(id, viseme);
      }
    }
    assert.ok(owner.size >= 10, `${doc.avatar_id}: ${owner.size} ids (the open mouths clip their cavity)`);
  }
});

Deno.test("art document: a mouth draws nothing outside mouth_box", async () => {
  for (const doc of docs()) {
    const b = doc.mouth_box;
    for (const [viseme, svg] of Object.entries(doc.mouths)) {
      const rgba = await rasterise(svg, 512, 512);
      let inside = 0;
      for (let y = 0; y < 512; y++) {
        for (let x = 0; x < 512; x++) {
          if (rgba[(y * 512 + x) * 4 + 3] === 0) continue;
          // (a pixel touching the box counts as inside it)
          const out = x + 1 <= b.x || x >= b.x + b.width || y + 1 <= b.y || y >= b.y + b.height;
          assert.ok(!out, `${doc.avatar_id} ${viseme}: pixel (${x}, ${y}) outside ${JSON.stringify(b)}`);
          inside++;
        }
      }
      assert.ok(inside > 20, `${doc.avatar_id} ${viseme}: ${inside} pixels drawn`);
    }
  }
});
