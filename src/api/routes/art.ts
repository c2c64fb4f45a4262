/**
 * `GET /media/v0/art/{avatar_id}` (outside `/v1`; docs/media-plane.md#the-art): the SVG layers a video-free
 * client draws the avatar from, the same the renderer rasterises. A stock avatar's art is public like the
 * SDK's files. A project avatar's (`av_…`) is served only to a client of a session running it: the request
 * carries that session's client or media token (`?token=` or `Authorization: Bearer`), and the session must
 * run here, in the token's project, with that avatar; anything else answers 404. The document is built by the
 * worker side (`media/art/document.ts`, through the lookups `src/app/worker_side.ts` hands the app), so this
 * module loads nothing of the media plane; served only where a media plane runs.
 *
 * Every answer carries `Content-Security-Policy: default-src 'none'; style-src 'unsafe-inline'` and
 * `X-Content-Type-Options: nosniff`: a customer's drawing (sanitised, docs/avatars.md) can never run or fetch
 * anything even if a browser were led to open the document itself.
 *
 * @module
 */
import type { OpenAPIHono } from "@hono/zod-openapi";
import type { TokenService } from "../../auth/tokens.ts";
import { ApiError } from "../../errors.ts";
import { AVATAR_ID_PATTERN } from "../../ids.ts";
import type { AppEnv } from "../app_env.ts";

/** The art document of an avatar of the catalog, or null when there is none. */
export type ArtLookup = (avatarId: string) => object | null;
/** The art document of a project avatar for a session running it here, or null. */
export type ProjectArtLookup = (projectId: string, sessionId: string, avatarId: string) => object | null;

/** The headers of every art answer. */
export const ART_HEADERS = {
  "content-security-policy": "default-src 'none'; style-src 'unsafe-inline'",
  "x-content-type-options": "nosniff",
  "access-control-allow-origin": "*",
} as const;

/** Registers the art route. */
export function registerArtRoute(
  app: OpenAPIHono<AppEnv>,
  deps: { art: ArtLookup; projectArt?: ProjectArtLookup; tokens: TokenService },
): void {
  app.get("/media/v0/art/:avatar_id", async (c) => {
    const avatarId = c.req.param("avatar_id");
    if (AVATAR_ID_PATTERN.test(avatarId)) {
      const auth = c.req.header("authorization");
      const token = c.req.query("token") ?? (auth?.startsWith("Bearer ") ? auth.slice(7) : undefined);
      const verdict = token && deps.projectArt
        ? await deps.tokens.verify(token, { purposes: ["client", "media"] })
        : null;
      const doc = verdict?.ok ? deps.projectArt!(verdict.claims.pid, verdict.claims.sub, avatarId) : null;
      if (!doc) {
        throw new ApiError(
          "SVC_ROUTE_NOT_FOUND",
          "No such avatar for this token (a project avatar's art is served to the sessions running it).",
        );
      }
      // Per session: never kept by shared caches.
      return c.json(doc, 200, { ...ART_HEADERS, "cache-control": "private, no-store" });
    }
    const doc = deps.art(avatarId);
    if (!doc) {
      throw new ApiError("SVC_ROUTE_NOT_FOUND", "The catalog has no such avatar (see GET /v1/catalog).");
    }
    // Any page may draw it (the player's page need not be the service's origin).
    return c.json(doc, 200, { ...ART_HEADERS, "cache-control": "public, max-age=3600" });
  });
}
