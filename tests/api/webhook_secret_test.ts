import assert from "node:assert/strict";
import { checkErrorBody } from "../../testing/fixtures.ts";
import { createHarness } from "../../testing/harness.ts";

Deno.test("webhook secret route: api_keys:write reads and rotates it; other scopes and projects cannot", async () => {
  const h = await createHarness();
  try {
    const admin = await h.key("proj_a");
    const reader = await h.key("proj_a", ["sessions:read", "sessions:write", "api_keys:read"]);
    const other = await h.key("proj_b");
    const got = await h.req("GET", "/v1/webhooks/secret", { key: admin });
    assert.equal(got.status, 200, got.text);
    assert.equal(got.headers.get("cache-control"), "no-store");
    assert.match(got.body.secret, /^whsec_[A-Za-z0-9+/]{43}=$/);
    assert.deepEqual(
      { ...got.body, secret: "x", created_at: 0 },
      { secret: "x", previous_secret: null, previous_valid_until: null, created_at: 0, rotated_at: null },
    );
    // stable across reads; per project
    assert.equal((await h.req("GET", "/v1/webhooks/secret", { key: admin })).body.secret, got.body.secret);
    const b = await h.req("GET", "/v1/webhooks/secret", { key: other });
    assert.notEqual(b.body.secret, got.body.secret);
    for (const [method, path] of [["GET", "/v1/webhooks/secret"], ["POST", "/v1/webhooks/secret/rotate"]]) {
      checkErrorBody(await h.req(method, path, { key: reader }), {
        status: 403,
        code: "SVC_AUTH_MISSING_SCOPE",
      });
      checkErrorBody(await h.req(method, path), { status: 401, code: "SVC_AUTH_MISSING_CREDENTIALS" });
    }
    const rotated = await h.req("POST", "/v1/webhooks/secret/rotate", { key: admin });
    assert.equal(rotated.status, 200);
    assert.notEqual(rotated.body.secret, got.body.secret);
    assert.equal(rotated.body.previous_secret, got.body.secret);
    assert.equal(rotated.body.previous_valid_until, rotated.body.rotated_at + 24 * 3600_000);
    h.clock.advance(24 * 3600_000 + 1);
    const later = await h.req("GET", "/v1/webhooks/secret", { key: admin });
    assert.equal(later.body.secret, rotated.body.secret);
    assert.equal(later.body.previous_secret, null, "the previous secret is gone after its grace period");
  } finally {
    await h.close();
  }
});
