/**
 * The avatar catalog with its art: the entries the API lists (`src/vocabulary/avatar_catalog.ts`), each
 * joined by id to the style or drawing the renderer rasterises.
 *
 * @module
 */
import { AVATAR_CATALOG, type CatalogEntry } from "../vocabulary/avatar_catalog.ts";
import type { AvatarStyle } from "./art/avatars.ts";
import { officeSvg, studioSvg, sunsetSvg, transparentFallbackSvg } from "./art/backgrounds.ts";

/** One avatar of the catalog. */
export interface CatalogAvatar extends CatalogEntry {
  style: AvatarStyle;
}

/** One background of the catalog. */
export interface CatalogBackground extends CatalogEntry {
  /** The drawing behind the avatar in video frames. */
  svg: () => string;
  /** A client that draws the avatar draws no background (the page shows through). */
  transparent?: boolean;
}

/** The catalog. */
export interface Catalog {
  avatars: readonly CatalogAvatar[];
  backgrounds: readonly CatalogBackground[];
  defaultAvatarId: string;
  defaultBgId: string;
}

/** The look of each avatar of the catalog, by id. */
const STYLES: Record<string, AvatarStyle> = {
  ada: {
    skin: "#efc3a0",
    skinShade: "#d79b78",
    lips: "#c2646a",
    hair: "#3b2418",
    faceShape: "oval",
    hairStyle: "bob",
    eyeShape: "almond",
    browStyle: "soft",
    facialHair: "none",
    clothingStyle: "tshirt",
    accessory: "none",
    accessoryColor: "#d8b040",
    iris: "#4d7a3a",
    brows: "#3b2418",
    shirt: "#3f9a78",
    shirtShade: "#2a6c54",
    glasses: "none",
    freckles: false,
  },
  ben: {
    skin: "#a86b45",
    skinShade: "#7f4c2f",
    lips: "#7a3b32",
    hair: "#14110f",
    faceShape: "oval",
    hairStyle: "short",
    eyeShape: "almond",
    browStyle: "soft",
    facialHair: "none",
    clothingStyle: "tshirt",
    accessory: "none",
    accessoryColor: "#d8b040",
    iris: "#3a2416",
    brows: "#14110f",
    shirt: "#3e63b0",
    shirtShade: "#2a4580",
    glasses: "square",
    freckles: false,
  },
  kai: {
    skin: "#f6d2b4",
    skinShade: "#e2a886",
    lips: "#d27a7a",
    hair: "#9a4a22",
    faceShape: "oval",
    hairStyle: "curly",
    eyeShape: "almond",
    browStyle: "soft",
    facialHair: "none",
    clothingStyle: "hoodie",
    accessory: "none",
    accessoryColor: "#d8b040",
    iris: "#3c6fa0",
    brows: "#7a3a1a",
    shirt: "#7a52a8",
    shirtShade: "#563878",
    glasses: "none",
    freckles: true,
  },
};

/** The drawing of each background of the catalog, by id. */
const BACKGROUNDS: Record<string, () => string> = {
  studio: studioSvg,
  sunset: sunsetSvg,
  office: officeSvg,
  transparent: transparentFallbackSvg,
};

/** The built-in catalog (all art drawn by the project as SVG). */
export const CATALOG: Catalog = {
  ...AVATAR_CATALOG,
  avatars: AVATAR_CATALOG.avatars.map((a) => ({ ...a, style: STYLES[a.id] })),
  backgrounds: AVATAR_CATALOG.backgrounds.map((b) => ({
    ...b,
    svg: BACKGROUNDS[b.id],
    ...(b.id === "transparent" ? { transparent: true } : {}),
  })),
};
