/**
 * Project avatars (docs/avatars.md): `POST /v1/avatars` (from a style or an uploaded drawing; bodies up to
 * {@link AVATAR_BODY_BYTES}, the only route above the general limit), `GET /v1/avatars` (newest first, with
 * a cursor), `GET` and `DELETE /v1/avatars/{avatar_id}`, and `GET /v1/avatars/{avatar_id}/preview.png`.
 * Scopes `avatars:read` and `avatars:write`; another project's id answers 404 as for sessions.
 *
 * @module
 */
import { createRoute, type OpenAPIHono, z } from "@hono/zod-openapi";
import type { AvatarService } from "../../avatars/service.ts";
import { DEFAULT_AVATAR_PAGE, MAX_AVATAR_PAGE } from "../../avatars/service.ts";
import { AVATAR_ID_PATTERN } from "../../ids.ts";
import { AvatarStyle } from "../../vocabulary/avatar_style.ts";
import { VISEME_NAMES } from "../../vocabulary/viseme_names.ts";
import type { AppEnv } from "../app_env.ts";
import { requireScope } from "../middleware/auth.ts";
import { API_KEY_SECURITY, COMMON_ERRORS, errorResponses, jsonResponse } from "../openapi_helpers.ts";
import { epochMs } from "../../vocabulary/schemas.ts";

/** Largest body of `POST /v1/avatars` (512 KiB): a drawing's limit plus its JSON envelope. */
export const AVATAR_BODY_BYTES = 512 * 1024;

const BODY_ERRORS = [
  "SVC_INVALID_REQUEST",
  "SVC_INVALID_AVATAR",
  "SVC_PAYLOAD_TOO_LARGE",
  "SVC_UNSUPPORTED_MEDIA_TYPE",
  "SVC_REQUEST_TIMEOUT",
] as const;

const Name = z.string().min(1).max(100).openapi({ description: "A name for people (1–100 characters)." });

/** The body of `POST /v1/avatars`: a name and either a style or a drawing. */
export const CreateAvatarBody = z.union([
  z.strictObject({ name: Name, style: AvatarStyle }),
  z.strictObject({
    name: Name,
    svg: z.string().min(1).openapi({
      description:
        "A layered SVG drawing following the rig of docs/avatars.md (at most 384 KiB); sanitised before it is stored.",
    }),
  }),
]).openapi("CreateAvatarBody");

/** A project avatar. */
export const Avatar = z.object({
  avatar_id: z.string().regex(AVATAR_ID_PATTERN),
  name: z.string(),
  source: z.enum(["style", "svg"]),
  created_at: epochMs(),
  preview_url: z.string().openapi({ description: "Path of its 512×512 PNG preview (needs avatars:read)." }),
  style: AvatarStyle.optional().openapi({ description: "The style, defaults filled in (style avatars)." }),
}).openapi("Avatar");

/** One page of avatars. */
export const AvatarList = z.object({
  data: z.array(Avatar),
  next_cursor: z.string().nullable(),
}).openapi("AvatarList");

const AvatarIdParam = z.object({
  avatar_id: z.string().max(128).openapi({ param: { name: "avatar_id", in: "path" }, example: "av_4bX9…" }),
});

const ListQuery = z.strictObject({
  limit: z.string().regex(/^\d{1,3}$/, "must be a whole number").transform(Number)
    .pipe(z.number().int().min(1).max(MAX_AVATAR_PAGE)).optional().openapi({
      param: { name: "limit", in: "query" },
      type: "integer",
      minimum: 1,
      maximum: MAX_AVATAR_PAGE,
      description: `Page size, 1..${MAX_AVATAR_PAGE} (default ${DEFAULT_AVATAR_PAGE}).`,
    }),
  cursor: z.string().min(1).max(512).optional().openapi({
    param: { name: "cursor", in: "query" },
    description: "`next_cursor` of the previous page. Opaque; an altered or foreign cursor answers 400.",
  }),
});

const PreviewQuery = z.strictObject({
  viseme: z.enum(VISEME_NAMES).optional().openapi({
    param: { name: "viseme", in: "query" },
    description: "The mouth to draw (default `sil`, at rest).",
  }),
});

const tags = ["Avatars (non-canonical)"];
const nonCanonical = "Non-canonical: not part of the interface specification. ";

