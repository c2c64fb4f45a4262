import assert from "node:assert/strict";
import { createHarness } from "../../testing/harness.ts";
import { startFakeEngine } from "../../testing/fake_engine.ts";
import { checkErrorBody, engineBody, testTls } from "../../testing/fixtures.ts";

const WSS = "wss://localhost:1/v0";
const ext = (cfg: Record<string, unknown>) => ({
  provider_type: "external_engine",
  provider_config: { external_engine: { url: WSS, auth_headers: { Authorization: "Bearer t" }, ...cfg } },
});

const PROVIDER_INVALID: [string, unknown][] = [
  ["unknown provider_type", { provider_type: "vendor9", provider_config: { vendor9: {} } }],
  ["missing provider_type", { provider_config: { vendor2: { access_token: "a", agent_id: "b" } } }],
  ["missing provider_config", { provider_type: "vendor2" }],
  ["empty provider_config", { provider_type: "vendor2", provider_config: {} }],
  ["mismatched key", {
    provider_type: "vendor2",
    provider_config: { vendor1_realtime: { client_secret: "s" } },
  }],
  ["two keys", {
    provider_type: "vendor2",
    provider_config: {
      vendor2: { access_token: "a", agent_id: "b" },
      vendor1_realtime: { client_secret: "s" },
    },
  }],
  ["unknown key", {
    provider_type: "vendor2",
    provider_config: { vendor2: { access_token: "a", agent_id: "b" }, x: {} },
  }],
  ["vendor1 empty secret", {
    provider_type: "vendor1_realtime",
    provider_config: { vendor1_realtime: { client_secret: "" } },
  }],
  ["vendor1 missing secret", {
    provider_type: "vendor1_realtime",
    provider_config: { vendor1_realtime: {} },
  }],
  ["vendor1 non-string", {
    provider_type: "vendor1_realtime",
    provider_config: { vendor1_realtime: { client_secret: 5 } },
  }],
  ["vendor1 extra field", {
    provider_type: "vendor1_realtime",
    provider_config: { vendor1_realtime: { client_secret: "s", model: "m" } },
  }],
  ["vendor2 missing agent_id", {
    provider_type: "vendor2",
    provider_config: { vendor2: { access_token: "a" } },
  }],
  ["vendor2 empty token", {
    provider_type: "vendor2",
    provider_config: { vendor2: { access_token: "", agent_id: "b" } },
  }],
  ["engine http url", ext({ url: "https://localhost/v0" })],
  ["engine ws url", ext({ url: "ws://localhost/v0" })],
  ["engine not a url", ext({ url: "wss//nope" })],
  ["engine missing auth_headers", {
    provider_type: "external_engine",
    provider_config: { external_engine: { url: WSS } },
  }],
  ["engine reserved header", ext({ auth_headers: { Host: "evil" } })],
  ["engine websocket header", ext({ auth_headers: { "Sec-WebSocket-Protocol": "x" } })],
  ["engine bad header name", ext({ auth_headers: { "bad name": "x" } })],
  ["engine header value newline", ext({ auth_headers: { "X-A": "a\r\nb" } })],
  ["engine non-string header", ext({ auth_headers: { "X-A": 1 } })],
  ["engine rate too low", ext({ user_sample_rate: 7999 })],
  ["engine rate too high", ext({ user_sample_rate: 48001 })],
  ["engine rate not int", ext({ user_sample_rate: 16000.5 })],
  ["engine rate string", ext({ user_sample_rate: "24000" })],
  ["engine extra field", ext({ model: "x" })],
  ["vendor3 empty agent", { provider_type: "vendor3", provider_config: { vendor3: { agent_id: "" } } }],
  ["vendor3 empty api_key", {
    provider_type: "vendor3",
    provider_config: { vendor3: { agent_id: "a", api_key: "" } },
  }],
  ["vendor3 foreign host", {
    provider_type: "vendor3",
    provider_config: {
      vendor3: { agent_id: "a", signed_url: "wss://evil.example/v1/convai/conversation?t=1" },
    },
  }],
  ["vendor3 wrong path", {
    provider_type: "vendor3",
    provider_config: { vendor3: { agent_id: "a", signed_url: "wss://api.elevenlabs.io/v1/other?t=1" } },
  }],
  ["vendor3 https", {
    provider_type: "vendor3",
    provider_config: {
      vendor3: { agent_id: "a", signed_url: "https://api.elevenlabs.io/v1/convai/conversation" },
    },
  }],
  ["provider_connection_id top level", { ...ext({}), provider_connection_id: "pc_1" }],
  ["provider_connection_id in provider_config", {
    provider_type: "vendor2",
    provider_config: { vendor2: { access_token: "a", agent_id: "b", provider_connection_id: "pc_1" } },
  }],
  ["provider_connection_id as header", ext({ auth_headers: { provider_connection_id: "pc_1" } })],
  ["provider_connection_id alone", { provider_connection_id: "pc_1" }],
];

