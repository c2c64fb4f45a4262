import assert from "node:assert/strict";
import { createHarness } from "../../testing/harness.ts";
import { startFakeEngine } from "../../testing/fake_engine.ts";
import { checkErrorBody, engineBody, testTls } from "../../testing/fixtures.ts";

Deno.test("smoke: create, get, end against a fake engine", async () => {
  const engine = await startFakeEngine(testTls, "ok");
  const h = await createHarness({ caCerts: [testTls.caPem] });
  try {
    const key = await h.key("proj_a");
    const created = await h.req("POST", "/v1/sessions", { key, body: engineBody(engine.url) });
    assert.equal(created.status, 200, created.text);
    assert.equal(created.body.status, "active");
    const got = await h.req("GET", `/v1/sessions/${created.body.session_id}`, { key });
    assert.equal(got.status, 200, got.text);
    const ended = await h.req("POST", `/v1/sessions/${created.body.session_id}/end`, { key });
    assert.equal(ended.status, 200, ended.text);
    assert.equal(ended.body.status, "ended");
    const again = await h.req("POST", `/v1/sessions/${created.body.session_id}/end`, { key });
    checkErrorBody(again, { status: 409, code: "SVC_SESSION_ENDED" });
  } finally {
    await h.close();
    await engine.close();
  }
});
