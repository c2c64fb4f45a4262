/**
 * The SDK client in-process: every method against the app through an injected fetch, with typed results
 * and the requests it sends (auth header, Idempotency-Key, path encoding, query).
 */
import assert from "node:assert/strict";
import { type Client, createClient, type CreatedSession, type Session } from "../../sdk/mod.js";
import { createHarness, type Harness } from "../../testing/harness.ts";
import { type FakeEngine, startFakeEngine } from "../../testing/fake_engine.ts";
import { engineBody, testTls } from "../../testing/fixtures.ts";

const UUID_V4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

/** A harness, an engine, a client and the requests the client sent. */
async function setup(): Promise<{
  h: Harness;
  engine: FakeEngine;
  client: Client;
  key: string;
  sent: Request[];
  close(): Promise<void>;
}> {
  const engine = await startFakeEngine(testTls, "ok");
  const h = await createHarness({ caCerts: [testTls.caPem] });
  const key = await h.key("proj_sdk");
  const sent: Request[] = [];
  const client = createClient({
    baseUrl: "http://svc.test/",
    apiKey: key,
    fetch: (req) => {
      sent.push(req.clone());
      return h.fetch(req);
    },
  });
  return {
    h,
    engine,
    client,
    key,
    sent,
    async close() {
      await h.close();
      await engine.close();
    },
  };
}

Deno.test("sdk client: the session methods, with typed results and the requests they send", async () => {
  const t = await setup();
  try {
    const created: CreatedSession = await t.client.createSession(
      engineBody(t.engine.url) as Parameters<Client["createSession"]>[0],
    );
    assert.equal(created.status, "active");
    assert.match(created.session_id, /^session:[A-Za-z0-9]{22}$/);
    assert.equal(created.transport, "websocket_fmp4");
    assert.ok(created.client_token.length > 20 && created.stream_metadata.session_token.length > 20);
    const createReq = t.sent.at(-1)!;
    assert.equal(createReq.method, "POST");
    assert.equal(new URL(createReq.url).pathname, "/v1/sessions");
    assert.equal(createReq.headers.get("authorization"), `Bearer ${t.key}`);
    assert.equal(createReq.headers.get("content-type"), "application/json");
    assert.match(createReq.headers.get("idempotency-key")!, UUID_V4, "a generated UUID v4");

    const got: Session = await t.client.getSession(created.session_id);
    assert.deepEqual(
      { id: got.session_id, status: got.status, provider: got.provider_type },
      { id: created.session_id, status: "active", provider: "external_engine" },
    );
    assert.ok(!("client_token" in got));
    const getReq = t.sent.at(-1)!;
    assert.equal(getReq.method, "GET");
    assert.equal(new URL(getReq.url).pathname, `/v1/sessions/${encodeURIComponent(created.session_id)}`);

    const token = await t.client.createClientToken(created.session_id);
    assert.notEqual(token.client_token, created.client_token);
    assert.equal(token.transport, "websocket_fmp4");
    assert.ok(token.expires_at > Date.now() - 60_000);

    const ended = await t.client.endSession(created.session_id);
    assert.equal(ended.status, "ended");
    assert.equal(ended.session_id, created.session_id);
    assert.equal(new URL(t.sent.at(-1)!.url).search, "", "no force query unless asked");

    // force=true reaches the service
    const second = await t.client.createSession(
      engineBody(t.engine.url) as Parameters<Client["createSession"]>[0],
    );
    const forced = await t.client.endSession(second.session_id, { force: true });
    assert.equal(forced.status, "ended");
    assert.equal(new URL(t.sent.at(-1)!.url).searchParams.get("force"), "true");
  } finally {
    await t.close();
  }
});

Deno.test("sdk client: createSession sends the given Idempotency-Key, and a repeat replays the session", async () => {
  const t = await setup();
  try {
    const body = engineBody(t.engine.url) as Parameters<Client["createSession"]>[0];
    const first = await t.client.createSession(body, { idempotencyKey: "order-42" });
    const again = await t.client.createSession(body, { idempotencyKey: "order-42" });
    assert.equal(again.session_id, first.session_id);
    assert.deepEqual(t.sent.map((r) => r.headers.get("idempotency-key")), ["order-42", "order-42"]);
    // without a key, every call gets its own
    const a = await t.client.createSession(body);
    const b = await t.client.createSession(body);
    assert.notEqual(a.session_id, b.session_id);
    assert.notEqual(t.sent[2].headers.get("idempotency-key"), t.sent[3].headers.get("idempotency-key"));
  } finally {
    await t.close();
  }
});

