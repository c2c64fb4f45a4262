/**
 * The catalog's art rasterised for one output size, shared by every session: body, head, and eyes (3
 * blink states × 3 looks) once at start-up (a project avatar's when a session first needs it); mouths on demand, one per quantised pose (`art/mouth.ts`),
 * rasterised over the mouth's small box only and kept in a bounded cache per avatar.
 *
 * @module
 */
import { EYE_STATES, type EyeState, type Look, LOOKS } from "./art/avatars.ts";
import { type AvatarLayers, layersOfLook, type ViewBoxRect } from "./art/layers.ts";
import { type MouthPose, poseKey, quantisePose } from "./art/mouth.ts";
import type { Catalog } from "./catalog.ts";
import { cropToSprite, rasterise, rasteriseSync, type Sprite } from "./raster.ts";
import { blendSprite } from "./yuv.ts";

/** Mouth sprites kept per avatar (the most recently used). */
const MOUTH_CACHE = 768;

/** One avatar's layers. */
export interface AvatarArt {
  body: Sprite;
  head: Sprite;
  eyes: Record<EyeState, Record<Look, Sprite>>;
  /** The mouth in a pose (rasterised on first use, then cached). */
  mouth(pose: MouthPose): Sprite;
  /** The mouth's box on the output (x, y, width, height, all even). */
  mouthBox: { x: number; y: number; width: number; height: number };
}

/** Every avatar and background of a catalog at one output size. */
export interface ArtBank {
  width: number;
  height: number;
  /** The catalog's avatars, and the project avatars of running sessions (added and removed as they run). */
  avatars: Map<string, AvatarArt>;
  /** Opaque RGBA backgrounds. */
  backgrounds: ReadonlyMap<string, Uint8Array>;
}

/** The output box of the mouth region, on even pixels, with a margin for the head's motion. */
function mouthBoxAt(MOUTH_BOX: ViewBoxRect, width: number, height: number) {
  const sx = width / 512, sy = height / 512;
  const even = (v: number, up: boolean) => (up ? Math.ceil(v / 2) : Math.floor(v / 2)) * 2;
  const x = Math.max(0, even(MOUTH_BOX.x * sx, false));
  const y = Math.max(0, even(MOUTH_BOX.y * sy, false));
  const x1 = Math.min(width, even((MOUTH_BOX.x + MOUTH_BOX.width) * sx, true));
  const y1 = Math.min(height, even((MOUTH_BOX.y + MOUTH_BOX.height) * sy, true));
  return { x, y, width: x1 - x, height: y1 - y };
}

function mouthRenderer(layers: AvatarLayers, width: number, height: number) {
  const box = mouthBoxAt(layers.mouthBox, width, height);
  const sx = width / 512, sy = height / 512;
  const cache = new Map<string, Sprite>();
  return {
    box,
    mouth(pose: MouthPose): Sprite {
      const q = quantisePose(pose);
      const key = poseKey(q);
      const hit = cache.get(key);
      if (hit) {
        cache.delete(key);
        cache.set(key, hit);
        return hit;
      }
      // The box's view-box coordinates, so the SVG renders just that region at output scale.
      const vb = `${box.x / sx} ${box.y / sy} ${box.width / sx} ${box.height / sy}`;
      const svg =
        `<svg xmlns="http://www.w3.org/2000/svg" width="${box.width}" height="${box.height}" viewBox="${vb}">${
          layers.mouthElements(q)
        }</svg>`;
      const rgba = rasteriseSync(svg, box.width, box.height);
      const sprite: Sprite = { x: box.x, y: box.y, width: box.width, height: box.height, rgba };
      cache.set(key, sprite);
      if (cache.size > MOUTH_CACHE) cache.delete(cache.keys().next().value!);
      return sprite;
    },
  };
}

/** Rasterises one avatar's layers at `width`×`height` (≈ 11 SVG renders; mouths later, on demand). */
export async function loadAvatarArt(layers: AvatarLayers, width: number, height: number): Promise<AvatarArt> {
  const sprite = async (svg: string) => cropToSprite(await rasterise(svg, width, height), width, height);
  const eyes = {} as Record<EyeState, Record<Look, Sprite>>;
  for (const s of EYE_STATES) {
    eyes[s] = {} as Record<Look, Sprite>;
    for (const l of LOOKS) eyes[s][l] = await sprite(layers.eyes(s, l));
  }
  const mouths = mouthRenderer(layers, width, height);
  return {
    body: await sprite(layers.body),
    head: await sprite(layers.head),
    eyes,
    mouth: mouths.mouth,
    mouthBox: mouths.box,
  };
}

/** Rasterises the catalog's art at `width`×`height` (≈ 35 SVG renders; mouths come later, on demand). */
export async function loadArtBank(catalog: Catalog, width: number, height: number): Promise<ArtBank> {
  const avatars = new Map<string, AvatarArt>();
  for (const a of catalog.avatars) {
    avatars.set(a.id, await loadAvatarArt(layersOfLook(a.style), width, height));
  }
  const backgrounds = new Map<string, Uint8Array>();
  for (const b of catalog.backgrounds) {
    const rgba = await rasterise(b.svg(), width, height);
    // Make it opaque (flatten over black) so frames never carry alpha.
    const opaque = new Uint8Array(width * height * 4);
    opaque.fill(0);
    for (let i = 3; i < opaque.length; i += 4) opaque[i] = 255;
    blendSprite(opaque, width, height, { x: 0, y: 0, width, height, rgba });
    backgrounds.set(b.id, opaque);
  }
  return { width, height, avatars, backgrounds };
}
