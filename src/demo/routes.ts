/**
 * The demo page (non-canonical, served by `deno task start`): it plays the part of a customer's app.
 * Its small backend, here, holds a demo project's API key in memory and creates sessions on the
 * reference engine through the public API; the browser only ever receives a session's client token and
 * media URL, and plays the stream with the SDK's player (`/sdk/player.js`).
 *
 * The backend's JSON routes only answer same-origin requests that carry `X-Demo: 1` (a header a
 * cross-site page cannot send without a CORS preflight, which is never granted).
 *
 * @module
 */
import type { Hono } from "hono";
import type { AppEnv } from "../api/env.ts";
import { DEMO_APP_JS, DEMO_FAVICON_SVG, DEMO_PAGE_HTML } from "./page.ts";

/** What the demo backend needs. */
export interface DemoDeps {
  /** The demo project's API key (plaintext, in memory only). */
  apiKey: string;
  /** The reference engine sessions are created on. */
  engine: { url: string; token: string };
  /** Calls the service's own API in-process. */
  call(request: Request): Promise<Response>;
}

const PLAYER_URL = new URL("../../sdk/player.js", import.meta.url);

/** Registers `/sdk/player.js` (always) and the demo page with its backend (when `demo` is given). */
export function registerDemoRoutes(app: Hono<AppEnv>, demo: DemoDeps | undefined): void {
  app.get("/sdk/player.js", async (c) =>
    c.body(await Deno.readFile(PLAYER_URL), 200, {
      "content-type": "text/javascript; charset=utf-8",
      "cache-control": "no-cache",
    }));
  if (!demo) return;

  const api = async (method: string, path: string, body?: unknown) => {
    const res = await demo.call(
      new Request(`http://demo.internal${path}`, {
        method,
        headers: {
          authorization: `Bearer ${demo.apiKey}`,
          ...(body === undefined ? {} : { "content-type": "application/json" }),
        },
        body: body === undefined ? undefined : JSON.stringify(body),
      }),
    );
    return { status: res.status, body: await res.json() };
  };

  app.get("/demo", (c) => c.html(DEMO_PAGE_HTML));
  app.get(
    "/demo/app.js",
    (c) => c.body(DEMO_APP_JS, 200, { "content-type": "text/javascript; charset=utf-8" }),
  );
  app.get(
    "/demo/favicon.svg",
    (c) =>
      c.body(DEMO_FAVICON_SVG, 200, { "content-type": "image/svg+xml", "cache-control": "max-age=86400" }),
  );

  app.use("/demo/api/*", async (c, next) => {
    if (c.req.header("x-demo") !== "1") {
      return c.json({ message: "demo API: same-origin requests only" }, 403);
    }
    await next();
  });

  app.get("/demo/api/catalog", async (c) => {
    const r = await api("GET", "/v1/catalog");
    return c.json(r.body, r.status as 200);
  });

  app.post("/demo/api/sessions", async (c) => {
    let choice: { avatar_id?: unknown; bg_id?: unknown } = {};
    try {
      choice = await c.req.json();
    } catch { /* no body: catalog defaults */ }
    const avatar_config: Record<string, string> = {};
    if (typeof choice.avatar_id === "string" && choice.avatar_id) avatar_config.avatar_id = choice.avatar_id;
    if (typeof choice.bg_id === "string" && choice.bg_id) avatar_config.bg_id = choice.bg_id;
    const r = await api("POST", "/v1/sessions", {
      provider_type: "external_engine",
      provider_config: {
        external_engine: {
          url: demo.engine.url,
          auth_headers: { Authorization: `Bearer ${demo.engine.token}` },
        },
      },
      avatar_config,
    });
    if (r.status !== 200) return c.json(r.body, r.status as 400);
    return c.json({
      session_id: r.body.session_id,
      status: r.body.status,
      client_token: r.body.client_token,
      expires_at: r.body.expires_at,
      media_url: r.body.stream_metadata.media_url,
    });
  });

  app.post("/demo/api/sessions/:id/token", async (c) => {
    const r = await api("POST", `/v1/sessions/${encodeURIComponent(c.req.param("id"))}/client-token`);
    if (r.status !== 200) return c.json(r.body, r.status as 400);
    return c.json({
      client_token: r.body.client_token,
      expires_at: r.body.expires_at,
      media_url: r.body.stream_metadata.media_url,
    });
  });

  app.post("/demo/api/sessions/:id/end", async (c) => {
    const r = await api("POST", `/v1/sessions/${encodeURIComponent(c.req.param("id"))}/end`);
    return c.json(r.body, r.status as 200);
  });
}