Deno.test("sdk client: the webhook signing secret: read (created on first use), rotate", async () => {
  const t = await setup();
  try {
    const first = await t.client.getWebhookSecret();
    assert.match(first.secret, /^whsec_/);
    assert.equal(first.previous_secret, null);
    assert.deepEqual([t.sent.at(-1)!.method, new URL(t.sent.at(-1)!.url).pathname], [
      "GET",
      "/v1/webhooks/secret",
    ]);
    assert.equal((await t.client.getWebhookSecret()).secret, first.secret, "stable across reads");
    const rotated = await t.client.rotateWebhookSecret();
    assert.deepEqual(
      [t.sent.at(-1)!.method, new URL(t.sent.at(-1)!.url).pathname],
      ["POST", "/v1/webhooks/secret/rotate"],
    );
    assert.notEqual(rotated.secret, first.secret);
    assert.equal(rotated.previous_secret, first.secret);
    assert.ok(rotated.previous_valid_until! > Date.now());
  } finally {
    await t.close();
  }
});

Deno.test("sdk client: the API key methods: create, list with paging, revoke (idempotent)", async () => {
  const t = await setup();
  try {
    const created = await t.client.createApiKey({ name: "dashboard", scopes: ["sessions:read"] });
    assert.match(created.api_key, /^svc_sk_[A-Za-z0-9]{38}$/);
    assert.equal(created.name, "dashboard");
    assert.deepEqual(created.scopes, ["sessions:read"]);
    // the new key works, with its scope only
    const limited = createClient({ baseUrl: "http://svc.test", apiKey: created.api_key, fetch: t.h.fetch });
    await assert.rejects(limited.listApiKeys(), { code: "SVC_AUTH_MISSING_SCOPE", status: 403 });

    const all = await t.client.listApiKeys();
    assert.equal(all.data.length, 2);
    assert.equal(all.has_more, false);
    assert.ok(!JSON.stringify(all).includes(created.api_key), "never the plaintext");
    const page1 = await t.client.listApiKeys({ limit: 1 });
    assert.equal(page1.data.length, 1);
    assert.equal(page1.has_more, true);
    assert.equal(new URL(t.sent.at(-1)!.url).searchParams.get("limit"), "1");
    const page2 = await t.client.listApiKeys({ limit: 1, starting_after: page1.data[0].key_id });
    assert.equal(page2.data.length, 1);
    assert.notEqual(page2.data[0].key_id, page1.data[0].key_id);

    const revoked = await t.client.revokeApiKey(created.key_id);
    assert.deepEqual({ id: revoked.key_id, status: revoked.status }, {
      id: created.key_id,
      status: "revoked",
    });
    const again = await t.client.revokeApiKey(created.key_id);
    assert.equal(again.revoked_at, revoked.revoked_at, "revoking twice answers the original revoked_at");
    assert.equal(t.sent.at(-1)!.method, "DELETE");
    await assert.rejects(limited.getSession("session:AAAAAAAAAAAAAAAAAAAAAA"), {
      code: "SVC_AUTH_INVALID_KEY",
    });
  } finally {
    await t.close();
  }
});

Deno.test("sdk client: raw is the authenticated openapi-fetch client with {data, error, response}", async () => {
  const t = await setup();
  try {
    const ok = await t.client.raw.GET("/v1/api-keys", { params: { query: { limit: 1 } } });
    assert.equal(ok.response.status, 200);
    assert.equal(ok.data?.data.length, 1);
    const missing = await t.client.raw.GET("/v1/sessions/{session_id}", {
      params: { path: { session_id: "session:AAAAAAAAAAAAAAAAAAAAAA" } },
    });
    assert.equal(missing.response.status, 404);
    assert.equal(missing.error?.code, "SVC_SESSION_NOT_FOUND");
  } finally {
    await t.close();
  }
});

Deno.test("sdk client: types reject what the API rejects", () => {
  const client = createClient({
    baseUrl: "http://svc.test",
    apiKey: "svc_sk_x",
    fetch: () => Promise.reject(),
  });
  // These are compile-time checks: each line must fail type-checking (deno test type-checks this file).
  const unused = () => {
    // @ts-expect-error provider_connection_id is not part of the request
    client.createSession({ provider_type: "vendor2", provider_config: {}, provider_connection_id: "x" });
    // @ts-expect-error unknown provider type
    client.createSession({ provider_type: "vendor9", provider_config: {} });
    // @ts-expect-error unknown scope
    client.createApiKey({ name: "x", scopes: ["root"] });
    // @ts-expect-error force is a boolean
    client.endSession("session:x", { force: "yes" });
  };
  assert.equal(typeof unused, "function");
});
