/**
 * The box the canvas drawer draws anew (`changed` in `sdk/avatar_damage.js`): the union of the old and new
 * boxes of what changed; the whole canvas (null) for a first frame or another art. Its pixels are checked in
 * a browser by `avatar_canvas_browser_test.ts`.
 */
import assert from "node:assert/strict";
import { changed } from "../../sdk/avatar_damage.js";

const layer = (x: number, y: number, w: number, h: number) => ({
  b: { width: w, height: h } as ImageBitmap,
  x,
  y,
});
const art = {};
const head = layer(80, 40, 200, 240);
const eyesOpen = layer(100, 80, 60, 20);
const eyesShut = layer(102, 86, 56, 10);
const sil = layer(110, 150, 40, 12);
const aa = layer(106, 146, 48, 30);
const frame = (o: Partial<Parameters<typeof changed>[1]> = {}) => ({
  art,
  w: 512,
  h: 512,
  ox: 0,
  oy: 0,
  head,
  eyes: eyesOpen,
  mouth: sil,
  under: null,
  alpha: 1,
  ...o,
});

Deno.test("canvas drawer: the whole canvas for a first frame, another art, a resized canvas", () => {
  assert.equal(changed(null, frame()), null);
  assert.equal(changed(frame(), frame({ art: {} })), null);
  assert.equal(changed(frame(), frame({ w: 256, mouth: aa })), null);
  assert.equal(changed(frame(), frame({ h: 511, mouth: aa })), null);
});

Deno.test("canvas drawer: a mouth change draws the old and new mouths' box, a pixel wider, at the head's offset", () => {
  assert.deepEqual(changed(frame(), frame({ mouth: aa })), { x: 105, y: 145, w: 50, h: 32 });
  assert.deepEqual(changed(frame({ ox: 3, oy: -2 }), frame({ ox: 3, oy: -2, mouth: aa })), {
    x: 108,
    y: 143,
    w: 50,
    h: 32,
  });
  // a cross-fade's step: the same layers at another opacity
  const fading = frame({ mouth: aa, under: sil, alpha: 0.4 });
  assert.deepEqual(changed(fading, { ...fading, alpha: 0.6 }), { x: 105, y: 145, w: 50, h: 32 });
});

Deno.test("canvas drawer: a blink draws the eyes' box; a blink while the mouth changes, both", () => {
  assert.deepEqual(changed(frame(), frame({ eyes: eyesShut })), { x: 99, y: 79, w: 62, h: 22 });
  assert.deepEqual(changed(frame(), frame({ eyes: eyesShut, mouth: aa })), { x: 99, y: 79, w: 62, h: 98 });
});

Deno.test("canvas drawer: a head move draws the head where it was and where it is, with all on it", () => {
  assert.deepEqual(changed(frame(), frame({ ox: 2, oy: -3 })), { x: 79, y: 36, w: 204, h: 245 });
  // a mouth far outside the head still counts (both places)
  const low = layer(100, 300, 40, 10);
  assert.deepEqual(changed(frame({ mouth: low }), frame({ ox: 1, mouth: low })), {
    x: 79,
    y: 39,
    w: 203,
    h: 272,
  });
});

Deno.test("canvas drawer: nothing that shows changed: the whole canvas, to be sure", () => {
  assert.equal(changed(frame(), frame()), null);
  assert.equal(changed(frame({ mouth: null }), frame({ mouth: null, alpha: 0.5 })), null);
});
