/**
 * The demo page (non-canonical, served by `deno task start`): it plays the part of a customer's app.
 * Its small backend, here, holds a demo project's API key in memory and creates sessions through the public
 * API, on the reference engine or, when the page's user picks one and pastes its short-lived credential, on a
 * vendor engine; the browser only ever receives a session's client token and media URL, and plays the
 * stream with the SDK's player (`/sdk/player.js`).
 *
 * The backend's JSON routes (`/demo/api/*`) refuse requests that do not come from the demo page in a
 * browser: they require `X-Demo: 1` (a header a cross-site page cannot send without a CORS preflight, which
 * is never granted) and, when the browser sends them, a same-origin `Origin` and `Sec-Fetch-Site`. That keeps
 * other web pages out. It is no access control against clients outside a browser, which can send any
 * header: whoever reaches the service can start demo sessions, bounded by the demo project's rate limit and
 * session ceiling (turn the demo off on a public host). Bodies are bounded like every route's; errors use
 * the flat error body with this request's id.
 *
 * @module
 */
import type { Context, Hono } from "hono";
import type { AppEnv } from "../app_env.ts";
import { loadAvatarRaster } from "../../avatars/service.ts";
import { AvatarStyle } from "../../vocabulary/avatar_style.ts";
import { ApiError, ERROR_CATALOG, type ErrorCode } from "../../errors.ts";
import { DEMO_APP_JS, DEMO_FAVICON_SVG, DEMO_PAGE_HTML } from "../demo_page.ts";
import { demoOffers } from "../../providers/definitions/provider_types.ts";
import { TRANSPORT_KINDS, transportEntry } from "../../vocabulary/transports.ts";

/** What the demo backend needs. */
export interface DemoDeps {
  /** The demo project's API key (plaintext, in memory only). */
  apiKey: string;
  /**
   * The reference engine sessions are created on by default; absent in an API process (`SVC_ROLE=api`),
   * whose page then offers the vendor engines only.
   */
  engine?: { url: string; token: string };
  /** Calls the service's own API in-process. */
  call(request: Request): Promise<Response>;
}

/**
 * The SDK's browser modules served to pages: `player.js` and the modules it imports (a page that serves the
 * player itself must serve them all side by side, sdk/README.md); a transport's own player module comes from
 * the transport registry (`browserModule`).
 */
export const PLAYER_FILES: readonly string[] = [
  "player.js",
  ...TRANSPORT_KINDS.flatMap((k) => transportEntry(k).browserModule ?? []),
  "player_webcodecs.js",
  "player_clock.js",
  "player_display.js",
  "player_av.js",
  "player_demux.js",
  "player_report.js",
  "tool_calls.js",
  "avatar_canvas.js",
  "avatar_damage.js",
  "player_webrtc_animation.js",
  "player_webrtc_delay.js",
  "player_webrtc_sdp.js",
];

/**
 * The vendor engines the page offers, with the fields it takes for each (the provider definitions' `demo`):
 * browser-safe, short-lived credentials only (a vendor API key never goes through a browser).
 */
const VENDOR_FIELDS: Record<string, string[]> = Object.fromEntries(
  demoOffers().map((o) => [o.type, o.fields.map((f) => f.field)]),
);

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
  if (!engine) {
    throw new ApiError(
      "SVC_INVALID_REQUEST",
      "This demo runs without a reference engine: pick a vendor engine and paste its short-lived credential.",
    );
  }
  return {
    provider_type: "external_engine",
    provider_config: {
      external_engine: { url: engine.url, auth_headers: { Authorization: `Bearer ${engine.token}` } },
    },
  };
}

/** The page's reference-engine choice, left out when the backend has no reference engine. */
const REFERENCE_OPTION = /<option value="reference"[^>]*>[^<]*<\/option>\s*/;

/**
 * Registers `/sdk/player.js` and the modules it imports (always) and the demo page with its backend (when
 * `demo` is given).
 */
