// @ts-check
/**
 * What the canvas drawer (`./avatar_canvas.js`) must draw anew between two frames: the box of the eyes or the
 * mouth that changed (a blink, a viseme, a cross-fade's step), or of the head and all on it when it moved, so
 * the browser rasterises and composites those pixels and not the whole canvas (a 512×512 canvas redrawn 25
 * times a second costs Chromium ≈ 1.7 % of a core less drawn in part: docs/media-plane.md). No DOM: tested in
 * Deno.
 *
 * @module
 */

/**
 * What a frame drew: the art, the canvas's size, the head's offset (canvas pixels), the layers that move with
 * the head (the head, the eyes, the mouth and the mouth it fades from) and the mouth's opacity.
 * @typedef {{ art: object; w: number; h: number; ox: number; oy: number; head: Layer | null; eyes: Layer | null; mouth: Layer | null; under: Layer | null; alpha: number }} Drawn
 * @typedef {{ b: ImageBitmap; x: number; y: number }} Layer A layer cropped to what it covers, and where.
 */

/**
 * The box to draw anew between two frames of one art, or null for the whole canvas (the first frame, another
 * art or canvas size — a resized canvas is cleared —, nothing that shows changed): the union of the boxes of what changed, before and after — the eyes, the
 * mouth (a viseme, a cross-fade's step), or, when the head moved, everything that moves with it — in whole
 * pixels, a pixel wider each way. Whatever lies outside it is the same in both frames.
 * @param {Drawn | null} a what the canvas shows
 * @param {Drawn} b the frame to draw
 * @returns {{ x: number; y: number; w: number; h: number } | null}
 */
export function changed(a, b) {
  if (!a || a.art !== b.art || a.w !== b.w || a.h !== b.h) return null;
  /** @type {[Layer | null, Drawn][]} */
  const boxes = [];
  const both = (/** @type {(d: Drawn) => (Layer | null)[]} */ of) => {
    for (const l of of(a)) boxes.push([l, a]);
    for (const l of of(b)) boxes.push([l, b]);
  };
  if (a.ox !== b.ox || a.oy !== b.oy || a.head !== b.head) both((d) => [d.head, d.eyes, d.mouth, d.under]);
  else {
    if (a.eyes !== b.eyes) both((d) => [d.eyes]);
    if (a.mouth !== b.mouth || a.under !== b.under || a.alpha !== b.alpha) both((d) => [d.mouth, d.under]);
  }
  let x0 = Infinity, y0 = Infinity, x1 = -Infinity, y1 = -Infinity;
  for (const [l, d] of boxes) {
    if (!l) continue;
    x0 = Math.min(x0, l.x + d.ox);
    y0 = Math.min(y0, l.y + d.oy);
    x1 = Math.max(x1, l.x + d.ox + l.b.width);
    y1 = Math.max(y1, l.y + d.oy + l.b.height);
  }
  if (x0 === Infinity) return null;
  return { x: x0 - 1, y: y0 - 1, w: x1 - x0 + 2, h: y1 - y0 + 2 };
}
