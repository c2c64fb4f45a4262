import assert from "node:assert/strict";
import { createHarness, type Harness } from "../../testing/harness.ts";
import { startFakeEngine } from "../../testing/fake_engine.ts";
import { until } from "../../testing/deadline.ts";
import { checkErrorBody, engineBody, testTls } from "../../testing/fixtures.ts";

async function sessionCount(h: Harness, project = "proj_a"): Promise<number> {
  let n = 0;
  for await (const _ of h.kv.list({ prefix: ["project", project, "session"] })) n++;
  return n;
}

Deno.test("idempotency: same key + same body → the same session, a fresh token, Idempotent-Replayed", async () => {
  const engine = await startFakeEngine(testTls, "ok");
  const h = await createHarness({ caCerts: [testTls.caPem] });
  try {
    const key = await h.key("proj_a");
    const body = engineBody(engine.url);
    const headers = { "Idempotency-Key": "c0ffee00-1111-4222-8333-444455556666" };
    const first = await h.req("POST", "/v1/sessions", { key, body, headers });
    assert.equal(first.status, 200, first.text);
    assert.equal(first.headers.get("idempotent-replayed"), null);
    h.clock.advance(1000);
    const second = await h.req("POST", "/v1/sessions", { key, body, headers });
    assert.equal(second.status, 200, second.text);
    assert.equal(second.headers.get("idempotent-replayed"), "true");
    assert.equal(second.body.session_id, first.body.session_id);
    assert.equal(second.body.status, "active");
    assert.notEqual(
      second.body.client_token,
      first.body.client_token,
      "tokens are never stored, so always fresh",
    );
    assert.equal(await sessionCount(h), 1);
    assert.equal(engine.upgrades.length, 1, "the engine was connected once");
    // the same key in another project is another key
    const other = await h.key("proj_b");
    const third = await h.req("POST", "/v1/sessions", { key: other, body, headers });
    assert.notEqual(third.body.session_id, first.body.session_id);
    // a key-order change is the same body
    const reordered = { provider_config: body.provider_config, provider_type: body.provider_type };
    const fourth = await h.req("POST", "/v1/sessions", { key, body: reordered, headers });
    assert.equal(fourth.body.session_id, first.body.session_id);
  } finally {
    await h.close();
    await engine.close();
  }
});

Deno.test("idempotency: same key + another body → 422 SVC_IDEMPOTENCY_KEY_REUSED and no new session", async () => {
  const engine = await startFakeEngine(testTls, "ok");
  const h = await createHarness({ caCerts: [testTls.caPem] });
  try {
    const key = await h.key("proj_a");
    const headers = { "Idempotency-Key": "order-42" };
    assert.equal(
      (await h.req("POST", "/v1/sessions", { key, body: engineBody(engine.url), headers })).status,
      200,
    );
    const res = await h.req("POST", "/v1/sessions", {
      key,
      body: engineBody(engine.url, {}, "another-credential"),
      headers,
    });
    checkErrorBody(res, { status: 422, code: "SVC_IDEMPOTENCY_KEY_REUSED" });
    // A credential of the same length: the validated body's stand-ins are equal, the credentials' digest is not.
    const same = await h.req("POST", "/v1/sessions", {
      key,
      body: engineBody(engine.url, {}, "engine-tokeX"),
      headers,
    });
    checkErrorBody(same, { status: 422, code: "SVC_IDEMPOTENCY_KEY_REUSED" });
    assert.equal(await sessionCount(h), 1);
  } finally {
    await h.close();
    await engine.close();
  }
});

Deno.test("idempotency: concurrent duplicates create exactly one session", async () => {
  const engine = await startFakeEngine(testTls, "ok");
  const h = await createHarness({ caCerts: [testTls.caPem] });
  try {
    const key = await h.key("proj_a");
    const body = engineBody(engine.url);
    const headers = { "Idempotency-Key": "race-1" };
    const results = await Promise.all(
      Array.from({ length: 8 }, () => h.req("POST", "/v1/sessions", { key, body, headers })),
    );
    for (const r of results) assert.equal(r.status, 200, r.text);
    assert.equal(new Set(results.map((r) => r.body.session_id)).size, 1);
    assert.equal(results.filter((r) => r.headers.get("idempotent-replayed") === "true").length, 7);
    assert.equal(await sessionCount(h), 1);
    assert.equal(engine.upgrades.length, 1);
  } finally {
    await h.close();
    await engine.close();
  }
});

