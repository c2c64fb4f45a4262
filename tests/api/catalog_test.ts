import assert from "node:assert/strict";
import { countLiveSessions } from "../../src/kv/sessions.ts";
import { checkErrorBody, engineBody, testTls } from "../../testing/fixtures.ts";
import { startFakeEngine } from "../../testing/fake_engine.ts";
import { createHarness } from "../../testing/harness.ts";

Deno.test("catalog: GET /v1/catalog lists ≥ 3 avatars and backgrounds with defaults (scope sessions:read)", async () => {
  const h = await createHarness();
  try {
    const key = await h.key("proj_a", ["sessions:read"]);
    const res = await h.req("GET", "/v1/catalog", { key });
    assert.equal(res.status, 200);
    assert.ok(res.body.avatars.length >= 3);
    assert.ok(res.body.backgrounds.length >= 3);
    assert.equal(res.body.default_avatar_id, "ada");
    assert.equal(res.body.default_bg_id, "studio");
    assert.deepEqual(Object.keys(res.body.avatars[0]).sort(), ["description", "id", "name"]);
    const noScope = await h.req("GET", "/v1/catalog", { key: await h.key("proj_a", ["api_keys:read"]) });
    checkErrorBody(noScope, { status: 403, code: "SVC_AUTH_MISSING_SCOPE" });
    checkErrorBody(await h.req("GET", "/v1/catalog"), { status: 401, code: "SVC_AUTH_MISSING_CREDENTIALS" });
  } finally {
    await h.close();
  }
});

Deno.test("catalog: an unknown avatar or background is 400 SVC_RENDER_MISCONFIGURED before anything is written", async () => {
  const engine = await startFakeEngine(testTls, "ok");
  const h = await createHarness({ caCerts: [testTls.caPem] });
  try {
    const key = await h.key("proj_a");
    for (const avatar_config of [{ avatar_id: "nobody" }, { avatar_id: "ada", bg_id: "moon" }]) {
      const res = await h.req("POST", "/v1/sessions", {
        key,
        body: engineBody(engine.url, { avatar_config }),
        headers: { "Idempotency-Key": crypto.randomUUID() },
      });
      const body = checkErrorBody(res, { status: 400, code: "SVC_RENDER_MISCONFIGURED" });
      assert.match(String(body.message), /catalog/);
    }
    assert.equal(engine.upgrades.length, 0, "the engine was never contacted");
    assert.equal(await countLiveSessions(h.kv, "proj_a"), 0);
    let records = 0;
    for await (const _ of h.kv.list({ prefix: ["project", "proj_a", "session"] })) records++;
    assert.equal(records, 0, "no session record");
    let idem = 0;
    for await (const _ of h.kv.list({ prefix: ["project", "proj_a", "idempotency"] })) idem++;
    assert.equal(idem, 0, "no idempotency record");
    const ok = await h.req("POST", "/v1/sessions", {
      key,
      body: engineBody(engine.url, { avatar_config: { avatar_id: "kai", bg_id: "sunset" } }),
    });
    assert.equal(ok.status, 200, ok.text);
    const start = engine.messages.find((m) => m.type === "session.start") as { metadata: unknown };
    assert.deepEqual(start.metadata, { avatar_id: "kai", bg_id: "sunset" });
  } finally {
    await h.close();
    await engine.close();
  }
});
