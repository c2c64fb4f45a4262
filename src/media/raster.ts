/**
 * Rasterises the project's SVG art once at start-up with resvg (the `@resvg/resvg-wasm` build of the
 * Rust resvg renderer: accurate, dependency-free WebAssembly, no native addon or system library), into
 * premultiplied-alpha RGBA bitmaps cropped to what they draw.
 *
 * @module
 */
import { initWasm, Resvg } from "@resvg/resvg-wasm";
import { createRequire } from "node:module";

/** An RGBA bitmap (premultiplied alpha) placed at (`x`, `y`) of the output frame. */
export interface Sprite {
  x: number;
  y: number;
  width: number;
  height: number;
  rgba: Uint8Array;
}

let wasmReady: Promise<void> | null = null;

/** Loads the resvg WebAssembly module (once per process). */
export function initRasteriser(): Promise<void> {
  wasmReady ??= (async () => {
    const require = createRequire(import.meta.url);
    const path = require.resolve("@resvg/resvg-wasm/index_bg.wasm");
    await initWasm(await Deno.readFile(path));
  })();
  return wasmReady;
}

/** Renders an SVG to a full-size RGBA bitmap of `width`×`height` (premultiplied alpha). */
export async function rasterise(svg: string, width: number, height: number): Promise<Uint8Array> {
  await initRasteriser();
  return rasteriseSync(
    svg.replace(/width="512" height="512"/, `width="${width}" height="${height}"`),
    width,
    height,
  );
}

/**
 * Renders an SVG whose own `width` and `height` are `width`×`height` (premultiplied alpha), at once:
 * only after {@link initRasteriser} has resolved.
 */
export function rasteriseSync(sized: string, width: number, height: number): Uint8Array {
  const r = new Resvg(sized, { fitTo: { mode: "original" }, background: "rgba(0,0,0,0)" });
  try {
    const img = r.render();
    try {
      if (img.width !== width || img.height !== height) {
        throw new Error(`rasterised ${img.width}x${img.height}, expected ${width}x${height}`);
      }
      return new Uint8Array(img.pixels);
    } finally {
      img.free();
    }
  } finally {
    r.free();
  }
}

/** Crops a full-size RGBA bitmap to the bounding box of its visible pixels. */
export function cropToSprite(rgba: Uint8Array, width: number, height: number): Sprite {
  let x0 = width, y0 = height, x1 = -1, y1 = -1;
  for (let y = 0; y < height; y++) {
    const row = y * width * 4;
    for (let x = 0; x < width; x++) {
      if (rgba[row + x * 4 + 3] !== 0) {
        if (x < x0) x0 = x;
        if (x > x1) x1 = x;
        if (y < y0) y0 = y;
        if (y > y1) y1 = y;
      }
    }
  }
  if (x1 < 0) return { x: 0, y: 0, width: 0, height: 0, rgba: new Uint8Array(0) };
  const w = x1 - x0 + 1, h = y1 - y0 + 1;
  const out = new Uint8Array(w * h * 4);
  for (let y = 0; y < h; y++) {
    out.set(rgba.subarray(((y0 + y) * width + x0) * 4, ((y0 + y) * width + x1 + 1) * 4), y * w * 4);
  }
  return { x: x0, y: y0, width: w, height: h, rgba: out };
}