Deno.test("idempotency: a failed create is not remembered; a retry runs again", async () => {
  const down = await startFakeEngine(testTls, "reject_401");
  const up = await startFakeEngine(testTls, "ok");
  const h = await createHarness({ caCerts: [testTls.caPem] });
  try {
    const key = await h.key("proj_a");
    const headers = { "Idempotency-Key": "retry-me" };
    const first = await h.req("POST", "/v1/sessions", { key, body: engineBody(down.url), headers });
    assert.equal(first.status, 502);
    const second = await h.req("POST", "/v1/sessions", { key, body: engineBody(down.url), headers });
    assert.equal(second.status, 502, "ran again (not replayed)");
    assert.equal(down.upgrades.length, 2);
    // after a failure, the key can be used for a different body too
    const third = await h.req("POST", "/v1/sessions", { key, body: engineBody(up.url), headers });
    assert.equal(third.status, 200, third.text);
  } finally {
    await h.close();
    await down.close();
    await up.close();
  }
});

Deno.test("idempotency: keys are kept 24 hours, then forgotten", async () => {
  const engine = await startFakeEngine(testTls, "ok");
  const h = await createHarness({ caCerts: [testTls.caPem] });
  try {
    const key = await h.key("proj_a");
    const body = engineBody(engine.url);
    const headers = { "Idempotency-Key": "daily" };
    const first = await h.req("POST", "/v1/sessions", { key, body, headers });
    h.clock.advance(24 * 3600_000 - 60_000);
    assert.equal(
      (await h.req("POST", "/v1/sessions", { key, body, headers })).body.session_id,
      first.body.session_id,
    );
    h.clock.advance(120_000);
    const later = await h.req("POST", "/v1/sessions", { key, body, headers });
    assert.equal(later.status, 200);
    assert.notEqual(later.body.session_id, first.body.session_id);
  } finally {
    await h.close();
    await engine.close();
  }
});

Deno.test("idempotency: malformed keys answer 400 SVC_INVALID_REQUEST", async () => {
  const h = await createHarness();
  try {
    const key = await h.key("proj_a");
    for (const bad of ["x".repeat(256), "has space", "tab\tkey", "ünï"]) {
      const res = await h.req("POST", "/v1/sessions", {
        key,
        body: engineBody("wss://localhost:1/v0"),
        headers: { "Idempotency-Key": bad },
      });
      checkErrorBody(res, { status: 400, code: "SVC_INVALID_REQUEST" });
    }
  } finally {
    await h.close();
  }
});

Deno.test("idempotency: a duplicate that outwaits its wait budget answers retryable 409 SVC_IDEMPOTENCY_IN_PROGRESS", async () => {
  const engine = await startFakeEngine(testTls, "never_ready");
  const h = await createHarness({
    caCerts: [testTls.caPem],
    // (the first create stays in progress for 3 s, far longer than the duplicate's 200 ms wait budget)
    env: { SVC_PROVIDER_CONNECT_TIMEOUT_MS: "3000" },
    idempotencyWaitMs: 200,
  });
  try {
    const key = await h.key("proj_a");
    const headers = { "Idempotency-Key": "slow" };
    const body = engineBody(engine.url);
    const first = h.req("POST", "/v1/sessions", { key, body, headers });
    // the first create is in progress once the engine has its session.start
    await until(
      () => engine.messages.some((m) => m.type === "session.start"),
      "the first create to reach the engine",
    );
    const dup = await h.req("POST", "/v1/sessions", { key, body, headers });
    checkErrorBody(dup, { status: 409, code: "SVC_IDEMPOTENCY_IN_PROGRESS", retryable: true });
    assert.equal((await first).status, 504);
  } finally {
    await h.close();
    await engine.close();
  }
});
