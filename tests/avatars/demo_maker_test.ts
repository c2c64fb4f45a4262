/**
 * The demo page's avatar maker: the page carries every style choice; its backend previews a style without
 * storing it (a PNG), refuses an invalid one, and creates a project avatar (style or drawing) through the API
 * with the demo's key, answering only its id, name and source.
 */
import assert from "node:assert/strict";
import { Hono } from "hono";
import type { AppEnv } from "../../src/api/app_env.ts";
import { DEMO_APP_JS, DEMO_PAGE_HTML } from "../../src/api/demo_page.ts";
import { registerDemoRoutes } from "../../src/api/routes/demo.ts";
import { HAIR_STYLES } from "../../src/vocabulary/avatar_style.ts";
import { ApiError } from "../../src/errors.ts";

Deno.test("demo avatar maker: live preview (not stored), use this avatar, upload a drawing", async () => {
  const sent: { path: string; body: Record<string, unknown> }[] = [];
  const app = new Hono<AppEnv>();
  // The app's answer to an ApiError: its status and code.
  app.onError((e) =>
    e instanceof ApiError
      ? Response.json({ code: e.code }, { status: e.status })
      : new Response(null, { status: 500 })
  );
  registerDemoRoutes(app, {
    apiKey: "svc_sk_demo",
    engine: { url: "wss://localhost:8788/v0", token: "engine-token" },
    call: async (req) => {
      const body = await req.json();
      sent.push({ path: new URL(req.url).pathname, body });
      return Response.json({
        avatar_id: "av_x1",
        name: body.name,
        source: body.svg ? "svg" : "style",
        extra: 1,
      }, {
        status: 201,
      });
    },
  });
  const post = (path: string, body: unknown) =>
    app.fetch(
      new Request(`http://demo.test/demo/api${path}`, {
        method: "POST",
        headers: { "x-demo": "1", "content-type": "application/json" },
        body: JSON.stringify(body),
      }),
    );
  for (const h of HAIR_STYLES) assert.ok(DEMO_PAGE_HTML.includes(`<option value="${h}"`), h);
  assert.ok(DEMO_PAGE_HTML.includes('id="mk_svg"') && DEMO_APP_JS.includes("/avatar-preview"));

  const preview = await post("/avatar-preview", { style: { hair_style: "afro", accessory: "hat" } });
  assert.equal(preview.status, 200);
  assert.equal(preview.headers.get("content-type"), "image/png");
  assert.deepEqual([...new Uint8Array(await preview.arrayBuffer()).slice(1, 4)], [0x50, 0x4e, 0x47]);
  assert.equal(sent.length, 0, "a preview stores nothing");
  const bad = await post("/avatar-preview", { style: { hair_style: "mohawk" } });
  assert.equal(bad.status, 400);
  assert.equal((await bad.json()).code, "SVC_INVALID_AVATAR");

  const made = await post("/avatars", { name: "Mine", style: { hair_style: "bun" } });
  assert.deepEqual(await made.json(), { avatar_id: "av_x1", name: "Mine", source: "style" });
  assert.deepEqual(sent[0], { path: "/v1/avatars", body: { name: "Mine", style: { hair_style: "bun" } } });
  const drawn = await post("/avatars", { name: "Pic", svg: "<svg/>" });
  assert.equal((await drawn.json()).source, "svg");
  assert.deepEqual(sent[1].body, { name: "Pic", svg: "<svg/>" });
  const foreign = await app.fetch(
    new Request("http://demo.test/demo/api/avatars", { method: "POST", body: "{}" }),
  );
  assert.equal(foreign.status, 403, "only the demo page");
  await foreign.body?.cancel();
});