const BODY_INVALID: [string, unknown][] = [
  ["avatar extra field", { ...ext({}), avatar_config: { avatar_id: "ada", pose: "x" } }],
  ["avatar empty id", { ...ext({}), avatar_config: { avatar_id: "" } }],
  ["bg too long", { ...ext({}), avatar_config: { bg_id: "b".repeat(65) } }],
  ["transport unknown", { ...ext({}), transport: "udp" }],
  ["webhook http", { ...ext({}), webhook_url: "http://example.com/hook" }],
  ["webhook not a url", { ...ext({}), webhook_url: "example.com" }],
  ["unknown top-level field", { ...ext({}), metadata: {} }],
];

Deno.test("create session: invalid provider settings answer 400 SVC_PROVIDER_MISCONFIGURED and write nothing", async () => {
  const h = await createHarness();
  try {
    const key = await h.key("proj_a");
    for (const [label, body] of PROVIDER_INVALID) {
      const res = await h.req("POST", "/v1/sessions", { key, body });
      try {
        checkErrorBody(res, { status: 400, code: "SVC_PROVIDER_MISCONFIGURED" });
      } catch (e) {
        throw new Error(`${label}: ${(e as Error).message}`);
      }
    }
    const pcid = await h.req("POST", "/v1/sessions", {
      key,
      body: { ...ext({}), provider_connection_id: "pc" },
    });
    assert.match(pcid.body.message, /provider_connection_id/);
    for await (const e of h.kv.list({ prefix: ["project", "proj_a", "session"] })) {
      throw new Error(`a session was written: ${JSON.stringify(e.key)}`);
    }
  } finally {
    await h.close();
  }
});

Deno.test("create session: other invalid fields answer 400 SVC_INVALID_REQUEST", async () => {
  const h = await createHarness();
  try {
    const key = await h.key("proj_a");
    for (const [label, body] of BODY_INVALID) {
      const res = await h.req("POST", "/v1/sessions", { key, body });
      try {
        checkErrorBody(res, { status: 400, code: "SVC_INVALID_REQUEST" });
      } catch (e) {
        throw new Error(`${label}: ${(e as Error).message}`);
      }
    }
  } finally {
    await h.close();
  }
});

Deno.test("create session: malformed JSON, wrong content type, oversized and empty bodies get the error body", async () => {
  const h = await createHarness({ env: { SVC_MAX_BODY_BYTES: "2048" } });
  try {
    const key = await h.key("proj_a");
    checkErrorBody(await h.req("POST", "/v1/sessions", { key, body: "{not json" }), {
      status: 400,
      code: "SVC_INVALID_REQUEST",
    });
    checkErrorBody(
      await h.req("POST", "/v1/sessions", { key, body: "", headers: { "content-type": "application/json" } }),
      {
        status: 400,
        code: "SVC_INVALID_REQUEST",
      },
    );
    checkErrorBody(
      await h.req("POST", "/v1/sessions", {
        key,
        body: JSON.stringify(ext({})),
        headers: { "content-type": "text/plain" },
      }),
      { status: 415, code: "SVC_UNSUPPORTED_MEDIA_TYPE" },
    );
    checkErrorBody(
      await h.req("POST", "/v1/sessions", {
        key,
        body: ext({ auth_headers: { "X-Pad": "p".repeat(4000) } }),
      }),
      { status: 413, code: "SVC_PAYLOAD_TOO_LARGE" },
    );
    checkErrorBody(await h.req("POST", "/v1/sessions", { key }), {
      status: 400,
      code: "SVC_INVALID_REQUEST",
    });
  } finally {
    await h.close();
  }
});

