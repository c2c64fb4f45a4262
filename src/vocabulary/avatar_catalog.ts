/**
 * The avatar catalog as the API knows it: the avatars and backgrounds a session may pick with
 * `avatar_config`, their defaults, and the check that runs before a session is created. Their art (the
 * styles and drawings the renderer rasterises) is joined to these entries by id in `src/media/catalog.ts`,
 * which only a process that renders loads.
 *
 * @module
 */
import { ApiError } from "../errors.ts";
import { AVATAR_ID_PATTERN } from "../ids.ts";

/** One avatar or background of the catalog, as `GET /v1/catalog` lists it. */
export interface CatalogEntry {
  id: string;
  name: string;
  description: string;
}

/** The catalog's entries and defaults. */
export interface AvatarCatalog {
  avatars: readonly CatalogEntry[];
  backgrounds: readonly CatalogEntry[];
  defaultAvatarId: string;
  defaultBgId: string;
}

/** The built-in catalog (all art drawn by the project as SVG: see `src/media/art/`). */
export const AVATAR_CATALOG: AvatarCatalog = {
  avatars: [
    { id: "ada", name: "Ada", description: "Dark bob haircut, green top." },
    { id: "ben", name: "Ben", description: "Short black hair, glasses, blue shirt." },
    { id: "kai", name: "Kai", description: "Curly auburn hair, freckles, purple hoodie." },
  ],
  backgrounds: [
    { id: "studio", name: "Studio", description: "Soft studio backdrop with a spotlight." },
    { id: "sunset", name: "Sunset", description: "A sunset over hills." },
    { id: "office", name: "Office", description: "An office wall with a window, a shelf and a plant." },
    {
      id: "transparent",
      name: "Transparent",
      description:
        "No background: a video-free client (the SDK player with `video: false`) draws the avatar over the page. Video has no alpha: there it is drawn over a plain chroma-key green, #00B140.",
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
 * `400 SVC_RENDER_MISCONFIGURED`. With `projectAvatars`, an `av_…` id passes (a project avatar: the session
 * service checks it in storage).
 *
 * @example Usage
 * ```ts
 * import { AVATAR_CATALOG, resolveAvatarConfig } from "./avatar_catalog.ts";
 * resolveAvatarConfig(AVATAR_CATALOG, { bg_id: "office" }); // { avatarId: "ada", bgId: "office" }
 * ```
 */
export function resolveAvatarConfig(
  catalog: AvatarCatalog,
  config: { avatar_id?: string; bg_id?: string } | undefined,
  options: { projectAvatars?: boolean } = {},
): AvatarSelection {
  const avatarId = config?.avatar_id ?? catalog.defaultAvatarId;
  const bgId = config?.bg_id ?? catalog.defaultBgId;
  // A project avatar's id (`av_…`) is the caller's to check in storage (`projectAvatars`).
  const projectAvatar = options.projectAvatars === true && AVATAR_ID_PATTERN.test(avatarId);
  if (!projectAvatar && !catalog.avatars.some((a) => a.id === avatarId)) {
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
