/**
 * `GET /media/v0/art/{avatar_id}` (outside `/v1`, public like the SDK's files; docs/media-plane.md#the-art):
 * the SVG layers a video-free client draws the avatar from, the same the renderer rasterises. The document
 * is built by the worker side (`media/art/document.ts`, through the lookup `src/app/worker_side.ts` hands the
 * app), so this module loads nothing of the media plane; served only where a media plane runs.
 *
 * @module
 */
import type { OpenAPIHono } from "@hono/zod-openapi";
import { ApiError } from "../../errors.ts";
import type { AppEnv } from "../app_env.ts";

/** The art document of an avatar of the catalog, or null when there is none. */
export type ArtLookup = (avatarId: string) => object | null;

/** Registers the art route. */
export function registerArtRoute(app: OpenAPIHono<AppEnv>, deps: { art: ArtLookup }): void {
  app.get("/media/v0/art/:avatar_id", (c) => {
    const doc = deps.art(c.req.param("avatar_id"));
    if (!doc) {
      throw new ApiError("SVC_ROUTE_NOT_FOUND", "The catalog has no such avatar (see GET /v1/catalog).");
    }
    // Any page may draw it (the player's page need not be the service's origin).
    return c.json(doc, 200, { "cache-control": "public, max-age=3600", "access-control-allow-origin": "*" });
  });
}