Deno.test("create session: vendor engines answer retryable 503 SVC_PROVIDER_UNAVAILABLE and free their slot", async () => {
  const h = await createHarness({ env: { SVC_MAX_CONCURRENT_SESSIONS: "1" } });
  try {
    const key = await h.key("proj_a");
    const bodies = [
      { provider_type: "vendor1_realtime", provider_config: { vendor1_realtime: { client_secret: "ek_1" } } },
      {
        provider_type: "vendor2",
        provider_config: { vendor2: { access_token: "tok", agent_id: "agent_1" } },
      },
      { provider_type: "vendor3", provider_config: { vendor3: { agent_id: "agent_1" } } },
      {
        provider_type: "vendor3",
        provider_config: {
          vendor3: {
            agent_id: "a",
            api_key: "k",
            signed_url: "wss://api.elevenlabs.io/v1/convai/conversation?token=x",
          },
        },
      },
    ];
    for (const body of bodies) {
      checkErrorBody(await h.req("POST", "/v1/sessions", { key, body }), {
        status: 503,
        code: "SVC_PROVIDER_UNAVAILABLE",
        retryable: true,
      });
    }
    const failed: string[] = [];
    for await (const e of h.kv.list<{ status: string }>({ prefix: ["project", "proj_a", "session"] })) {
      failed.push(e.value.status);
    }
    assert.deepEqual(failed, ["failed", "failed", "failed", "failed"]);
    assert.equal((await h.kv.get(["project", "proj_a", "live_sessions"])).value, 0);
  } finally {
    await h.close();
  }
});

Deno.test("create session: webrtc_sfu without an SFU fails closed with SVC_SFU_NOT_CONFIGURED", async () => {
  const engine = await startFakeEngine(testTls, "ok");
  const h = await createHarness({ caCerts: [testTls.caPem] });
  try {
    const key = await h.key("proj_a");
    const res = await h.req("POST", "/v1/sessions", {
      key,
      body: engineBody(engine.url, { transport: "webrtc_sfu" }),
    });
    checkErrorBody(res, { status: 503, code: "SVC_SFU_NOT_CONFIGURED" });
    assert.equal(engine.upgrades.length, 0, "no fallback: the engine was never contacted");
  } finally {
    await h.close();
    await engine.close();
  }
});

Deno.test("create session: without a token signing secret, 503 SVC_TOKEN_SECRET_NOT_CONFIGURED", async () => {
  const engine = await startFakeEngine(testTls, "ok");
  const h = await createHarness({ caCerts: [testTls.caPem], tokenSecret: null });
  try {
    const key = await h.key("proj_a");
    checkErrorBody(await h.req("POST", "/v1/sessions", { key, body: engineBody(engine.url) }), {
      status: 503,
      code: "SVC_TOKEN_SECRET_NOT_CONFIGURED",
    });
    assert.equal(engine.upgrades.length, 0);
  } finally {
    await h.close();
    await engine.close();
  }
});

