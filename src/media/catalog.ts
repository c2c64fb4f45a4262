/**
 * The avatar catalog: the avatars and backgrounds a session may pick with `avatar_config`, their
 * defaults, and the check that runs before a session is created.
 *
 * @module
 */
import { ApiError } from "../errors.ts";
import type { AvatarStyle } from "./art/avatars.ts";
import { officeSvg, studioSvg, sunsetSvg } from "./art/backgrounds.ts";

/** One avatar of the catalog. */
export interface CatalogAvatar {
  id: string;
  name: string;
  description: string;
  style: AvatarStyle;
}

/** One background of the catalog. */
export interface CatalogBackground {
  id: string;
  name: string;
  description: string;
  svg: () => string;
}

/** The catalog. */
export interface Catalog {
  avatars: readonly CatalogAvatar[];
  backgrounds: readonly CatalogBackground[];
  defaultAvatarId: string;
  defaultBgId: string;
}

/** The built-in catalog (all art drawn by the project as SVG). */
export const CATALOG: Catalog = {
  avatars: [
    {
      id: "ada",
      name: "Ada",
      description: "Dark bob haircut, green top.",
      style: {
        skin: "#efc3a0",
        skinShade: "#d79b78",
        lips: "#c2646a",
        hair: "#3b2418",
        hairStyle: "bob",
        iris: "#4d7a3a",
        brows: "#3b2418",
        shirt: "#3f9a78",
        shirtShade: "#2a6c54",
        glasses: false,
        freckles: false,
      },
    },
    {
      id: "ben",
      name: "Ben",
      description: "Short black hair, glasses, blue shirt.",
      style: {
        skin: "#a86b45",
        skinShade: "#7f4c2f",
        lips: "#7a3b32",
        hair: "#14110f",
        hairStyle: "short",
        iris: "#3a2416",
        brows: "#14110f",
        shirt: "#3e63b0",
        shirtShade: "#2a4580",
        glasses: true,
        freckles: false,
      },
    },
    {
      id: "kai",
      name: "Kai",
      description: "Curly auburn hair, freckles, purple hoodie.",
      style: {
        skin: "#f6d2b4",
        skinShade: "#e2a886",
        lips: "#d27a7a",
        hair: "#9a4a22",
        hairStyle: "curly",
        iris: "#3c6fa0",
        brows: "#7a3a1a",
        shirt: "#7a52a8",
        shirtShade: "#563878",
        glasses: false,
        freckles: true,
      },
    },
  ],
  backgrounds: [
    { id: "studio", name: "Studio", description: "Soft studio backdrop with a spotlight.", svg: studioSvg },
    { id: "sunset", name: "Sunset", description: "A sunset over hills.", svg: sunsetSvg },
    {
      id: "office",
      name: "Office",
      description: "An office wall with a window, a shelf and a plant.",
      svg: officeSvg,
    },
  ],
  defaultAvatarId: "ada",
  defaultBgId: "studio",
};

/** An avatar and a background of the catalog. */
export interface AvatarSelection {
  avatarId: string;
  bgId: string;
}

/**
 * Resolves `avatar_config` against the catalog: omitted ids take the defaults, unknown ids throw
 * `400 SVC_RENDER_MISCONFIGURED`.
 */
export function resolveAvatarConfig(
  catalog: Catalog,
  config: { avatar_id?: string; bg_id?: string } | undefined,
): AvatarSelection {
  const avatarId = config?.avatar_id ?? catalog.defaultAvatarId;
  const bgId = config?.bg_id ?? catalog.defaultBgId;
  if (!catalog.avatars.some((a) => a.id === avatarId)) {
    throw new ApiError(
      "SVC_RENDER_MISCONFIGURED",
      `avatar_config.avatar_id is not in the catalog (GET /v1/catalog lists ${
        catalog.avatars.map((a) => a.id).join(", ")
      }).`,
    );
  }
  if (!catalog.backgrounds.some((b) => b.id === bgId)) {
    throw new ApiError(
      "SVC_RENDER_MISCONFIGURED",
      `avatar_config.bg_id is not in the catalog (GET /v1/catalog lists ${
        catalog.backgrounds.map((b) => b.id).join(", ")
      }).`,
    );
  }
  return { avatarId, bgId };
}
