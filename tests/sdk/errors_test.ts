/**
 * Every way an SDK call fails: the service's error answers (with code, message, request id, doc URL,
 * retry_after and status), network failures, answers that are not what the API promises, aborts, and
 * invalid arguments.
 */
import assert from "node:assert/strict";
import { ApiError, type Client, createClient } from "../../sdk/mod.js";
import { errorFromAnswer, invalidResponse, networkError, parseRetryAfter } from "../../sdk/api_error.js";
import { createHarness, type Harness } from "../../testing/harness.ts";
import { startFakeEngine } from "../../testing/fake_engine.ts";
import { engineBody, testTls } from "../../testing/fixtures.ts";

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
type SessionBody = Parameters<Client["createSession"]>[0];

/** Asserts that `promise` rejects with an ApiError of the service carrying every field. */
async function rejectsWith(
  promise: Promise<unknown>,
  expected: { code: string; status: number; retryAfter?: number },
): Promise<ApiError> {
  const err = await promise.then(
    () => assert.fail(`expected ${expected.code}`),
    (e: unknown) => e,
  );
  assert.ok(err instanceof ApiError, `not an ApiError: ${err}`);
  assert.equal(err.name, "ApiError");
  assert.equal(err.code, expected.code, err.message);
  assert.equal(err.status, expected.status);
  assert.ok(err.message.length > 0);
  assert.match(err.requestId ?? "", UUID);
  assert.equal(err.docUrl, `https://localhost:8787/docs/errors#${expected.code.toLowerCase()}`);
  assert.equal(err.retryAfter, expected.retryAfter ?? null);
  assert.equal(err.retryable, expected.retryAfter !== undefined);
  assert.deepEqual(JSON.parse(JSON.stringify(err)), {
    code: err.code,
    message: err.message,
    status: err.status,
    request_id: err.requestId,
    doc_url: err.docUrl,
    retry_after: err.retryAfter,
  });
  return err;
}

function clientFor(h: Harness, apiKey: string): Client {
  return createClient({ baseUrl: "http://svc.test", apiKey, fetch: h.fetch });
}

Deno.test("sdk errors: authentication and authorization", async () => {
  const h = await createHarness();
  try {
    const full = clientFor(h, await h.key("proj_e"));
    const reader = clientFor(h, await h.key("proj_e", ["sessions:read"]));
    const err = await rejectsWith(
      clientFor(h, "svc_sk_notakey").getSession("session:AAAAAAAAAAAAAAAAAAAAAA"),
      {
        code: "SVC_AUTH_INVALID_KEY",
        status: 401,
      },
    );
    assert.ok(!err.message.includes("svc_sk_notakey"));
    await rejectsWith(reader.createApiKey({ name: "x", scopes: ["sessions:read"] }), {
      code: "SVC_AUTH_MISSING_SCOPE",
      status: 403,
    });
    const writer = clientFor(h, await h.key("proj_e", ["api_keys:write"]));
    await rejectsWith(writer.createApiKey({ name: "x", scopes: ["sessions:write"] }), {
      code: "SVC_AUTH_FORBIDDEN",
      status: 403,
    });
    // a revoked key
    const made = await full.createApiKey({ name: "soon revoked", scopes: ["sessions:read"] });
    await full.revokeApiKey(made.key_id);
    await rejectsWith(clientFor(h, made.api_key).getSession("session:AAAAAAAAAAAAAAAAAAAAAA"), {
      code: "SVC_AUTH_INVALID_KEY",
      status: 401,
    });
  } finally {
    await h.close();
  }
});

