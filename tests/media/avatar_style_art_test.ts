/**
 * The style art: every choice of every style parameter draws something different (rasterised, compared
 * pixel by pixel), hair styles and face shapes change the silhouette (not only its colour), and a style
 * avatar's art document has the same layers as a stock one's: 15 viseme mouths and the blink states.
 */
import assert from "node:assert/strict";
import { faceSvg } from "../../src/media/art/avatars.ts";
import { artDocument, artDocumentOfLayers } from "../../src/media/art/document.ts";
import { layersOfLook } from "../../src/media/art/layers.ts";
import { VISEME_POSES } from "../../src/media/art/mouth.ts";
import { darken, lookOfStyle } from "../../src/media/art/style_art.ts";
import { CATALOG } from "../../src/media/catalog.ts";
import { VISEMES } from "../../src/media/lipsync/visemes.ts";
import { rasterise } from "../../src/media/raster.ts";
import {
  ACCESSORIES,
  BROW_STYLES,
  CLOTHING_STYLES,
  EYE_SHAPES,
  FACE_SHAPES,
  FACIAL_HAIR,
  GLASSES,
  HAIR_STYLES,
  parseAvatarStyle,
} from "../../src/vocabulary/avatar_style.ts";

const SIZE = 256;

async function draw(style: Record<string, unknown>): Promise<Uint8Array> {
  return await rasterise(
    faceSvg(lookOfStyle(parseAvatarStyle(style)), { pose: VISEME_POSES.sil }),
    SIZE,
    SIZE,
  );
}

/** Pixels whose colour or alpha differs noticeably. */
function changed(a: Uint8Array, b: Uint8Array): number {
  let n = 0;
  for (let i = 0; i < a.length; i += 4) {
    const d = Math.abs(a[i] - b[i]) + Math.abs(a[i + 1] - b[i + 1]) + Math.abs(a[i + 2] - b[i + 2]) +
      Math.abs(a[i + 3] - b[i + 3]);
    if (d > 24) n++;
  }
  return n;
}

/** Pixels covered (alpha) in one and not the other: a change of silhouette, whatever the colours. */
function silhouette(a: Uint8Array, b: Uint8Array): number {
  let n = 0;
  for (let i = 3; i < a.length; i += 4) if ((a[i] > 128) !== (b[i] > 128)) n++;
  return n;
}

Deno.test("style art: each choice of each parameter draws differently from every other choice", async () => {
  const params: [string, readonly (string | boolean)[]][] = [
    ["face_shape", FACE_SHAPES],
    ["hair_style", HAIR_STYLES],
    ["clothing_style", CLOTHING_STYLES],
    ["eye_shape", EYE_SHAPES],
    ["brow_style", BROW_STYLES],
    ["glasses", GLASSES],
    ["facial_hair", FACIAL_HAIR],
    ["accessory", ACCESSORIES],
    ["freckles", [false, true]],
  ];
  for (const [name, values] of params) {
    const drawn = [];
    for (const v of values) drawn.push(await draw({ [name]: v }));
    for (let i = 0; i < values.length; i++) {
      for (let j = i + 1; j < values.length; j++) {
        const n = changed(drawn[i], drawn[j]);
        assert.ok(n >= 3, `${name}: ${values[i]} and ${values[j]} differ in ${n} px`);
      }
    }
  }
});

Deno.test("style art: hair styles and face shapes are different silhouettes, not recolours", async () => {
  for (const [name, values] of [["hair_style", HAIR_STYLES], ["face_shape", FACE_SHAPES]] as const) {
    const drawn = [];
    // Hair drawn in the skin's colour: only the outline can tell them apart.
    for (const v of values) drawn.push(await draw({ [name]: v, hair_color: "#e8b894" }));
    for (let i = 0; i < values.length; i++) {
      for (let j = i + 1; j < values.length; j++) {
        const n = silhouette(drawn[i], drawn[j]);
        assert.ok(n >= 20, `${name}: ${values[i]} and ${values[j]} share their outline (${n} px differ)`);
      }
    }
  }
});

Deno.test("style art: colours are the style's (skin, hair, clothing) and omitted ones are derived", () => {
  const look = lookOfStyle(parseAvatarStyle({ skin_color: "#C08060", clothing_color: "#102030" }));
  assert.equal(look.skin, "#c08060");
  assert.equal(look.skinShade, darken("#c08060", 0.85));
  assert.equal(look.shirtShade, darken("#102030", 0.7));
  assert.equal(look.brows, look.hair);
  const doc = faceSvg(look, { pose: VISEME_POSES.sil });
  assert.ok(doc.includes("#c08060") && doc.includes("#102030"));
});

Deno.test("style art: a style avatar's art document has the stock layers (15 mouths, blinks, looks)", () => {
  const look = lookOfStyle(parseAvatarStyle({ hair_style: "afro", lip_color: "#a02040" }));
  const doc = artDocumentOfLayers(CATALOG, "av_test", layersOfLook(look));
  const stock = artDocument(CATALOG, "ada")!;
  assert.deepEqual(Object.keys(doc.mouths).sort(), [...VISEMES].sort());
  assert.deepEqual(Object.keys(doc.eyes), Object.keys(stock.eyes));
  assert.deepEqual(Object.keys(doc.eyes.closed), Object.keys(stock.eyes.closed));
  assert.ok(doc.mouths.aa.includes("#a02040"));
  assert.notEqual(doc.mouths.aa, doc.mouths.sil);
  assert.notEqual(doc.eyes.open.neutral, doc.eyes.closed.neutral);
  assert.deepEqual(doc.mouth_box, stock.mouth_box);
});
