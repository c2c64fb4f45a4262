/**
 * The catalog's art rasterised for one output size, once at start-up, shared by every session.
 *
 * @module
 */
import {
  bodySvg,
  EYE_STATES,
  eyesSvg,
  type EyeState,
  headSvg,
  MOUTH_SHAPES,
  type MouthShape,
  mouthSvg,
} from "./art/avatars.ts";
import type { Catalog } from "./catalog.ts";
import { cropToSprite, rasterise, type Sprite } from "./raster.ts";
import { blendSprite } from "./yuv.ts";

/** One avatar's layers. */
export interface AvatarArt {
  body: Sprite;
  head: Sprite;
  eyes: Record<EyeState, Sprite>;
  mouths: Record<MouthShape, Sprite>;
}

/** Every avatar and background of a catalog at one output size. */
export interface ArtBank {
  width: number;
  height: number;
  avatars: ReadonlyMap<string, AvatarArt>;
  /** Opaque RGBA backgrounds. */
  backgrounds: ReadonlyMap<string, Uint8Array>;
}

/** Rasterises the catalog's art at `width`×`height` (≈ 40 SVG renders). */
export async function loadArtBank(catalog: Catalog, width: number, height: number): Promise<ArtBank> {
  const sprite = async (svg: string) => cropToSprite(await rasterise(svg, width, height), width, height);
  const avatars = new Map<string, AvatarArt>();
  for (const a of catalog.avatars) {
    const eyes = {} as Record<EyeState, Sprite>;
    for (const s of EYE_STATES) eyes[s] = await sprite(eyesSvg(a.style, s));
    const mouths = {} as Record<MouthShape, Sprite>;
    for (const m of MOUTH_SHAPES) mouths[m] = await sprite(mouthSvg(a.style, m));
    avatars.set(a.id, {
      body: await sprite(bodySvg(a.style)),
      head: await sprite(headSvg(a.style)),
      eyes,
      mouths,
    });
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
