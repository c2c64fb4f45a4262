/**
 * Rasterising a project avatar where the API answers (its preview PNG, and the cost check of an uploaded
 * drawing): the API side loads this module with a dynamic `import()` on the first preview or upload only
 * (`avatars/service.ts`), so an API process's static module graph stays free of media code and resvg
 * (tests/architecture), and a process that never previews never loads them.
 *
 * The cost check: an uploaded drawing's whole face (every layer at 512×512) is rasterised alternately with a
 * stock avatar's, and the median ratio is its cost factor; its mouth box's area against the stock mouth's
 * is the per-frame factor (what a frame composites and converts). Either over
 * `MAX_FRAME_COST_FACTOR` refuses the drawing.
 *
 * @module
 */
import { Resvg } from "@resvg/resvg-wasm";
import { acceptSvg } from "../../avatar_svg/accept.ts";
import { MAX_FRAME_COST_FACTOR } from "../../avatar_svg/limits.ts";
import { SvgRefusal } from "../../avatar_svg/refusal.ts";
import type { AvatarStyleParams } from "../../vocabulary/avatar_style.ts";
import type { Viseme } from "../lipsync/visemes.ts";
import { CATALOG } from "../catalog.ts";
import { initRasteriser, rasteriseSync } from "../raster.ts";
import type { EyeState, Look } from "./avatars.ts";
import { layersOfDrawing } from "./drawing_art.ts";
import { type AvatarLayers, layersOfLook, svgDocument } from "./layers.ts";
import { MOUTH_BOX, VISEME_POSES } from "./mouth.ts";
import { lookOfStyle } from "./style_art.ts";

/** What a project avatar is drawn from. */
export type AvatarSource = { style: AvatarStyleParams } | { svg: string };

/** The layers of a project avatar. */
export function layersOfSource(source: AvatarSource): AvatarLayers {
  return "style" in source ? layersOfLook(lookOfStyle(source.style)) : layersOfDrawing(acceptSvg(source.svg));
}

const inner = (doc: string) => doc.replace(/^<svg[^>]*>/, "").replace(/<\/svg>$/, "");

/** The whole face in one 512×512 SVG: body, head, eyes and brows, mouth. */
export function composedFace(
  layers: AvatarLayers,
  viseme: Viseme,
  eyes: EyeState = "open",
  look: Look = "neutral",
) {
  return svgDocument(
    inner(layers.body) + inner(layers.head) + inner(layers.eyes(eyes, look)) +
      layers.mouthElements(VISEME_POSES[viseme], "pm"),
  );
}

/** A 512×512 PNG of the avatar at rest (transparent background), saying `viseme`. */
export async function previewPng(source: AvatarSource, viseme: Viseme = "sil"): Promise<Uint8Array> {
  await initRasteriser();
  const r = new Resvg(composedFace(layersOfSource(source), viseme), {
    fitTo: { mode: "original" },
    background: "rgba(0,0,0,0)",
  });
  try {
    const img = r.render();
    try {
      return img.asPng();
    } finally {
      img.free();
    }
  } finally {
    r.free();
  }
}

/** The cost of a drawing against a stock avatar's: whole-face rasterising and the mouth's area. */
export interface DrawingCost {
  rasterFactor: number;
  mouthAreaFactor: number;
}

/** Measures an accepted drawing's cost (5 alternating rounds, medians). */
export async function measureDrawingCost(svg: string): Promise<DrawingCost> {
  await initRasteriser();
  const drawing = layersOfDrawing(acceptSvg(svg));
  const stock = layersOfLook(CATALOG.avatars[0].style);
  const docs = [composedFace(drawing, "aa"), composedFace(stock, "aa")];
  const times: number[][] = [[], []];
  for (let round = 0; round < 5; round++) {
    for (const i of [0, 1]) {
      const t0 = performance.now();
      rasteriseSync(docs[i], 512, 512);
      times[i].push(performance.now() - t0);
    }
  }
  const median = (a: number[]) => a.sort((x, y) => x - y)[Math.floor(a.length / 2)];
  const box = drawing.mouthBox;
  return {
    rasterFactor: median(times[0]) / Math.max(0.5, median(times[1])),
    mouthAreaFactor: (box.width * box.height) / (MOUTH_BOX.width * MOUTH_BOX.height),
  };
}

/** Refuses (`SvgRefusal`) a drawing that costs more than `MAX_FRAME_COST_FACTOR` times a stock avatar. */
export async function checkDrawingCost(svg: string): Promise<DrawingCost> {
  const cost = await measureDrawingCost(svg);
  if (cost.rasterFactor > MAX_FRAME_COST_FACTOR) {
    throw new SvgRefusal(
      `the drawing takes ${
        cost.rasterFactor.toFixed(1)
      }× a stock avatar's time to rasterise (at most ${MAX_FRAME_COST_FACTOR}×)`,
    );
  }
  if (cost.mouthAreaFactor > MAX_FRAME_COST_FACTOR) {
    throw new SvgRefusal(
      `the rig's #mouth covers ${
        cost.mouthAreaFactor.toFixed(1)
      }× the stock mouth's area on the frame (at most ${MAX_FRAME_COST_FACTOR}×)`,
    );
  }
  return cost;
}
