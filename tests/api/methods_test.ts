/**
 * Methods no route serves, in any case, over a raw connection (fetch would upper-case `get` and refuse
 * `TRACE`): a path the routes serve answers `405 SVC_METHOD_NOT_ALLOWED` with `Allow`, an unknown path `404
 * SVC_ROUTE_NOT_FOUND`, both with the flat error body, before authentication and never 500 (a lower-case
 * `get` or `post`, or `TRACE`, answered 500 SVC_INTERNAL_ERROR on every route: Deno refused to rebuild the
 * request inside the body bound).
 */
import assert from "node:assert/strict";
import { checkErrorBody } from "../../testing/fixtures.ts";
import { createHarness } from "../../testing/harness.ts";

/** One raw HTTP/1.1 request; the answer's status, headers and JSON body. */
async function raw(base: string, method: string, path: string, body?: string) {
  const url = new URL(base);
  const conn = await Deno.connect({ hostname: url.hostname, port: Number(url.port) });
  try {
    const head = [`${method} ${path} HTTP/1.1`, `Host: ${url.host}`, "Connection: close"];
    if (body !== undefined) head.push("Content-Type: application/json", `Content-Length: ${body.length}`);
    await conn.write(new TextEncoder().encode(head.join("\r\n") + "\r\n\r\n" + (body ?? "")));
    const chunks: Uint8Array[] = [];
    const buf = new Uint8Array(16 * 1024);
    while (true) {
      const n = await conn.read(buf).catch(() => null);
      if (n === null) break;
      chunks.push(buf.slice(0, n));
    }
    const text = new TextDecoder().decode(new Uint8Array(chunks.flatMap((c) => [...c])));
    const [top, rest = ""] = text.split("\r\n\r\n", 2);
    const [statusLine, ...lines] = top.split("\r\n");
    const headers = new Headers(lines.map((l) => l.split(/:\s*/, 2) as [string, string]));
    const status = Number(statusLine.split(" ")[1]);
    const chunked = headers.get("transfer-encoding") === "chunked";
    const payload = chunked ? rest.split("\r\n").filter((_, i) => i % 2 === 1).join("") : rest;
    return { status, headers, body: payload ? JSON.parse(payload) : {} };
  } finally {
    conn.close();
  }
}

Deno.test("methods: any method a path does not serve, in any case, answers 405 with Allow (or 404 off the routes), never 500", async () => {
  const h = await createHarness();
  try {
    const base = h.serve();
    const key = await h.key("proj_methods");
    const cases: [string, string, number, string | null][] = [
      ["get", "/v1/sessions", 405, "GET, HEAD, POST"],
      ["post", "/v1/sessions", 405, "GET, HEAD, POST"],
      ["Get", "/healthz", 405, "GET, HEAD"],
      ["get", "/healthz", 405, "GET, HEAD"],
      ["TRACE", "/v1/sessions", 405, "GET, HEAD, POST"],
      ["trace", "/v1/sessions/sess_x", 405, "GET, HEAD"],
      ["TRACK", "/v1/api-keys/svc_key_x", 405, "DELETE"],
      ["PUT", "/v1/sessions", 405, "GET, HEAD, POST"],
      ["DELETE", "/v1/sessions/sess_x", 405, "GET, HEAD"],
      ["OPTIONS", "/v1/sessions", 405, "GET, HEAD, POST"],
      ["PATCH", "/v1/sessions/sess_x/end", 405, "POST"],
      ["POST", "/v1/sessions/sess_x/metrics", 405, "GET, HEAD"],
      ["delete", "/v1/sessions/sess_x/metrics", 405, "GET, HEAD"],
      ["FOO", "/openapi.json", 405, "GET, HEAD"],
      ["get", "/nowhere", 404, null],
      ["TRACE", "/nowhere", 404, null],
      ["PROPFIND", "/v1/nowhere", 404, null],
    ];
    for (const [method, path, status, allow] of cases) {
      for (const body of [undefined, "{}"]) {
        const res = await raw(base, method, path, body);
        const what = `${method} ${path}${body ? " with a body" : ""}`;
        assert.equal(res.status, status, `${what}: ${res.status} ${JSON.stringify(res.body)}`);
        checkErrorBody(res, {
          status,
          code: status === 405 ? "SVC_METHOD_NOT_ALLOWED" : "SVC_ROUTE_NOT_FOUND",
        });
        assert.equal(res.headers.get("allow"), allow, `${what}: Allow`);
        assert.equal(res.headers.get("cache-control"), "no-store");
      }
    }
    // Served methods are unchanged (and a GET that carries a body is not a 500 either).
    assert.equal((await raw(base, "GET", "/healthz")).status, 200);
    assert.equal((await raw(base, "GET", "/healthz", "{}")).status, 200);
    assert.equal((await raw(base, "POST", "/v1/sessions", "{}")).status, 401, "authentication as before");
    const listed = await h.req("GET", "/v1/api-keys", { key });
    assert.equal(listed.status, 200);
    assert.ok(!h.logs.some((l) => l.includes('"unexpected error"')), "nothing unexpected logged");
  } finally {
    await h.close();
  }
});
