/**
 * The worker side's reader of project avatars: the layers of a project's avatar read from KV (its style, or
 * its sanitised drawing re-accepted from its parts), for the media plane to rasterise when a session first
 * runs it. A deleted avatar's tombstone still reads, so sessions that run it (and their reconnects) keep it;
 * new sessions naming it are refused by the API before they reach a worker.
 *
 * @module
 */
import { acceptSvg } from "../../avatar_svg/accept.ts";
import { getAvatar, readAvatarSvg } from "../../kv/avatars.ts";
import { kvOp } from "../../kv/guard.ts";
import { layersOfDrawing } from "./drawing_art.ts";
import { type AvatarLayers, layersOfLook } from "./layers.ts";
import { lookOfStyle } from "./style_art.ts";

/** Reads a project avatar's layers (null: none). */
export type ProjectAvatarLoader = (projectId: string, avatarId: string) => Promise<AvatarLayers | null>;

/** The loader over a KV. */
export function projectAvatarLoader(kv: Deno.Kv): ProjectAvatarLoader {
  return async (projectId, avatarId) => {
    const rec = await kvOp(() => getAvatar(kv, projectId, avatarId));
    if (!rec) return null;
    if (rec.source === "style") return rec.style ? layersOfLook(lookOfStyle(rec.style)) : null;
    const svg = await kvOp(() => readAvatarSvg(kv, projectId, rec));
    return svg === null ? null : layersOfDrawing(acceptSvg(svg));
  };
}