const createRoute_ = createRoute({
  method: "post",
  path: "/v1/avatars",
  operationId: "createAvatar",
  tags,
  summary: "Create a project avatar",
  description: nonCanonical +
    "From a style (its parameters in `AvatarStyle`; unknown ones answer 400) or from an uploaded layered SVG (the rig and the refusals are in docs/avatars.md; a refused drawing answers `400 SVC_INVALID_AVATAR` naming what, and nothing of it is stored). Bodies up to 512 KiB. Counts against the project's quota. Scope: `avatars:write`.",
  security: API_KEY_SECURITY,
  middleware: [requireScope("avatars:write")] as const,
  request: { body: { required: true, content: { "application/json": { schema: CreateAvatarBody } } } },
  responses: {
    201: jsonResponse(Avatar, "The new avatar."),
    ...errorResponses([...COMMON_ERRORS, ...BODY_ERRORS]),
  },
});

const listRoute = createRoute({
  method: "get",
  path: "/v1/avatars",
  operationId: "listAvatars",
  tags,
  summary: "List the project's avatars",
  description: nonCanonical + "Newest first. Scope: `avatars:read`.",
  security: API_KEY_SECURITY,
  middleware: [requireScope("avatars:read")] as const,
  request: { query: ListQuery },
  responses: {
    200: jsonResponse(AvatarList, "One page of avatars."),
    ...errorResponses([...COMMON_ERRORS, "SVC_INVALID_REQUEST"]),
  },
});

const getRoute = createRoute({
  method: "get",
  path: "/v1/avatars/{avatar_id}",
  operationId: "getAvatar",
  tags,
  summary: "Get a project avatar",
  description: nonCanonical + "Another project's id answers 404. Scope: `avatars:read`.",
  security: API_KEY_SECURITY,
  middleware: [requireScope("avatars:read")] as const,
  request: { params: AvatarIdParam },
  responses: {
    200: jsonResponse(Avatar, "The avatar."),
    ...errorResponses([...COMMON_ERRORS, "SVC_AVATAR_NOT_FOUND"]),
  },
});

const deleteRoute = createRoute({
  method: "delete",
  path: "/v1/avatars/{avatar_id}",
  operationId: "deleteAvatar",
  tags,
  summary: "Delete a project avatar",
  description: nonCanonical +
    "Sessions already running it keep it; a new session naming it answers 400. Scope: `avatars:write`.",
  security: API_KEY_SECURITY,
  middleware: [requireScope("avatars:write")] as const,
  request: { params: AvatarIdParam },
  responses: {
    204: { description: "Deleted." },
    ...errorResponses([...COMMON_ERRORS, "SVC_AVATAR_NOT_FOUND"]),
  },
});

const previewRoute = createRoute({
  method: "get",
  path: "/v1/avatars/{avatar_id}/preview.png",
  operationId: "previewAvatar",
  tags,
  summary: "A PNG preview of a project avatar",
  description: nonCanonical +
    "512×512, transparent background, at rest (or saying `viseme`). Scope: `avatars:read`.",
  security: API_KEY_SECURITY,
  middleware: [requireScope("avatars:read")] as const,
  request: { params: AvatarIdParam, query: PreviewQuery },
  responses: {
    200: {
      description: "The PNG.",
      content: { "image/png": { schema: z.string().openapi({ format: "binary" }) } },
    },
    ...errorResponses([...COMMON_ERRORS, "SVC_AVATAR_NOT_FOUND", "SVC_INVALID_REQUEST"]),
  },
});

/** Registers the avatar routes. */
export function registerAvatarRoutes(app: OpenAPIHono<AppEnv>, deps: { avatars: AvatarService }): void {
  const { avatars } = deps;
  app.openapi(createRoute_, async (c) => {
    const body = c.req.valid("json");
    const caller = c.get("caller")!;
    const view = "style" in body
      ? await avatars.createFromStyle(caller.projectId, body.name, body.style)
      : await avatars.createFromSvg(caller.projectId, body.name, body.svg);
    return c.json(view, 201);
  });
  app.openapi(listRoute, async (c) => {
    const q = c.req.valid("query");
    return c.json(await avatars.list(c.get("caller")!.projectId, q), 200);
  });
  app.openapi(getRoute, async (c) => {
    const { avatar_id } = c.req.valid("param");
    return c.json(avatars.view(await avatars.get(c.get("caller")!.projectId, avatar_id)), 200);
  });
  app.openapi(deleteRoute, async (c) => {
    const { avatar_id } = c.req.valid("param");
    await avatars.delete(c.get("caller")!.projectId, avatar_id);
    return c.body(null, 204);
  });
  app.openapi(previewRoute, async (c) => {
    const { avatar_id } = c.req.valid("param");
    const { viseme } = c.req.valid("query");
    const png = await avatars.preview(c.get("caller")!.projectId, avatar_id, viseme ?? "sil");
    return c.body(png as Uint8Array<ArrayBuffer>, 200, { "content-type": "image/png" });
  });
}
