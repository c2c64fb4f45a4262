/**
 * Pixel work for the reference renderer: compositing premultiplied RGBA sprites and converting a frame
 * to planar YUV 4:2:0 (`yuv420p`, BT.709 limited range), the format the encoder takes without any
 * conversion of its own.
 *
 * @module
 */
import type { Sprite } from "./raster.ts";

/** Bytes of one yuv420p frame. */
export function i420Size(width: number, height: number): number {
  return width * height + 2 * (width / 2) * (height / 2);
}

/** Draws a premultiplied sprite over an opaque RGBA frame, shifted by (`dx`, `dy`), clipped to the frame. */
export function blendSprite(
  frame: Uint8Array,
  width: number,
  height: number,
  sprite: Sprite,
  dx = 0,
  dy = 0,
): void {
  const sx0 = Math.max(0, -(sprite.x + dx));
  const sy0 = Math.max(0, -(sprite.y + dy));
  const sx1 = Math.min(sprite.width, width - (sprite.x + dx));
  const sy1 = Math.min(sprite.height, height - (sprite.y + dy));
  const src = sprite.rgba;
  for (let sy = sy0; sy < sy1; sy++) {
    let s = (sy * sprite.width + sx0) * 4;
    let d = ((sy + sprite.y + dy) * width + sx0 + sprite.x + dx) * 4;
    for (let sx = sx0; sx < sx1; sx++, s += 4, d += 4) {
      const a = src[s + 3];
      if (a === 0) continue;
      if (a === 255) {
        frame[d] = src[s];
        frame[d + 1] = src[s + 1];
        frame[d + 2] = src[s + 2];
        continue;
      }
      const k = 255 - a;
      frame[d] = src[s] + ((frame[d] * k + 127) / 255 | 0);
      frame[d + 1] = src[s + 1] + ((frame[d + 1] * k + 127) / 255 | 0);
      frame[d + 2] = src[s + 2] + ((frame[d + 2] * k + 127) / 255 | 0);
    }
  }
}

/** Converts an opaque RGBA frame (even dimensions) to yuv420p, BT.709 limited range. */
export function rgbaToI420(rgba: Uint8Array, width: number, height: number): Uint8Array {
  const out = new Uint8Array(i420Size(width, height));
  const cw = width >> 1;
  const uOff = width * height;
  const vOff = uOff + cw * (height >> 1);
  for (let y = 0; y < height; y++) {
    let p = y * width * 4;
    let o = y * width;
    for (let x = 0; x < width; x++, p += 4, o++) {
      out[o] = (16 + (46.742 * rgba[p] + 157.243 * rgba[p + 1] + 15.874 * rgba[p + 2]) / 256 + 0.5) | 0;
    }
  }
  for (let cy = 0; cy < height >> 1; cy++) {
    for (let cx = 0; cx < cw; cx++) {
      const p0 = ((cy * 2) * width + cx * 2) * 4;
      const p1 = p0 + width * 4;
      const r = (rgba[p0] + rgba[p0 + 4] + rgba[p1] + rgba[p1 + 4]) / 4;
      const g = (rgba[p0 + 1] + rgba[p0 + 5] + rgba[p1 + 1] + rgba[p1 + 5]) / 4;
      const b = (rgba[p0 + 2] + rgba[p0 + 6] + rgba[p1 + 2] + rgba[p1 + 6]) / 4;
      const i = cy * cw + cx;
      out[uOff + i] = (128 + (-25.765 * r - 86.674 * g + 112.439 * b) / 256 + 0.5) | 0;
      out[vOff + i] = (128 + (112.439 * r - 102.129 * g - 10.310 * b) / 256 + 0.5) | 0;
    }
  }
  return out;
}

/**
 * Converts an opaque RGBA region (`w`×`h`, both even) to yuv420p and writes it into a full yuv420p frame
 * of `frameWidth`×`frameHeight` at (`x0`, `y0`) (both even; the region must lie inside the frame).
 */
export function rgbaRegionToI420(
  rgba: Uint8Array,
  w: number,
  h: number,
  frame: Uint8Array,
  frameWidth: number,
  frameHeight: number,
  x0: number,
  y0: number,
): void {
  const cw = frameWidth >> 1;
  const uOff = frameWidth * frameHeight;
  const vOff = uOff + cw * (frameHeight >> 1);
  for (let y = 0; y < h; y++) {
    let p = y * w * 4;
    let o = (y0 + y) * frameWidth + x0;
    for (let x = 0; x < w; x++, p += 4, o++) {
      frame[o] = (16 + (46.742 * rgba[p] + 157.243 * rgba[p + 1] + 15.874 * rgba[p + 2]) / 256 + 0.5) | 0;
    }
  }
  for (let cy = 0; cy < h >> 1; cy++) {
    for (let cx = 0; cx < w >> 1; cx++) {
      const p0 = ((cy * 2) * w + cx * 2) * 4;
      const p1 = p0 + w * 4;
      const r = (rgba[p0] + rgba[p0 + 4] + rgba[p1] + rgba[p1 + 4]) / 4;
      const g = (rgba[p0 + 1] + rgba[p0 + 5] + rgba[p1 + 1] + rgba[p1 + 5]) / 4;
      const b = (rgba[p0 + 2] + rgba[p0 + 6] + rgba[p1 + 2] + rgba[p1 + 6]) / 4;
      const i = ((y0 >> 1) + cy) * cw + (x0 >> 1) + cx;
      frame[uOff + i] = (128 + (-25.765 * r - 86.674 * g + 112.439 * b) / 256 + 0.5) | 0;
      frame[vOff + i] = (128 + (112.439 * r - 102.129 * g - 10.310 * b) / 256 + 0.5) | 0;
    }
  }
}
