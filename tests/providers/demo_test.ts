/**
 * The demo page's backend lets its user pick a vendor engine: it forwards the short-lived credential the
 * page pasted (and nothing else: never an API key), and keeps the reference engine as the default.
 */
import assert from "node:assert/strict";
import { Hono } from "hono";
import type { AppEnv } from "../../src/api/app_env.ts";
import { registerDemoRoutes } from "../../src/api/routes/demo.ts";
import { DEMO_APP_JS, DEMO_PAGE_HTML } from "../../src/api/demo_page.ts";

Deno.test("demo: the page offers every provider type; its backend forwards only the browser-safe fields", async () => {
  const sent: Record<string, unknown>[] = [];
  const app = new Hono<AppEnv>();
  registerDemoRoutes(app, {
    apiKey: "svc_sk_demo",
    engine: { url: "wss://localhost:8788/v0", token: "engine-token" },
    call: async (req) => {
      sent.push(await req.json());
      return Response.json({
        session_id: "session:x",
        status: "active",
        client_token: "t",
        expires_at: 1,
        stream_metadata: { media_url: "ws://x" },
      });
    },
  });
  const create = (body: unknown) =>
    app.fetch(
      new Request("http://demo.test/demo/api/sessions", {
        method: "POST",
        headers: { "x-demo": "1", "content-type": "application/json" },
        body: JSON.stringify(body),
      }),
    );
  assert.equal((await create({ avatar_id: "ada" })).status, 200);
  assert.equal(sent[0].provider_type, "external_engine", "the reference engine by default");
  await create({
    provider_type: "vendor2",
    provider_fields: { access_token: "tok", agent_id: "agent_1", api_key: "never", extra: "x" },
  });
  assert.deepEqual(sent[1].provider_config, { vendor2: { access_token: "tok", agent_id: "agent_1" } });
  await create({ provider_type: "vendor3", provider_fields: { agent_id: "agent_2", api_key: "xi_never" } });
  assert.deepEqual(sent[2].provider_config, { vendor3: { agent_id: "agent_2" } });
  await create({ provider_type: "vendor1_realtime", provider_fields: { client_secret: "ek_1" } });
  assert.deepEqual(sent[3].provider_config, { vendor1_realtime: { client_secret: "ek_1" } });
  for (const type of ["vendor1_realtime", "vendor2", "vendor3"]) {
    assert.ok(DEMO_PAGE_HTML.includes(`value="${type}"`), `${type} offered`);
    assert.ok(DEMO_APP_JS.includes(type));
  }
  assert.ok(!DEMO_APP_JS.includes("api_key"), "the page never asks for an API key");
});
