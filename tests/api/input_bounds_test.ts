/**
 * Bounded input everywhere: body size and body deadline on every route (the demo's backend included), the
 * demo's refusals, malformed WebSocket handshakes, inherited names under /docs/assets, and ids too long for
 * storage: each answers its 4xx with the flat error body, never a 500 or a retryable 503.
 */
import assert from "node:assert/strict";
import { DEMO_PROJECT_ID } from "../../src/api/demo_project.ts";
import { checkErrorBody } from "../../testing/fixtures.ts";
import { createHarness } from "../../testing/harness.ts";
import { withMedia } from "../../testing/media.ts";
import { startTestService, type TestService } from "../../testing/service.ts";

/** A real service (reference engine, media plane, demo page) on loopback. */
async function withDemo(
  fn: (s: TestService, base: string) => Promise<void>,
  env: Record<string, string> = {},
): Promise<void> {
  const s = await startTestService(env);
  try {
    await fn(s, s.url);
  } finally {
    await s.close();
  }
}

async function asJson(res: Response) {
  const text = await res.text();
  return { status: res.status, headers: res.headers, body: JSON.parse(text), text };
}

/** Sessions of a project, read from the service's KV file. */
async function sessionsOf(s: TestService, projectId: string): Promise<number> {
  const kv = await Deno.openKv(s.kvPath);
  try {
    let n = 0;
    for await (const _ of kv.list({ prefix: ["project", projectId, "session"] })) n++;
    return n;
  } finally {
    kv.close();
  }
}

/** A request body of `total` bytes sent in 1 MiB chunks; `pulled()` is how much the server asked for. */
function hugeBody(total: number) {
  const chunk = new Uint8Array(1 << 20).fill(0x20);
  let pulled = 0;
  const stream = new ReadableStream<Uint8Array>({
    pull(controller) {
      if (pulled >= total) return controller.close();
      pulled += chunk.byteLength;
      controller.enqueue(chunk);
    },
  }, { highWaterMark: 0 });
  return { stream, pulled: () => pulled };
}

Deno.test("body limit: the demo backend refuses a 256 MiB chunked body with 413 after reading a bounded part, and starts nothing", async () => {
  await withDemo(async (h, base) => {
    const body = hugeBody(256 << 20);
    const res = await fetch(`${base}/demo/api/sessions`, {
      method: "POST",
      headers: { "x-demo": "1", "content-type": "application/json" },
      body: body.stream,
    });
    checkErrorBody(await asJson(res), { status: 413, code: "SVC_PAYLOAD_TOO_LARGE" });
    // What the client had to hand over is the limit plus socket buffers, far from the 256 MiB it offered.
    assert.ok(body.pulled() < 64 << 20, `the server read ${body.pulled()} bytes`);
    await body.stream.cancel().catch(() => {});
    assert.equal(await sessionsOf(h, DEMO_PROJECT_ID), 0, "no session was started");

    // A declared Content-Length over the limit is refused before anything is read, on any route.
    for (const path of ["/demo/api/sessions", "/v1/api-keys", "/v1/sessions"]) {
      const r = await fetch(`${base}${path}`, {
        method: "POST",
        headers: { "x-demo": "1", "content-type": "application/json" },
        body: "x".repeat(70_000),
      });
      checkErrorBody(await asJson(r), { status: 413, code: "SVC_PAYLOAD_TOO_LARGE" });
    }
  });
});

Deno.test("body deadline: a body that stops arriving answers 408 SVC_REQUEST_TIMEOUT on /v1 and the demo routes", async () => {
  await withDemo(async (h, base) => {
    const key = await h.key("proj_a");
    for (
      const [path, headers] of [
        ["/v1/api-keys", { authorization: `Bearer ${key}` }],
        ["/demo/api/sessions", { "x-demo": "1" }],
      ] as const
    ) {
      let controller!: ReadableStreamDefaultController<Uint8Array>;
      const stream = new ReadableStream<Uint8Array>({
        start(c) {
          controller = c;
          c.enqueue(new TextEncoder().encode('{"name":'));
        },
      });
      const deadline = new AbortController();
      const timer = setTimeout(() => deadline.abort(), 25_000);
      try {
        const res = await fetch(`${base}${path}`, {
          method: "POST",
          headers: { ...headers, "content-type": "application/json" },
          body: stream,
          signal: deadline.signal,
        });
        const answer = await asJson(res);
        checkErrorBody(answer, { status: 408, code: "SVC_REQUEST_TIMEOUT" });
      } finally {
        clearTimeout(timer);
        try {
          controller.close();
        } catch { /* already closed */ }
      }
    }
    assert.equal(await sessionsOf(h, DEMO_PROJECT_ID), 0);
  }, { SVC_BODY_TIMEOUT_S: "1" });
});

