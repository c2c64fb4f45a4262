/**
 * A project avatar's style (the API's parameters, `vocabulary/avatar_style.ts`) turned into the look the art
 * draws (`features.ts`): the one place where parameter names meet drawing names, and where the colours a
 * style may omit are derived (shade of the skin, brows, clothing's folds). Pure code.
 *
 * @module
 */
import type { AvatarStyleParams } from "../../vocabulary/avatar_style.ts";
import type { AvatarLook } from "./features.ts";

/** `#rrggbb` with each channel multiplied by `factor` (0–1), lower case. */
export function darken(hex: string, factor: number): string {
  const n = parseInt(hex.slice(1), 16);
  const ch = (shift: number) =>
    Math.max(0, Math.min(255, Math.round(((n >> shift) & 255) * factor))).toString(16).padStart(2, "0");
  return `#${ch(16)}${ch(8)}${ch(0)}`;
}

/**
 * The look of a style (defaults already filled in by the schema).
 *
 * @example Usage
 * ```ts
 * import { lookOfStyle } from "./style_art.ts";
 * import { parseAvatarStyle } from "../../vocabulary/avatar_style.ts";
 * lookOfStyle(parseAvatarStyle({ skin_color: "#c08060" })).skinShade; // "#a36d52"
 * ```
 */
export function lookOfStyle(p: AvatarStyleParams): AvatarLook {
  const lower = (c: string) => c.toLowerCase();
  return {
    faceShape: p.face_shape,
    skin: lower(p.skin_color),
    skinShade: lower(p.skin_shade_color ?? darken(p.skin_color, 0.85)),
    lips: lower(p.lip_color),
    hair: lower(p.hair_color),
    hairStyle: p.hair_style,
    eyeShape: p.eye_shape,
    iris: lower(p.eye_color),
    browStyle: p.brow_style,
    brows: lower(p.brow_color ?? p.hair_color),
    glasses: p.glasses,
    facialHair: p.facial_hair,
    freckles: p.freckles,
    clothingStyle: p.clothing_style,
    shirt: lower(p.clothing_color),
    shirtShade: lower(p.clothing_accent_color ?? darken(p.clothing_color, 0.7)),
    accessory: p.accessory,
    accessoryColor: lower(p.accessory_color),
  };
}