Deno.test("sdk errors: not found, invalid requests, conflicts, idempotency reuse", async () => {
  const engine = await startFakeEngine(testTls, "ok");
  const h = await createHarness({ caCerts: [testTls.caPem], env: { SVC_MAX_BODY_BYTES: "2048" } });
  try {
    const client = clientFor(h, await h.key("proj_e"));
    await rejectsWith(client.getSession("session:AAAAAAAAAAAAAAAAAAAAAA"), {
      code: "SVC_SESSION_NOT_FOUND",
      status: 404,
    });
    await rejectsWith(client.getSession("not-a-session-id"), { code: "SVC_SESSION_NOT_FOUND", status: 404 });
    await rejectsWith(client.revokeApiKey("svc_key_AAAAAAAAAAAAAAAAAAAAAA"), {
      code: "SVC_API_KEY_NOT_FOUND",
      status: 404,
    });
    await rejectsWith(client.createApiKey({ name: "", scopes: ["sessions:read"] }), {
      code: "SVC_INVALID_REQUEST",
      status: 400,
    });
    await rejectsWith(client.listApiKeys({ limit: 1000 }), { code: "SVC_INVALID_REQUEST", status: 400 });
    await rejectsWith(
      client.createSession({ provider_type: "vendor2", provider_config: {} } as SessionBody),
      { code: "SVC_PROVIDER_MISCONFIGURED", status: 400 },
    );
    await rejectsWith(
      client.createSession({ ...engineBody(engine.url), webhook_url: "http://plain.example" } as SessionBody),
      { code: "SVC_INVALID_REQUEST", status: 400 },
    );
    await rejectsWith(client.createApiKey({ name: "x".repeat(3000), scopes: ["sessions:read"] }), {
      code: "SVC_PAYLOAD_TOO_LARGE",
      status: 413,
    });

    const body = engineBody(engine.url) as SessionBody;
    const session = await client.createSession(body, { idempotencyKey: "reuse-me" });
    await rejectsWith(
      client.createSession({ ...body, avatar_config: { avatar_id: "kai" } }, {
        idempotencyKey: "reuse-me",
      }),
      { code: "SVC_IDEMPOTENCY_KEY_REUSED", status: 422 },
    );
    await client.endSession(session.session_id, { force: true });
    await rejectsWith(client.endSession(session.session_id), { code: "SVC_SESSION_ENDED", status: 409 });
    await rejectsWith(client.createClientToken(session.session_id), {
      code: "SVC_SESSION_ENDED",
      status: 409,
    });
  } finally {
    await h.close();
    await engine.close();
  }
});

Deno.test("sdk errors: retryable answers carry retryAfter and retryable", async () => {
  const engine = await startFakeEngine(testTls, "reject_401");
  // a vendor engine that cannot be reached: nothing listens on a port that was just free
  const probe = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const closedPort = (probe.addr as Deno.NetAddr).port;
  probe.close();
  const h = await createHarness({
    caCerts: [testTls.caPem],
    env: {
      SVC_RATE_LIMIT_PER_MINUTE: "1",
      SVC_RATE_LIMIT_BURST: "3",
      SVC_VENDOR2_URL: `wss://localhost:${closedPort}/v1/agents/websocket`,
    },
  });
  try {
    const client = clientFor(h, await h.key("proj_e"));
    const busy = clientFor(h, await h.key("proj_e"));
    await rejectsWith(client.createSession(engineBody(engine.url) as SessionBody), {
      code: "SVC_PROVIDER_DOWNSTREAM_FAILED",
      status: 502,
      retryAfter: 5,
    });
    await rejectsWith(
      client.createSession({
        provider_type: "vendor2",
        provider_config: { vendor2: { access_token: "tok", agent_id: "agent" } },
      }),
      { code: "SVC_PROVIDER_UNAVAILABLE", status: 503, retryAfter: 5 },
    );
    // the burst is spent within a few requests (bounded)
    let limited: unknown = null;
    for (let i = 0; i < 10 && limited === null; i++) {
      limited = await busy.listApiKeys().then(() => null, (e) => e);
    }
    assert.ok(limited instanceof ApiError);
    const err = await rejectsWith(Promise.reject(limited), {
      code: "SVC_RATE_LIMIT_EXCEEDED",
      status: 429,
      retryAfter: (limited as ApiError).retryAfter ?? -1,
    });
    assert.ok(err.retryable && err.retryAfter! >= 1 && err.retryAfter! <= 60);
  } finally {
    await h.close();
    await engine.close();
  }
});

