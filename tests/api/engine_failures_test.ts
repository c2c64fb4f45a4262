import assert from "node:assert/strict";
import { createHarness } from "../../testing/harness.ts";
import { type FakeEngineBehavior, startFakeEngine } from "../../testing/fake_engine.ts";
import { checkErrorBody, engineBody, testTls } from "../../testing/fixtures.ts";
import { mapStartFailure } from "../../src/providers/external_engine/bridge.ts";

Deno.test("engine failure mapping from the WebSocket client's messages", () => {
  const net = (message: string) => mapStartFailure({ kind: "network", message }).code;
  assert.equal(
    net("NetworkError: failed to connect to WebSocket: Invalid status code: 401"),
    "SVC_PROVIDER_DOWNSTREAM_FAILED",
  );
  assert.equal(
    net("NetworkError: failed to connect to WebSocket: Invalid status code: 503"),
    "SVC_PROVIDER_UNAVAILABLE",
  );
  assert.equal(
    net("NetworkError: failed to connect to WebSocket: tcp connect error"),
    "SVC_PROVIDER_UNAVAILABLE",
  );
  assert.equal(
    net("NetworkError: failed to connect to WebSocket: invalid peer certificate: UnknownIssuer"),
    "SVC_PROVIDER_UNAVAILABLE",
  );
  assert.equal(
    net("NetworkError: failed to connect to WebSocket: dns error: failed to lookup address"),
    "SVC_PROVIDER_UNAVAILABLE",
  );
  assert.equal(
    net("NetworkError: failed to connect to WebSocket: received fatal alert: NoApplicationProtocol"),
    "SVC_PROVIDER_DOWNSTREAM_FAILED",
  );
  assert.equal(
    net("NetworkError: failed to connect to WebSocket: Didn't receive h2 alpn, aborting connection"),
    "SVC_PROVIDER_DOWNSTREAM_FAILED",
  );
  assert.equal(mapStartFailure({ kind: "close", code: 4001 }).code, "SVC_PROVIDER_DOWNSTREAM_FAILED");
  assert.equal(mapStartFailure({ kind: "close", code: 1011 }).code, "SVC_PROVIDER_DOWNSTREAM_FAILED");
  assert.equal(mapStartFailure({ kind: "close", code: 1013 }).code, "SVC_PROVIDER_UNAVAILABLE");
  assert.equal(mapStartFailure({ kind: "close", code: 4003 }).code, "SVC_PROVIDER_MISCONFIGURED");
  assert.equal(mapStartFailure({ kind: "close", code: 4029 }).code, "SVC_RATE_LIMIT_PROVIDER_QUOTA");
  assert.equal(
    mapStartFailure({ kind: "error", code: "unauthorized" }).code,
    "SVC_PROVIDER_DOWNSTREAM_FAILED",
  );
  assert.equal(
    mapStartFailure({ kind: "error", code: "rate_limited" }).code,
    "SVC_RATE_LIMIT_PROVIDER_QUOTA",
  );
  assert.equal(
    mapStartFailure({ kind: "error", code: "bad_audio_format" }).code,
    "SVC_PROVIDER_MISCONFIGURED",
  );
  assert.equal(mapStartFailure({ kind: "timeout" }).code, "SVC_PROVIDER_TIMEOUT");
  assert.equal(mapStartFailure({ kind: "protocol" }).code, "SVC_PROVIDER_DOWNSTREAM_FAILED");
});

const CASES: [FakeEngineBehavior, number, string, boolean][] = [
  ["reject_401", 502, "SVC_PROVIDER_DOWNSTREAM_FAILED", true],
  ["reject_404", 502, "SVC_PROVIDER_DOWNSTREAM_FAILED", true],
  ["close_4001", 502, "SVC_PROVIDER_DOWNSTREAM_FAILED", true],
  // The bridge's own client sees a refused upgrade's status over wss:// too (the protocol, §8).
  ["reject_503", 503, "SVC_PROVIDER_UNAVAILABLE", true],
  ["close_1013", 503, "SVC_PROVIDER_UNAVAILABLE", true],
  ["close_4003", 400, "SVC_PROVIDER_MISCONFIGURED", false],
  ["rate_limited", 429, "SVC_RATE_LIMIT_PROVIDER_QUOTA", true],
  ["never_ready", 504, "SVC_PROVIDER_TIMEOUT", true],
];

for (const [behavior, status, code, retryable] of CASES) {
  Deno.test(`engine failure ${behavior} → ${status} ${code}; session failed, slot freed`, async () => {
    const engine = await startFakeEngine(testTls, behavior);
    const h = await createHarness({
      caCerts: [testTls.caPem],
      env: { SVC_PROVIDER_CONNECT_TIMEOUT_MS: "500" },
    });
    try {
      const key = await h.key("proj_a");
      const res = await h.req("POST", "/v1/sessions", {
        key,
        body: engineBody(engine.url, {}, "engine-cred-xyz"),
      });
      const body = checkErrorBody(res, { status, code, retryable });
      const text = String(body.message);
      for (
        const leak of ["localhost", "127.0.0.1", "engine-cred-xyz", "wss:", String(new URL(engine.url).port)]
      ) {
        assert.ok(!text.includes(leak), `error leaks ${leak}: ${text}`);
      }
      const records = [];
      for await (
        const e of h.kv.list<{ status: string; error_code: string }>({
          prefix: ["project", "proj_a", "session"],
        })
      ) {
        records.push(e.value);
      }
      assert.equal(records.length, 1);
      assert.equal(records[0].status, "failed");
      assert.equal(records[0].error_code, code);
      assert.equal((await h.kv.get(["project", "proj_a", "live_sessions"])).value, 0);
    } finally {
      await h.close();
      await engine.close();
    }
  });
}

Deno.test("engine unreachable (connection refused) → 503 SVC_PROVIDER_UNAVAILABLE", async () => {
  // a port that was just free: nothing listens there
  const probe = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (probe.addr as Deno.NetAddr).port;
  probe.close();
  const h = await createHarness({ caCerts: [testTls.caPem] });
  try {
    const key = await h.key("proj_a");
    const res = await h.req("POST", "/v1/sessions", { key, body: engineBody(`wss://localhost:${port}/v0`) });
    checkErrorBody(res, { status: 503, code: "SVC_PROVIDER_UNAVAILABLE", retryable: true });
  } finally {
    await h.close();
  }
});

Deno.test("engine with an untrusted certificate → 503 SVC_PROVIDER_UNAVAILABLE", async () => {
  const engine = await startFakeEngine(testTls, "ok");
  const h = await createHarness(); // the test CA is not trusted
  try {
    const key = await h.key("proj_a");
    const res = await h.req("POST", "/v1/sessions", { key, body: engineBody(engine.url) });
    checkErrorBody(res, { status: 503, code: "SVC_PROVIDER_UNAVAILABLE", retryable: true });
  } finally {
    await h.close();
    await engine.close();
  }
});
