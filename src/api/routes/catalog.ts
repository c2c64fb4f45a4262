/**
 * `GET /v1/catalog` (non-canonical): the avatars and backgrounds `avatar_config` may name.
 *
 * @module
 */
import { createRoute, type OpenAPIHono } from "@hono/zod-openapi";
import type { AvatarCatalog } from "../../vocabulary/avatar_catalog.ts";
import type { AppEnv } from "../app_env.ts";
import { requireScope } from "../middleware/auth.ts";
import { API_KEY_SECURITY, COMMON_ERRORS, errorResponses, jsonResponse } from "../openapi_helpers.ts";
import { CatalogList } from "../schemas.ts";

const catalogRoute = createRoute({
  method: "get",
  path: "/v1/catalog",
  operationId: "getCatalog",
  tags: ["Catalog (non-canonical)"],
  summary: "List the avatar catalog (non-canonical)",
  description:
    "Non-canonical: not part of the interface specification; integrations must not depend on it. Lists the avatars and backgrounds that `avatar_config.avatar_id` and `avatar_config.bg_id` may name, and the defaults used when they are omitted. Scope: `sessions:read`.",
  security: API_KEY_SECURITY,
  middleware: [requireScope("sessions:read")] as const,
  responses: {
    200: jsonResponse(CatalogList, "The catalog."),
    ...errorResponses([...COMMON_ERRORS]),
  },
});

/** Registers `GET /v1/catalog`. */
export function registerCatalogRoutes(app: OpenAPIHono<AppEnv>, deps: { catalog: AvatarCatalog }): void {
  const entry = (e: { id: string; name: string; description: string }) => ({
    id: e.id,
    name: e.name,
    description: e.description,
  });
  app.openapi(catalogRoute, (c) =>
    c.json({
      avatars: deps.catalog.avatars.map(entry),
      backgrounds: deps.catalog.backgrounds.map(entry),
      default_avatar_id: deps.catalog.defaultAvatarId,
      default_bg_id: deps.catalog.defaultBgId,
    }, 200));
}