Deno.test("sdk errors: a service without a token secret answers 503 SVC_TOKEN_SECRET_NOT_CONFIGURED", async () => {
  const h = await createHarness({ tokenSecret: null });
  try {
    const client = clientFor(h, await h.key("proj_e"));
    await rejectsWith(
      client.createSession({
        provider_type: "external_engine",
        provider_config: { external_engine: { url: "wss://localhost:1/v0", auth_headers: {} } },
      }),
      { code: "SVC_TOKEN_SECRET_NOT_CONFIGURED", status: 503 },
    );
  } finally {
    await h.close();
  }
});

/** A client whose fetch answers with `respond`. */
function scripted(respond: (req: Request) => Response | Promise<Response>): Client {
  return createClient({
    baseUrl: "http://svc.test",
    apiKey: "svc_sk_test",
    fetch: async (r) => await respond(r),
  });
}

Deno.test("sdk errors: no answer → SDK_NETWORK_ERROR with status 0 and the cause", async () => {
  const refused = new TypeError("error sending request: Connection refused");
  const err = await scripted(() => Promise.reject(refused)).getSession("session:x").catch((e) => e);
  assert.ok(err instanceof ApiError);
  assert.equal(err.code, "SDK_NETWORK_ERROR");
  assert.equal(err.status, 0);
  assert.equal(err.requestId, null);
  assert.equal(err.docUrl, null);
  assert.equal(err.retryAfter, null);
  assert.equal(err.retryable, false);
  assert.equal(err.cause, refused);
  assert.match(err.message, /could not be reached: error sending request: Connection refused/);
  // Node's fetch hides the reason in its cause: the message names it
  const nodeStyle = new TypeError("fetch failed", { cause: new Error("connect ECONNREFUSED 127.0.0.1:9") });
  assert.match(networkError(nodeStyle).message, /fetch failed: connect ECONNREFUSED/);
});

Deno.test("sdk errors: answers that are not the API's → SDK_INVALID_RESPONSE with the status", async () => {
  const html = await scripted(() =>
    new Response("<html>Bad gateway</html>", {
      status: 502,
      headers: { "content-type": "text/html", "x-request-id": "edge-1", "retry-after": "7" },
    })
  ).getSession("session:x").catch((e) => e);
  assert.ok(html instanceof ApiError);
  assert.deepEqual(
    [html.code, html.status, html.requestId, html.retryAfter, html.retryable],
    ["SDK_INVALID_RESPONSE", 502, "edge-1", 7, false],
  );
  const wrongShape = await scripted(() => Response.json({ error: "nope" }, { status: 500 })).getSession("s:x")
    .catch((e) => e);
  assert.equal(wrongShape.code, "SDK_INVALID_RESPONSE");
  assert.equal(wrongShape.status, 500);
  for (const body of ["not json", "null", "[1,2]", "42", ""]) {
    const err = await scripted(() => new Response(body, { status: 200 })).getSession("session:x").catch((e) =>
      e
    );
    assert.ok(err instanceof ApiError, body);
    assert.equal(err.code, "SDK_INVALID_RESPONSE", body);
    assert.equal(err.status, 200);
  }
  // a body that breaks while being read
  const broken = new ReadableStream({
    start(c) {
      c.error(new Error("connection reset"));
    },
  });
  const torn = await scripted(() => new Response(broken, { status: 200 })).getSession("session:x").catch((
    e,
  ) => e);
  assert.equal(torn.code, "SDK_INVALID_RESPONSE");
  assert.equal(invalidResponse(new Response(null, { status: 204 })).status, 204);
});