Deno.test("body limit: a body the route never reads is let go (no request resource outlives the request)", async () => {
  const h = await createHarness();
  try {
    const base = h.serve();
    const key = await h.key("proj_a");
    for (const path of ["/v1/sessions/session:nope/end", "/v1/webhooks/secret/rotate", "/healthz"]) {
      const res = await fetch(`${base}${path}`, {
        method: "POST",
        headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
        body: JSON.stringify({ ignored: "x".repeat(1000) }),
      });
      await res.body?.cancel();
      assert.ok(res.status < 500, `${path}: ${res.status}`);
    }
  } finally {
    await h.close();
  }
});

Deno.test("demo backend: refusals and forwarded errors use the flat error body with this request's id; no-store", async () => {
  await withDemo(async (_h, base) => {
    const refused: Record<string, string>[] = [
      {},
      { "x-demo": "1", "sec-fetch-site": "cross-site" },
      { "x-demo": "1", origin: "https://evil.example" },
    ];
    for (const headers of refused) {
      const res = await asJson(await fetch(`${base}/demo/api/catalog`, { headers }));
      checkErrorBody(res, { status: 403, code: "SVC_AUTH_FORBIDDEN" });
    }
    const host = new URL(base).host;
    const ok = await fetch(`${base}/demo/api/catalog`, {
      headers: { "x-demo": "1", origin: `http://${host}`, "sec-fetch-site": "same-origin" },
    });
    assert.equal(ok.status, 200);
    await ok.body?.cancel();
    // Behind a proxy that rewrites Host, the browser's Sec-Fetch-Site decides.
    const proxied = await fetch(`${base}/demo/api/catalog`, {
      headers: { "x-demo": "1", origin: "https://demo.example", "sec-fetch-site": "same-origin" },
    });
    assert.equal(proxied.status, 200);
    await proxied.body?.cancel();

    // The inner API's error comes back as this request's error.
    const missing = await asJson(
      await fetch(`${base}/demo/api/sessions/session:nope/token`, {
        method: "POST",
        headers: { "x-demo": "1" },
      }),
    );
    checkErrorBody(missing, { status: 404, code: "SVC_SESSION_NOT_FOUND" });
    const badJson = await asJson(
      await fetch(`${base}/demo/api/sessions`, {
        method: "POST",
        headers: { "x-demo": "1", "content-type": "application/json" },
        body: "{not json",
      }),
    );
    checkErrorBody(badJson, { status: 400, code: "SVC_INVALID_REQUEST" });

    // The session route hands out a client token: never stored by a cache.
    const created = await fetch(`${base}/demo/api/sessions`, { method: "POST", headers: { "x-demo": "1" } });
    const body = await created.json();
    assert.equal(created.status, 200, JSON.stringify(body));
    assert.equal(created.headers.get("cache-control"), "no-store");
    const token = await fetch(`${base}/demo/api/sessions/${body.session_id}/token`, {
      method: "POST",
      headers: { "x-demo": "1" },
    });
    await token.body?.cancel();
    assert.equal(token.status, 200);
    assert.equal(token.headers.get("cache-control"), "no-store");
    const end = await fetch(`${base}/demo/api/sessions/${body.session_id}/end`, {
      method: "POST",
      headers: { "x-demo": "1" },
    });
    await end.body?.cancel();
    assert.equal(end.status, 200);
  });
});

Deno.test("media route: a malformed WebSocket handshake answers 400 with the flat body and logs no error", async () => {
  await withMedia(async ({ h, base }) => {
    const url = `${base}/media/v0/sessions/session:abc`;
    const good = {
      upgrade: "websocket",
      connection: "Upgrade",
      "sec-websocket-version": "13",
      "sec-websocket-key": "dGhlIHNhbXBsZSBub25jZQ==",
    };
    const variants: Record<string, string>[] = [
      { upgrade: "websocket", connection: "upgrade" }, // no key, no version
      { ...good, "sec-websocket-key": "" },
      { ...good, "sec-websocket-key": "not base64!" },
      { ...good, "sec-websocket-version": "8" },
      { ...good, connection: "keep-alive" },
      { upgrade: "websocket" },
      {},
    ];
    for (const headers of variants) {
      const res = await asJson(await fetch(url, { headers }));
      try {
        checkErrorBody(res, { status: 400, code: "SVC_INVALID_REQUEST" });
      } catch (e) {
        throw new Error(`${JSON.stringify(headers)}: ${(e as Error).message}`);
      }
    }
    const head = await fetch(url, { method: "HEAD", headers: good });
    assert.equal(head.status, 400);
    assert.deepEqual(h.logs.filter((l) => l.includes('"level":"error"')), []);
  });
});