export function registerDemoRoutes(app: Hono<AppEnv>, demo: DemoDeps | undefined): void {
  for (const file of PLAYER_FILES) {
    const url = new URL(`../../../sdk/${file}`, import.meta.url);
    app.get(`/sdk/${file}`, async (c) =>
      c.body(await Deno.readFile(url), 200, {
        "content-type": "text/javascript; charset=utf-8",
        "cache-control": "no-cache",
      }));
  }
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

  const page = demo.engine ? DEMO_PAGE_HTML : DEMO_PAGE_HTML.replace(REFERENCE_OPTION, "");
  app.get("/demo", (c) => c.html(page));
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
    if (!fromDemoPage(c)) {
      throw new ApiError("SVC_AUTH_FORBIDDEN", "The demo API answers requests of the demo page only.");
    }
    await next();
  });

  app.get("/demo/api/catalog", async (c) => c.json(ok(await api("GET", "/v1/catalog")), 200));

  app.post("/demo/api/sessions", async (c) => {
    const choice = await readChoice(c);
    const avatar_config: Record<string, string> = {};
    if (choice.avatar_id) avatar_config.avatar_id = choice.avatar_id;
    if (choice.bg_id) avatar_config.bg_id = choice.bg_id;
    const transport = choice.transport ? { transport: choice.transport } : {};
    const body = ok(
      await api("POST", "/v1/sessions", { ...providerOf(choice, demo.engine), avatar_config, ...transport }),
    );
    return c.json({
      session_id: body.session_id,
      status: body.status,
      client_token: body.client_token,
      expires_at: body.expires_at,
      media_url: body.stream_metadata.media_url,
      transport: body.transport,
      stream_metadata: body.stream_metadata,
    }, 200);
  });

  // The avatar maker: a style's live preview (drawn, never stored), and "use this avatar" / an uploaded
  // drawing, created as a project avatar of the demo's project (docs/avatars.md).
  app.post("/demo/api/avatar-preview", async (c) => {
    const input = await c.req.json().catch(() => null) as { style?: unknown } | null;
    const parsed = AvatarStyle.safeParse(input?.style ?? {});
    if (!parsed.success) {
      throw new ApiError("SVC_INVALID_AVATAR", `style: ${parsed.error.issues[0]?.message ?? "invalid"}`);
    }
    const png = await (await loadAvatarRaster()).previewPng({ style: parsed.data }, "sil");
    return c.body(png as Uint8Array<ArrayBuffer>, 200, { "content-type": "image/png" });
  });

  app.post("/demo/api/avatars", async (c) => {
    const input = await c.req.json().catch(() => null) as
      | { name?: unknown; style?: unknown; svg?: unknown }
      | null;
    const body = typeof input?.svg === "string"
      ? { name: String(input?.name ?? "Drawing").slice(0, 100) || "Drawing", svg: input.svg }
      : { name: String(input?.name ?? "My avatar").slice(0, 100) || "My avatar", style: input?.style ?? {} };
    const made = ok(await api("POST", "/v1/avatars", body));
    return c.json({ avatar_id: made.avatar_id, name: made.name, source: made.source }, 200);
  });

  app.post("/demo/api/sessions/:id/token", async (c) => {
    const body = ok(
      await api("POST", `/v1/sessions/${encodeURIComponent(c.req.param("id"))}/client-token`),
    );
    return c.json({
      client_token: body.client_token,
      expires_at: body.expires_at,
      media_url: body.stream_metadata.media_url,
      stream_metadata: body.stream_metadata,
    }, 200);
  });

  app.get("/demo/api/sessions/:id/metrics", async (c) => {
    return c.json(ok(await api("GET", `/v1/sessions/${encodeURIComponent(c.req.param("id"))}/metrics`)), 200);
  });

  app.post("/demo/api/sessions/:id/end", async (c) => {
    return c.json(ok(await api("POST", `/v1/sessions/${encodeURIComponent(c.req.param("id"))}/end`)), 200);
  });
}

/**
 * True when the request comes from the demo page: `X-Demo: 1`, and the browser says it is same-origin:
 * `Sec-Fetch-Site: same-origin` (every current browser sends it), or, from a browser without it, an `Origin`
 * naming this host. Clients outside a browser send no such headers and pass: this keeps other web pages out,
 * nothing more.
 */
function fromDemoPage(c: Context<AppEnv>): boolean {
  if (c.req.header("x-demo") !== "1") return false;
  const site = c.req.header("sec-fetch-site");
  if (site !== undefined) return site === "same-origin";
  const origin = c.req.header("origin");
  if (origin === undefined) return true;
  try {
    return new URL(origin).host === c.req.header("host");
  } catch {
    return false;
  }
}

/** The page's avatar choice: an empty body, or a JSON object with optional string ids. */
async function readChoice(
  c: Context<AppEnv>,
): Promise<
  {
    avatar_id?: string;
    bg_id?: string;
    transport?: string;
    provider_type?: unknown;
    provider_fields?: unknown;
  }
> {
  const text = await c.req.text(); // a body over the limit or too slow fails here (413 / 408)
  if (text.trim() === "") return {};
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new ApiError("SVC_INVALID_REQUEST", "The request body is not valid JSON.");
  }
  if (value === null || typeof value !== "object" || Array.isArray(value)) {
    throw new ApiError("SVC_INVALID_REQUEST", "body: a JSON object is required");
  }
  const { avatar_id, bg_id, transport, provider_type, provider_fields } = value as Record<string, unknown>;
  const id = (v: unknown, field: string) => {
    if (v === undefined || v === null || v === "") return undefined;
    if (typeof v !== "string") throw new ApiError("SVC_INVALID_REQUEST", `${field}: must be a string`);
    return v;
  };
  return {
    avatar_id: id(avatar_id, "avatar_id"),
    bg_id: id(bg_id, "bg_id"),
    transport: id(transport, "transport"), // checked by the API (auto, websocket_fmp4, webrtc_sfu)
    provider_type,
    provider_fields,
  };
}

/**
 * The body of a successful inner call; an error answer is raised again as this request's error (its code,
 * message and retry delay), so the page gets the flat error body with its own request id.
 */
// deno-lint-ignore no-explicit-any
function ok(r: { status: number; body: any }): any {
  if (r.status >= 200 && r.status < 300) return r.body;
  const code = r.body?.code;
  if (typeof code === "string" && Object.hasOwn(ERROR_CATALOG, code)) {
    throw new ApiError(code as ErrorCode, String(r.body.message), { retryAfter: r.body.retry_after });
  }
  throw new Error(`demo: unexpected answer ${r.status} from the API`);
}