Deno.test("sdk errors: ApiError.fromResponse reads a relayed error answer", async () => {
  const body = {
    code: "SVC_RATE_LIMIT_EXCEEDED",
    message: "Too many requests for this API key.",
    request_id: "0d8f7a52-9c1e-4a8e-9a53-1d1bb3a0c3f2",
    doc_url: "https://svc.example/docs/errors#svc_rate_limit_exceeded",
    retry_after: 3,
  };
  const err = await ApiError.fromResponse(Response.json(body, { status: 429 }));
  assert.deepEqual(err.toJSON(), { ...body, status: 429 });
  assert.equal(err.retryable, true);
  const unknownCode = errorFromAnswer(new Response(null, { status: 418 }), {
    code: "SVC_NEWER",
    message: "m",
  });
  assert.equal(unknownCode.code, "SVC_NEWER", "codes of a newer service pass through");
  assert.equal(unknownCode.requestId, null);
  const text = await ApiError.fromResponse(
    new Response("oops", { status: 503, headers: { "x-request-id": "r" } }),
  );
  assert.deepEqual([text.code, text.status, text.requestId], ["SDK_INVALID_RESPONSE", 503, "r"]);
});

Deno.test("sdk errors: Retry-After headers in seconds or as a date", () => {
  const now = Date.parse("2026-01-01T00:00:00Z");
  assert.equal(parseRetryAfter("12", now), 12);
  assert.equal(parseRetryAfter("Thu, 01 Jan 2026 00:00:30 GMT", now), 30);
  assert.equal(parseRetryAfter("Wed, 31 Dec 2025 00:00:00 GMT", now), 0);
  assert.equal(parseRetryAfter("soon", now), null);
  assert.equal(parseRetryAfter(null, now), null);
});

Deno.test("sdk errors: an aborted call rejects with the signal's reason", async () => {
  const ac = new AbortController();
  ac.abort(new Error("caller gave up"));
  let calls = 0;
  const client = scripted(() => {
    calls++;
    return Response.json({});
  });
  await assert.rejects(client.getSession("session:x", { signal: ac.signal }), /caller gave up/);
  assert.equal(calls, 0);
  // aborted while the request is in flight
  const late = new AbortController();
  const pending = createClient({
    baseUrl: "http://svc.test",
    apiKey: "svc_sk_test",
    fetch: (req) =>
      new Promise((_, reject) => req.signal.addEventListener("abort", () => reject(req.signal.reason))),
  }).getSession("session:x", { signal: late.signal });
  late.abort(new Error("stop now"));
  await assert.rejects(pending, /stop now/);
});

Deno.test("sdk errors: invalid arguments reject with a TypeError before anything is sent, never echoing the key", async () => {
  const secret = "svc_sk_secret\nvalue";
  for (
    const options of [
      { baseUrl: "not a url", apiKey: "k" },
      { baseUrl: "ftp://svc.test", apiKey: "k" },
      { baseUrl: "http://user:pw@svc.test", apiKey: "k" },
      { baseUrl: "http://svc.test", apiKey: "" },
      { baseUrl: "http://svc.test", apiKey: secret },
      { baseUrl: "http://svc.test", apiKey: "k", fetch: "nope" },
    ]
  ) {
    assert.throws(
      () => createClient(options as Parameters<typeof createClient>[0]),
      (e: Error) => e instanceof TypeError && !e.message.includes("secret"),
    );
  }
  let calls = 0;
  const client = scripted(() => {
    calls++;
    return Response.json({});
  });
  await assert.rejects(client.getSession(""), TypeError);
  await assert.rejects(client.endSession(undefined as unknown as string), TypeError);
  await assert.rejects(client.revokeApiKey(""), TypeError);
  await assert.rejects(client.createClientToken(""), TypeError);
  await assert.rejects(
    client.createSession({ provider_type: "vendor2", provider_config: {} }, { idempotencyKey: "has space" }),
    TypeError,
  );
  await assert.rejects(
    client.createSession({ provider_type: "vendor2", provider_config: {} }, { idempotencyKey: "é" }),
    TypeError,
  );
  assert.throws(
    () => createClient({ baseUrl: "http://svc.test", apiKey: "k", retry: { maxAttempts: 0 } }),
    TypeError,
  );
  assert.equal(calls, 0);
});