Deno.test("docs assets: inherited property names are not files (404, flat body, no error logged)", async () => {
  const h = await createHarness();
  try {
    for (
      const name of ["constructor", "toString", "hasOwnProperty", "__proto__", "valueOf", "swagger-ui.js"]
    ) {
      checkErrorBody(await h.req("GET", `/docs/assets/${name}`), {
        status: 404,
        code: "SVC_ROUTE_NOT_FOUND",
      });
    }
    const css = await h.req("GET", "/docs/assets/swagger-ui.css");
    assert.equal(css.status, 200);
    const init = await h.req("GET", "/docs/assets/init.js");
    assert.equal(init.status, 200);
    assert.match(init.headers.get("content-type") ?? "", /^text\/javascript/);
    assert.match(init.text, /SwaggerUIBundle\(/);
    assert.deepEqual(h.logs.filter((l) => l.includes('"level":"error"')), []);
  } finally {
    await h.close();
  }
});

Deno.test("ids too long for storage: path ids answer 404 and the cursor 400, never a retryable 503", async () => {
  const h = await createHarness();
  try {
    const key = await h.key("proj_a");
    const longSession = `session:${"a".repeat(2100)}`;
    const cases: [string, string, number, string][] = [
      ["GET", `/v1/sessions/${longSession}`, 404, "SVC_SESSION_NOT_FOUND"],
      ["POST", `/v1/sessions/${longSession}/end`, 404, "SVC_SESSION_NOT_FOUND"],
      ["POST", `/v1/sessions/${longSession}/end?force=true`, 404, "SVC_SESSION_NOT_FOUND"],
      ["POST", `/v1/sessions/${longSession}/client-token`, 404, "SVC_SESSION_NOT_FOUND"],
      ["GET", `/v1/sessions/session:${"b".repeat(256)}`, 404, "SVC_SESSION_NOT_FOUND"],
      ["DELETE", `/v1/api-keys/svc_key_${"a".repeat(4000)}`, 404, "SVC_API_KEY_NOT_FOUND"],
      ["DELETE", `/v1/api-keys/svc_key_${"a".repeat(248)}`, 404, "SVC_API_KEY_NOT_FOUND"],
      ["GET", `/v1/api-keys?starting_after=svc_key_${"a".repeat(3000)}`, 400, "SVC_INVALID_REQUEST"],
    ];
    for (const [method, path, status, code] of cases) {
      const res = await h.req(method, path, { key });
      try {
        checkErrorBody(res, { status, code });
      } catch (e) {
        throw new Error(`${method} ${path.slice(0, 40)}…: ${(e as Error).message}`);
      }
    }
    // The longest accepted ids still reach storage and answer an ordinary miss.
    const longest = `session:${"c".repeat(255 - 8)}`;
    checkErrorBody(await h.req("GET", `/v1/sessions/${longest}`, { key }), {
      status: 404,
      code: "SVC_SESSION_NOT_FOUND",
    });
    const page = await h.req("GET", `/v1/api-keys?starting_after=svc_key_${"z".repeat(247)}`, { key });
    assert.equal(page.status, 200);
  } finally {
    await h.close();
  }
});

Deno.test("body limit: a POST declared empty passes without its body stream being made; declared bodies stay bounded", async () => {
  const { Hono } = await import("hono");
  const { boundedBody } = await import("../../src/api/middleware/body.ts");
  const app = new Hono();
  app.use("*", boundedBody({ maxBytes: 16, timeoutMs: 1000 }));
  app.all("/x", async (c) => c.text(String((await c.req.raw.text()).length)));
  // as the service's onError does: the error's own status
  app.onError((err, c) => c.text(err.message, (err as { status?: 413 }).status ?? 500));
  let made = 0;
  const spied = (init: RequestInit) => {
    const req = new Request("http://127.0.0.1/x", init);
    const body = Object.getOwnPropertyDescriptor(Request.prototype, "body")!.get!;
    Object.defineProperty(req, "body", { get: () => (made++, body.call(req)) });
    return req;
  };
  // Declared empty: the middleware looks at the headers only (the route's own read is its business).
  const app2 = new Hono();
  app2.use("*", boundedBody({ maxBytes: 16, timeoutMs: 1000 }));
  app2.post("/x", (c) => c.text("ok"));
  const res = await app2.fetch(spied({ method: "POST", headers: { "content-length": "0" } }));
  assert.equal(res.status, 200);
  assert.equal(await res.text(), "ok");
  assert.equal(made, 0, "no body stream made for a POST declared empty");
  // A body that is declared is still bounded: over the limit answers 413 before the route reads it.
  const big = await app.fetch(spied({ method: "POST", body: "x".repeat(64) }));
  assert.equal(big.status, 413);
  await big.body?.cancel();
  const small = await app.fetch(spied({ method: "POST", body: "x".repeat(8) }));
  assert.equal(await small.text(), "8");
  // A body sent chunked beside a contradictory Content-Length: 0 is still bounded.
  const chunked = await app.fetch(
    spied({
      method: "POST",
      headers: { "content-length": "0", "transfer-encoding": "chunked" },
      body: "x".repeat(64),
    }),
  );
  assert.equal(chunked.status, 413);
  await chunked.body?.cancel();
});
