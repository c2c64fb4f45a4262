/**
 * The style of a project avatar made from parameters (`POST /v1/avatars` with `{"name", "style"}`): the
 * choices the project's parametric art can draw, each with a fixed list of values (or a `#rrggbb` colour)
 * and a documented default, written once as a zod schema so the API checks a style, `openapi.json` shows its
 * enums and patterns (a client can generate valid ones), and the art (`media/art/style_art.ts`) turns it
 * into a drawing. Unknown parameters are refused (a strict object), so a typo never silently becomes a
 * default. docs/avatars.md shows a picture of each choice.
 *
 * @module
 */
import { z } from "@hono/zod-openapi";

/** Hair styles (at least six, drawn as different silhouettes, not recolours). */
export const HAIR_STYLES = ["bob", "short", "curly", "long", "bun", "buzz", "afro", "bald"] as const;
/** Face shapes (the head's outline and jaw). */
export const FACE_SHAPES = ["oval", "round", "square", "heart"] as const;
/** Clothing styles (the torso's cut). */
export const CLOTHING_STYLES = ["tshirt", "hoodie", "blazer"] as const;
/** Eye shapes (the eye's opening). */
export const EYE_SHAPES = ["almond", "round", "narrow"] as const;
/** Brow styles. */
export const BROW_STYLES = ["soft", "straight", "arched", "thick"] as const;
/** Glasses (none, or a frame). */
export const GLASSES = ["none", "round", "square"] as const;
/** Facial hair. */
export const FACIAL_HAIR = ["none", "stubble", "mustache", "goatee", "beard"] as const;
/** Accessories. */
export const ACCESSORIES = ["none", "earrings", "hat", "headset"] as const;

/** `#rrggbb`, lower or upper case. */
export const COLOR_PATTERN = /^#[0-9a-fA-F]{6}$/;

const color = (description: string, example: string) =>
  z.string().regex(COLOR_PATTERN).openapi({ description: `${description} (#rrggbb).`, example });

/** The defaults of every style parameter (what an omitted parameter becomes). */
export const STYLE_DEFAULTS = {
  face_shape: "oval",
  skin_color: "#e8b894",
  hair_style: "short",
  hair_color: "#3b2418",
  eye_shape: "almond",
  eye_color: "#4d6a3a",
  brow_style: "soft",
  lip_color: "#b8606a",
  glasses: "none",
  facial_hair: "none",
  freckles: false,
  clothing_style: "tshirt",
  clothing_color: "#3f7ab0",
  accessory: "none",
  accessory_color: "#d8b040",
} as const;

/**
 * The style schema (an OpenAPI component, `AvatarStyle`). Optional colours that are derived when omitted
 * (`skin_shade_color`, `brow_color`, `clothing_accent_color`) have no default value in the schema; their
 * rule is in their description.
 */
export const AvatarStyle = z.strictObject({
  face_shape: z.enum(FACE_SHAPES).default(STYLE_DEFAULTS.face_shape).openapi({
    description: "The head's outline: oval, round, square (a strong jaw) or heart (wide brow, narrow chin).",
  }),
  skin_color: color("Skin", "#e8b894").default(STYLE_DEFAULTS.skin_color),
  skin_shade_color: color(
    "Skin in shadow (ears, neck, nose line); omitted: skin_color darkened by 15%",
    "#c99a78",
  ).optional(),
  hair_style: z.enum(HAIR_STYLES).default(STYLE_DEFAULTS.hair_style),
  hair_color: color("Hair", "#3b2418").default(STYLE_DEFAULTS.hair_color),
  eye_shape: z.enum(EYE_SHAPES).default(STYLE_DEFAULTS.eye_shape),
  eye_color: color("Iris", "#4d6a3a").default(STYLE_DEFAULTS.eye_color),
  brow_style: z.enum(BROW_STYLES).default(STYLE_DEFAULTS.brow_style),
  brow_color: color("Brows; omitted: hair_color", "#3b2418").optional(),
  lip_color: color("Lips (the 15 viseme mouths are drawn in it)", "#b8606a").default(
    STYLE_DEFAULTS.lip_color,
  ),
  glasses: z.enum(GLASSES).default(STYLE_DEFAULTS.glasses),
  facial_hair: z.enum(FACIAL_HAIR).default(STYLE_DEFAULTS.facial_hair).openapi({
    description: "Facial hair, drawn in hair_color (stubble in a lighter tone of it).",
  }),
  freckles: z.boolean().default(STYLE_DEFAULTS.freckles),
  clothing_style: z.enum(CLOTHING_STYLES).default(STYLE_DEFAULTS.clothing_style),
  clothing_color: color("Clothing", "#3f7ab0").default(STYLE_DEFAULTS.clothing_color),
  clothing_accent_color: color(
    "Clothing's folds and trim; omitted: clothing_color darkened by 30%",
    "#2c5580",
  )
    .optional(),
  accessory: z.enum(ACCESSORIES).default(STYLE_DEFAULTS.accessory).openapi({
    description: "One accessory: earrings, a hat (a beanie) or a headset with a microphone.",
  }),
  accessory_color: color("The accessory", "#d8b040").default(STYLE_DEFAULTS.accessory_color),
}).openapi("AvatarStyle", {
  description:
    "A project avatar's style: every parameter optional (defaults in docs/avatars.md), unknown ones refused.",
});

/** A style as sent (every parameter optional). */
export type AvatarStyleInput = z.input<typeof AvatarStyle>;
/** A style with its defaults filled in. */
export type AvatarStyleParams = z.output<typeof AvatarStyle>;

/**
 * Parses a style (defaults filled in); throws the zod error on an unknown parameter or a bad value.
 *
 * @example Usage
 * ```ts
 * import { parseAvatarStyle } from "./avatar_style.ts";
 * parseAvatarStyle({ hair_style: "afro" }).face_shape; // "oval"
 * ```
 */
export function parseAvatarStyle(input: unknown): AvatarStyleParams {
  return AvatarStyle.parse(input);
}
