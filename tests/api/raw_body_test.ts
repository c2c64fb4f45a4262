/**
 * The create-session route takes the credentials from the body's bytes: the holder gets exactly the
 * provider config's bytes, and the body buffer is zeroed once the request is done.
 */
import assert from "node:assert/strict";
import { OpenAPIHono } from "@hono/zod-openapi";
import { rawBody } from "../../src/api/middleware/raw_body.ts";
import type { AppEnv } from "../../src/api/app_env.ts";
import { createHarness } from "../../testing/harness.ts";
import type { ConnectRequest, ProviderConnection, ProviderConnector } from "../../src/providers/types.ts";

Deno.test("raw body: the route's bytes are zeroed when the request is done; JSON validation still reads them", async () => {
  const app = new OpenAPIHono<AppEnv>();
  let kept: Uint8Array | undefined;
  app.post("/x", rawBody(), async (c) => {
    kept = c.get("rawBody");
    const parsed = await c.req.json();
    return c.json({ echoed: parsed.secret === "s3cret" });
  });
  const res = await app.request("/x", {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ secret: "s3cret" }),
  });
  assert.deepEqual(await res.json(), { echoed: true });
  assert.ok(kept && kept.length > 0 && kept.every((b) => b === 0), "zeroed after the request");
});

Deno.test("raw body: the holder gets the provider config's exact bytes from the request body", async () => {
  let held: string | null = null;
  const capture: ProviderConnector = {
    connect(req: ConnectRequest): Promise<ProviderConnection> {
      held = new TextDecoder().decode(req.credentials.snapshotBytes());
      req.credentials.zero();
      return Promise.reject(new Error("stop here"));
    },
  };
  const h = await createHarness({ connectors: { external_engine: capture } });
  try {
    const key = await h.key("proj_a");
    const body = '{"provider_type":"external_engine","provider_config":{"external_engine": ' +
      '{"url":"wss://e.example/v0", "auth_headers":{"Authorization":"Bearer canary\\u0021"}}}}';
    await h.req("POST", "/v1/sessions", { key, body });
    assert.equal(
      held,
      '{"url":"wss://e.example/v0", "auth_headers":{"Authorization":"Bearer canary\\u0021"}}',
    );
  } finally {
    await h.close();
  }
});
