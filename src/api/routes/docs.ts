/**
 * Non-canonical system routes: the OpenAPI document, the interactive API reference (Swagger UI served
 * from the `swagger-ui-dist` npm package, so it works offline), the error reference, and a health check.
 *
 * @module
 */
import type { OpenAPIHono } from "@hono/zod-openapi";
import { createRequire } from "node:module";
import { errorReferenceHtml } from "../error_reference.ts";
import type { AppEnv } from "../app_env.ts";

/** The served files of swagger-ui-dist and their types (a Map: only these names, never inherited keys). */
const SWAGGER_ASSETS = new Map<string, string>([
  ["swagger-ui.css", "text/css; charset=utf-8"],
  ["swagger-ui-bundle.js", "text/javascript; charset=utf-8"],
]);

function swaggerDir(): string {
  const require = createRequire(import.meta.url);
  return (require("swagger-ui-dist") as { getAbsoluteFSPath(): string }).getAbsoluteFSPath();
}

const REFERENCE_PAGE = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Avatar session service: API reference</title>
<link rel="stylesheet" href="/docs/assets/swagger-ui.css">
</head>
<body>
<div id="reference"></div>
<script src="/docs/assets/swagger-ui-bundle.js"></script>
<script src="/docs/assets/init.js"></script>
</body>
</html>
`;

const INIT_JS =
  // validatorUrl: null — no badge fetched from the public validator: the page works offline.
  `window.ui = SwaggerUIBundle({ url: "/openapi.json", dom_id: "#reference", deepLinking: true, validatorUrl: null });\n`;

/** Registers /openapi.json, /docs, /docs/errors, and /docs/assets/* (`/healthz` is registered with the middleware, in app.ts). */
export function registerDocsRoutes(app: OpenAPIHono<AppEnv>, document: () => unknown): void {
  app.get("/openapi.json", (c) => c.json(document()));
  app.get("/docs", (c) => c.html(REFERENCE_PAGE));
  app.get("/docs/errors", (c) => c.html(errorReferenceHtml()));
  // One parametric route (a static route beside it would keep Hono's RegExpRouter from serving the app).
  app.get("/docs/assets/:file", async (c) => {
    const file = c.req.param("file");
    if (file === "init.js") {
      return c.body(INIT_JS, 200, { "content-type": "text/javascript; charset=utf-8" });
    }
    const type = SWAGGER_ASSETS.get(file);
    if (!type) return c.notFound();
    const bytes = await Deno.readFile(`${swaggerDir()}/${file}`);
    return c.body(bytes, 200, { "content-type": type, "cache-control": "public, max-age=86400" });
  });
}
