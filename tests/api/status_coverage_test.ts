/**
 * Status codes that need a particular set-up: 500 on unexpected errors, 409 SVC_SESSION_CANCELLED when a
 * session is cancelled while it starts, and 429 on every route.
 */
import assert from "node:assert/strict";
import { transitionSession } from "../../src/kv/sessions.ts";
import type { ConnectRequest, ProviderBridge, ProviderConnection } from "../../src/providers/types.ts";
import { createHarness } from "../../testing/harness.ts";
import { checkErrorBody } from "../../testing/fixtures.ts";

const vendor1 = {
  provider_type: "vendor1_realtime",
  provider_config: { vendor1_realtime: { client_secret: "ek_test" } },
};

/** A connection that does nothing but can be closed. */
function idleConnection(): ProviderConnection {
  return {
    inputSampleRate: 24000,
    outputSampleRate: 24000,
    sendUserAudio() {},
    reportPlayed() {},
    close: () => Promise.resolve({ clean: true }),
    released: Promise.resolve(),
  };
}

Deno.test("500 SVC_INTERNAL_ERROR: an unexpected failure is logged, answered generically, and fails the session", async () => {
  const broken: ProviderBridge = {
    connect: () => Promise.reject(new TypeError("boom: unexpected bug at engine.example:1234")),
  };
  const h = await createHarness({ bridges: { vendor1_realtime: broken } });
  try {
    const key = await h.key("proj_a");
    const res = await h.req("POST", "/v1/sessions", { key, body: vendor1 });
    const body = checkErrorBody(res, { status: 500, code: "SVC_INTERNAL_ERROR" });
    assert.ok(!String(body.message).includes("boom"), "no internals in the message");
    assert.ok(!res.text.includes("engine.example"));
    const logged = h.logs.find((l) => l.includes('"unexpected error"'));
    assert.ok(logged && logged.includes(String(body.request_id)), "the request id finds the log line");
    const recs = [];
    for await (
      const e of h.kv.list<{ status: string; error_code: string }>({
        prefix: ["project", "proj_a", "session"],
      })
    ) {
      recs.push(e.value);
    }
    assert.deepEqual(recs.map((r) => [r.status, r.error_code]), [["failed", "SVC_INTERNAL_ERROR"]]);
  } finally {
    await h.close();
  }
});

Deno.test("409 SVC_SESSION_CANCELLED: a session cancelled while it starts is not answered as active", async () => {
  const kv = await Deno.openKv(":memory:");
  const cancelling: ProviderBridge = {
    async connect(req: ConnectRequest) {
      // Someone (a shutdown, a reaper) moves the session on while its engine connects.
      await transitionSession(kv, "proj_a", req.sessionId, ["activating"], "failed", {
        end_reason: "service_shutdown",
      }, Date.now());
      return idleConnection();
    },
  };
  const h = await createHarness({ kv, bridges: { vendor1_realtime: cancelling } });
  try {
    const key = await h.key("proj_a");
    const res = await h.req("POST", "/v1/sessions", { key, body: vendor1 });
    checkErrorBody(res, { status: 409, code: "SVC_SESSION_CANCELLED" });
    assert.equal(h.runtime.size, 0, "the runtime released it");
    assert.equal((await h.kv.get(["project", "proj_a", "live_sessions"])).value, 0);
  } finally {
    await h.close();
    kv.close();
  }
});

Deno.test("429 SVC_RATE_LIMIT_EXCEEDED applies to every /v1 route, before the route runs", async () => {
  const h = await createHarness({ env: { SVC_RATE_LIMIT_PER_MINUTE: "1", SVC_RATE_LIMIT_BURST: "1" } });
  try {
    const sid = "session:AAAAAAAAAAAAAAAAAAAAAA";
    const routes: [string, string, unknown?][] = [
      ["POST", "/v1/api-keys", { name: "x", scopes: ["sessions:read"] }],
      ["DELETE", "/v1/api-keys/svc_key_x"],
      ["GET", "/v1/api-keys"],
      ["POST", "/v1/sessions", vendor1],
      ["GET", `/v1/sessions/${sid}`],
      ["POST", `/v1/sessions/${sid}/end`],
      ["POST", `/v1/sessions/${sid}/client-token`],
    ];
    for (const [method, path, body] of routes) {
      const key = await h.key("proj_a");
      await h.req("GET", "/v1/api-keys", { key }); // spends the burst of 1
      const res = await h.req(method, path, { key, body });
      const b = checkErrorBody(res, { status: 429, code: "SVC_RATE_LIMIT_EXCEEDED", retryable: true });
      assert.equal(b.retry_after, 60, "one request a minute: the next is admitted in 60 s");
      assert.equal(res.headers.get("x-ratelimit-remaining"), "0");
    }
    let sessions = 0;
    for await (const _ of h.kv.list({ prefix: ["project", "proj_a", "session"] })) sessions++;
    assert.equal(sessions, 0, "a limited create wrote nothing");
  } finally {
    await h.close();
  }
});
