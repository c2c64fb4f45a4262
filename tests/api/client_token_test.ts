import assert from "node:assert/strict";
import { TOKEN_TTL_MS } from "../../src/auth/tokens.ts";
import { createHarness } from "../../testing/harness.ts";
import { startFakeEngine } from "../../testing/fake_engine.ts";
import { checkErrorBody, engineBody, testTls } from "../../testing/fixtures.ts";

Deno.test("client token: a fresh, signed, session- and purpose-bound pair for an active session", async () => {
  const engine = await startFakeEngine(testTls, "ok");
  const h = await createHarness({ caCerts: [testTls.caPem] });
  try {
    const key = await h.key("proj_a");
    const created = await h.req("POST", "/v1/sessions", { key, body: engineBody(engine.url) });
    const sid = created.body.session_id;
    const res = await h.req("POST", `/v1/sessions/${sid}/client-token`, { key });
    assert.equal(res.status, 200, res.text);
    assert.deepEqual(Object.keys(res.body).sort(), [
      "client_token",
      "expires_at",
      "stream_metadata",
      "transport",
    ]);
    assert.notEqual(res.body.client_token, created.body.client_token, "fresh token");
    assert.equal(res.body.transport, "websocket_fmp4");
    assert.equal(res.body.stream_metadata.transport, "websocket_fmp4");
    assert.equal(res.body.stream_metadata.sfu_endpoint, null);
    assert.ok(Math.abs(res.body.expires_at - (h.clock.now() + TOKEN_TTL_MS)) <= 1000);

    const client = await h.tokens.verify(res.body.client_token, { purposes: ["client"], sessionId: sid });
    assert.ok(client.ok);
    if (client.ok) {
      assert.equal(client.claims.pid, "proj_a");
      assert.equal(client.claims.exp * 1000, res.body.expires_at);
    }
    const media = await h.tokens.verify(res.body.stream_metadata.session_token, {
      purposes: ["media"],
      sessionId: sid,
    });
    assert.ok(media.ok);
    // purpose binding: a client token is not a session token and vice versa
    assert.deepEqual(await h.tokens.verify(res.body.client_token, { purposes: ["media"] }), {
      ok: false,
      reason: "wrong_purpose",
    });
    assert.deepEqual(
      await h.tokens.verify(res.body.client_token, { purposes: ["client"], sessionId: "session:other" }),
      {
        ok: false,
        reason: "wrong_session",
      },
    );
    // tampering breaks the signature
    const [hd, payload, sig] = res.body.client_token.split(".");
    const forged = JSON.parse(atob(payload.replace(/-/g, "+").replace(/_/g, "/")));
    forged.sub = "session:other";
    const forgedPayload = btoa(JSON.stringify(forged)).replace(/\+/g, "-").replace(/\//g, "_").replace(
      /=+$/,
      "",
    );
    assert.deepEqual(await h.tokens.verify(`${hd}.${forgedPayload}.${sig}`, { purposes: ["client"] }), {
      ok: false,
      reason: "invalid",
    });
    // expiry, on the injected clock
    h.clock.advance(TOKEN_TTL_MS - 2_000);
    assert.ok((await h.tokens.verify(res.body.client_token, { purposes: ["client"] })).ok);
    h.clock.advance(2_000);
    assert.deepEqual(await h.tokens.verify(res.body.client_token, { purposes: ["client"] }), {
      ok: false,
      reason: "expired",
    });
    // ...and a new one can be minted
    const again = await h.req("POST", `/v1/sessions/${sid}/client-token`, { key });
    assert.ok((await h.tokens.verify(again.body.client_token, { purposes: ["client"] })).ok);
  } finally {
    await h.close();
    await engine.close();
  }
});

Deno.test("client token: tokens signed with another secret are refused; a rotated-out secret still verifies", async () => {
  const { TokenService } = await import("../../src/auth/tokens.ts");
  const { OffsetClock } = await import("../../src/clock.ts");
  const clock = new OffsetClock();
  const old = new TokenService({ current: "old-secret-0123456789abcdef0123456789ab", previous: null }, clock);
  const rotated = new TokenService({
    current: "new-secret-0123456789abcdef0123456789ab",
    previous: "old-secret-0123456789abcdef0123456789ab",
  }, clock);
  const other = new TokenService(
    { current: "zzz-secret-0123456789abcdef0123456789ab", previous: null },
    clock,
  );
  const { token } = await old.mint("session:a", "proj_a", "client");
  assert.ok((await rotated.verify(token, { purposes: ["client"] })).ok);
  assert.deepEqual(await other.verify(token, { purposes: ["client"] }), { ok: false, reason: "invalid" });
  assert.deepEqual(await other.verify("not.a.token", { purposes: ["client"] }), {
    ok: false,
    reason: "invalid",
  });
});

Deno.test("client token: 503 SVC_TOKEN_SECRET_NOT_CONFIGURED without a secret; 404 for unknown sessions", async () => {
  const h = await createHarness({ tokenSecret: null });
  try {
    const key = await h.key("proj_a");
    checkErrorBody(await h.req("POST", "/v1/sessions/session:missing/client-token", { key }), {
      status: 404,
      code: "SVC_SESSION_NOT_FOUND",
    });
    await h.kv.set(["project", "proj_a", "session", "session:live"], {
      session_id: "session:live",
      project_id: "proj_a",
      status: "active",
      provider_type: "external_engine",
      transport: "websocket_fmp4",
    });
    checkErrorBody(await h.req("POST", "/v1/sessions/session:live/client-token", { key }), {
      status: 503,
      code: "SVC_TOKEN_SECRET_NOT_CONFIGURED",
    });
  } finally {
    await h.close();
  }
});