Deno.test("create session: 200 only when active, with tokens and fMP4 stream metadata", async () => {
  const engine = await startFakeEngine(testTls, "ok");
  const h = await createHarness({ caCerts: [testTls.caPem] });
  try {
    const key = await h.key("proj_a");
    const before = h.clock.now();
    const body = engineBody(engine.url, { avatar_config: { avatar_id: "ada" } }, "engine-secret-1");
    (body.provider_config.external_engine as Record<string, unknown>).user_sample_rate = 16000;
    const res = await h.req("POST", "/v1/sessions", { key, body });
    assert.equal(res.status, 200, res.text);
    assert.deepEqual(Object.keys(res.body).sort(), [
      "client_token",
      "expires_at",
      "session_id",
      "status",
      "stream_metadata",
      "transport",
    ]);
    assert.match(res.body.session_id, /^session:[A-Za-z0-9_-]+$/);
    assert.equal(res.body.status, "active");
    assert.equal(res.body.transport, "websocket_fmp4");
    assert.deepEqual(res.body.stream_metadata.ice_servers, []);
    assert.equal(res.body.stream_metadata.sfu_endpoint, null);
    assert.equal(res.body.stream_metadata.media_url, null, "this harness runs no media plane");
    assert.equal(
      res.body.stream_metadata.transport,
      "websocket_fmp4",
      "a player handed stream_metadata alone",
    );
    assert.ok(res.body.stream_metadata.session_token.length > 0);
    assert.notEqual(res.body.stream_metadata.session_token, res.body.client_token);
    assert.ok(res.body.expires_at > before + 299_000 && res.body.expires_at <= before + 301_000);
    // the engine got the credentials on the upgrade and the V0 session.start
    assert.equal(engine.upgrades[0].get("authorization"), "Bearer engine-secret-1");
    assert.equal(engine.upgrades[0].get("sec-websocket-protocol"), "avatar-engine.v0");
    // deno-lint-ignore no-explicit-any
    const start = engine.messages.find((m) => m.type === "session.start") as Record<string, any>;
    assert.equal(start.session_id, res.body.session_id);
    assert.equal(start.protocol, "v0");
    assert.deepEqual(start.audio.input, { encoding: "pcm_s16le", sample_rate: 16000, channels: 1 });
    // omitted ids take the catalog's defaults
    assert.deepEqual(start.metadata, { avatar_id: "ada", bg_id: "studio" });

    const got = await h.req("GET", `/v1/sessions/${encodeURIComponent(res.body.session_id)}`, { key });
    assert.equal(got.status, 200);
    assert.equal(got.body.status, "active");
    assert.equal(got.body.provider_type, "external_engine");
    assert.equal(got.body.transport, "websocket_fmp4");
    assert.ok(got.body.started_at >= got.body.created_at);
    assert.equal(got.body.ended_at, undefined);
    assert.ok(!("client_token" in got.body));
    assert.ok(!got.text.includes(res.body.client_token));
    // explicit websocket_fmp4 is kept
    const explicit = await h.req("POST", "/v1/sessions", {
      key,
      body: engineBody(engine.url, { transport: "websocket_fmp4" }),
    });
    assert.equal(explicit.body.transport, "websocket_fmp4");
  } finally {
    await h.close();
    await engine.close();
  }
});

Deno.test("get session: unknown, malformed and other projects' ids answer 404", async () => {
  const engine = await startFakeEngine(testTls, "ok");
  const h = await createHarness({ caCerts: [testTls.caPem] });
  try {
    const a = await h.key("proj_a");
    const b = await h.key("proj_b");
    const res = await h.req("POST", "/v1/sessions", { key: a, body: engineBody(engine.url) });
    const sid = res.body.session_id;
    for (
      const path of [`/v1/sessions/${sid}`, `/v1/sessions/${sid}/end`, `/v1/sessions/${sid}/client-token`]
    ) {
      const method = path.endsWith(sid) ? "GET" : "POST";
      const foreign = await h.req(method, path, { key: b });
      const missing = await h.req(method, path.replace(sid, "session:doesnotexist"), { key: a });
      const malformed = await h.req(method, path.replace(sid, "sess_bad!"), { key: a });
      for (const r of [foreign, missing, malformed]) {
        checkErrorBody(r, { status: 404, code: "SVC_SESSION_NOT_FOUND" });
      }
      // identical shape: nothing tells a foreign session from a missing one
      assert.equal(foreign.body.message, missing.body.message);
    }
    // the foreign attempts changed nothing
    assert.equal((await h.req("GET", `/v1/sessions/${sid}`, { key: a })).body.status, "active");
  } finally {
    await h.close();
    await engine.close();
  }
});

Deno.test("unknown routes answer 404 SVC_ROUTE_NOT_FOUND, a method a route does not serve 405, with the error body", async () => {
  const h = await createHarness();
  try {
    const key = await h.key("proj_a");
    checkErrorBody(await h.req("GET", "/v1/nothing", { key }), { status: 404, code: "SVC_ROUTE_NOT_FOUND" });
    const put = await h.req("PUT", "/v1/sessions", { key });
    checkErrorBody(put, { status: 405, code: "SVC_METHOD_NOT_ALLOWED" });
    assert.equal(put.headers.get("allow"), "GET, HEAD, POST");
    checkErrorBody(await h.req("GET", "/nothing"), { status: 404, code: "SVC_ROUTE_NOT_FOUND" });
  } finally {
    await h.close();
  }
});
