/**
 * The layers of any avatar, whatever it is drawn from (a stock avatar's or a style's look, `avatars.ts`; a
 * customer's rigged drawing, `drawing_art.ts`): what the renderer rasterises (`art_bank.ts`) and what the art
 * document serves to video-free clients (`document.ts`), all on the 512×512 view box. One interface, so a
 * project avatar is drawn by the same code as a stock one and costs what it costs.
 *
 * @module
 */
import type { EyeState, Look } from "./avatars.ts";
import { type AvatarStyle, bodySvg, eyesSvg, headSvg } from "./avatars.ts";
import { MOUTH_BOX, mouthElements, type MouthPose } from "./mouth.ts";

/** A box on the 512×512 view box. */
export interface ViewBoxRect {
  x: number;
  y: number;
  width: number;
  height: number;
}

/** One avatar's layers as SVG. */
export interface AvatarLayers {
  /** The still part (torso, and the whole drawing but the moving parts). */
  body: string;
  /** What moves with the head (without eyes, brows and mouth). */
  head: string;
  /** Eyes and brows in a blink state and a look. */
  eyes(state: EyeState, look: Look): string;
  /** The mouth's elements in a pose (no `<svg>` wrapper), drawn inside {@link AvatarLayers.mouthBox}. */
  mouthElements(pose: MouthPose, idPrefix?: string): string;
  /** The region the mouth draws into. */
  mouthBox: ViewBoxRect;
}

/** Wraps elements in a 512×512 `<svg>` document. */
export function svgDocument(elements: string): string {
  return `<svg xmlns="http://www.w3.org/2000/svg" width="512" height="512" viewBox="0 0 512 512">${elements}</svg>`;
}

/** The layers of a stock avatar's or a style avatar's look. */
export function layersOfLook(s: AvatarStyle): AvatarLayers {
  return {
    body: bodySvg(s),
    head: headSvg(s),
    eyes: (state, look) => eyesSvg(s, state, look),
    mouthElements: (pose, idPrefix) =>
      mouthElements({ lips: s.lips, skinShade: s.skinShade }, pose, idPrefix),
    mouthBox: { ...MOUTH_BOX },
  };
}
