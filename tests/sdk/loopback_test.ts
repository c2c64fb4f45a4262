/**
 * The SDK over loopback HTTP against a running service (real sockets, the global fetch, the embedded
 * reference engine): every method, error answers, a refused connection, and retries over the network.
 */
import assert from "node:assert/strict";
import { ApiError, createClient, type RetryEvent } from "../../sdk/mod.js";
import { closedPort, startTestService } from "../../testing/service.ts";

Deno.test("sdk loopback: every method against a running service", async () => {
  const svc = await startTestService();
  try {
    const client = createClient({ baseUrl: svc.url, apiKey: await svc.key("proj_loop") });

    const key = await client.createApiKey({ name: "loopback", scopes: ["sessions:read", "sessions:write"] });
    assert.match(key.api_key, /^svc_sk_/);
    const listed = await client.listApiKeys({ limit: 10 });
    assert.ok(listed.data.some((k) => k.key_id === key.key_id && k.status === "active"));
    assert.equal(listed.data.length, 2);

    const other = createClient({ baseUrl: svc.url, apiKey: key.api_key });
    const session = await other.createSession(svc.engineBody(), { idempotencyKey: "loopback-1" });
    assert.equal(session.status, "active");
    assert.equal(session.transport, "websocket_fmp4");
    assert.equal((await other.getSession(session.session_id)).status, "active");
    const token = await other.createClientToken(session.session_id);
    assert.ok(token.expires_at > session.expires_at - 60_000);
    const replay = await other.createSession(svc.engineBody(), { idempotencyKey: "loopback-1" });
    assert.equal(replay.session_id, session.session_id);
    const ended = await other.endSession(session.session_id, { force: true });
    assert.equal(ended.status, "ended");
    assert.ok(typeof ended.duration_s === "number" && ended.duration_s >= 0);

    const revoked = await client.revokeApiKey(key.key_id);
    assert.equal(revoked.status, "revoked");
    await assert.rejects(other.getSession(session.session_id), { code: "SVC_AUTH_INVALID_KEY", status: 401 });
    assert.ok(!svc.logs.join("\n").includes(key.api_key), "the service never logs a key");
  } finally {
    await svc.close();
  }
});

Deno.test("sdk loopback: error answers arrive with their code, request id and retry_after", async () => {
  const svc = await startTestService();
  try {
    const client = createClient({ baseUrl: svc.url, apiKey: await svc.key("proj_loop") });
    const missing = await client.getSession("session:AAAAAAAAAAAAAAAAAAAAAA").catch((e) => e);
    assert.ok(missing instanceof ApiError);
    assert.equal(missing.code, "SVC_SESSION_NOT_FOUND");
    assert.match(missing.requestId!, /^[0-9a-f-]{36}$/);
    // the engine refuses a wrong token: the retryable 502
    const refused = await client.createSession(svc.engineBody("wrong-token")).catch((e) => e);
    assert.ok(refused instanceof ApiError);
    assert.deepEqual([refused.code, refused.status, refused.retryAfter, refused.retryable], [
      "SVC_PROVIDER_DOWNSTREAM_FAILED",
      502,
      5,
      true,
    ]);
    assert.ok(!refused.message.includes("wrong-token"));
  } finally {
    await svc.close();
  }
});

Deno.test("sdk loopback: a refused connection is SDK_NETWORK_ERROR, retried for safe calls only", async () => {
  const events: RetryEvent[] = [];
  const waits: number[] = [];
  const client = createClient({
    baseUrl: `http://127.0.0.1:${closedPort()}`,
    apiKey: "svc_sk_test",
    retry: {
      maxAttempts: 3,
      sleep: (ms) => {
        waits.push(ms);
        return Promise.resolve();
      },
      onRetry: (e) => events.push(e),
    },
  });
  const err = await client.getSession("session:x").catch((e) => e);
  assert.ok(err instanceof ApiError);
  assert.equal(err.code, "SDK_NETWORK_ERROR");
  assert.equal(err.status, 0);
  assert.equal(events.length, 2, "two retries after the first attempt");
  assert.ok(waits[0] >= 500 && waits[0] < 600 && waits[1] >= 1000 && waits[1] < 1200, `${waits}`);
  events.length = 0;
  await assert.rejects(client.endSession("session:x"), { code: "SDK_NETWORK_ERROR" });
  assert.equal(events.length, 0);
});
