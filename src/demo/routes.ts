/**
 * The demo page (non-canonical, served by `deno task start`): it plays the part of a customer's app.
 * Its small backend, here, holds a demo project's API key in memory and creates sessions through the public
 * API, on the reference engine or, when the page's user picks one and pastes its short-lived credential, on a
 * vendor engine; the browser only ever receives a session's client token and media URL, and plays the
 * stream with the SDK's player (`/sdk/player.js`).
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

/**
 * The vendor engines the page offers, with the fields it takes for each: browser-safe, short-lived
 * credentials only (a vendor API key never goes through a browser).
 */
const VENDOR_FIELDS: Record<string, string[]> = {
  vendor1_realtime: ["client_secret"],
  vendor2: ["access_token", "agent_id"],
  vendor3: ["agent_id", "signed_url"],
};

/** The `provider_type` and `provider_config` of the page's choice (the reference engine by default). */
function providerOf(
  choice: { provider_type?: unknown; provider_fields?: unknown },
  engine: DemoDeps["engine"],
): { provider_type: string; provider_config: Record<string, unknown> } {
  const type = typeof choice.provider_type === "string" ? choice.provider_type : "";
  const given = choice.provider_fields;
  if (Object.hasOwn(VENDOR_FIELDS, type) && given !== null && typeof given === "object") {
    const config: Record<string, string> = {};
    for (const field of VENDOR_FIELDS[type]) {
      const v = (given as Record<string, unknown>)[field];
      if (typeof v === "string" && v) config[field] = v;
    }
    return { provider_type: type, provider_config: { [type]: config } };
  }
  return {
    provider_type: "external_engine",
    provider_config: {
      external_engine: { url: engine.url, auth_headers: { Authorization: `Bearer ${engine.token}` } },
    },
  };
}

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
    let choice: { avatar_id?: unknown; bg_id?: unknown; provider_type?: unknown; provider_fields?: unknown } =
      {};
    try {
      choice = await c.req.json();
    } catch { /* no body: catalog defaults */ }
    const avatar_config: Record<string, string> = {};
    if (typeof choice.avatar_id === "string" && choice.avatar_id) avatar_config.avatar_id = choice.avatar_id;
    if (typeof choice.bg_id === "string" && choice.bg_id) avatar_config.bg_id = choice.bg_id;
    const r = await api("POST", "/v1/sessions", { ...providerOf(choice, demo.engine), avatar_config });
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
