import assert from "node:assert/strict";
import { Validator } from "@seriousme/openapi-schema-validator";
import { emitOpenApi } from "../../src/api/emit_openapi.ts";
import { ERROR_CATALOG, ERROR_CODES } from "../../src/errors.ts";
import { END_REASONS } from "../../src/vocabulary/end_reasons.ts";
import { createHarness } from "../../testing/harness.ts";

const committed = await Deno.readTextFile(new URL("../../openapi.json", import.meta.url));

Deno.test("openapi.json: the committed file equals what the routes emit", async () => {
  const emitted = await emitOpenApi();
  assert.equal(committed, emitted, "openapi.json is stale: run `deno task openapi`");
});

Deno.test("openapi.json: a valid OpenAPI 3.1 document", async () => {
  const validator = new Validator();
  const result = await validator.validate(JSON.parse(committed));
  assert.ok(result.valid, JSON.stringify(result.errors, null, 2));
  assert.equal(validator.version, "3.1");
});

Deno.test("openapi.json: the six canonical operations, their scopes' security and their statuses", () => {
  const doc = JSON.parse(committed);
  const expected: Record<string, [string, string, number[]]> = {
    createApiKey: ["post", "/v1/api-keys", [200, 400, 401, 403, 429, 500]],
    revokeApiKey: ["delete", "/v1/api-keys/{key_id}", [200, 401, 403, 404, 429]],
    createSession: ["post", "/v1/sessions", [200, 400, 401, 403, 429, 502, 503, 504]],
    getSession: ["get", "/v1/sessions/{session_id}", [200, 401, 403, 404, 429, 503]],
    endSession: ["post", "/v1/sessions/{session_id}/end", [200, 401, 403, 404, 409, 429, 503]],
    createClientToken: ["post", "/v1/sessions/{session_id}/client-token", [200, 401, 403, 404, 429, 503]],
  };
  for (const [opId, [method, path, statuses]] of Object.entries(expected)) {
    const op = doc.paths[path]?.[method];
    assert.ok(op, `${method} ${path} missing`);
    assert.equal(op.operationId, opId);
    assert.deepEqual(op.security, [{ Bearer: [] }, { ApiKey: [] }]);
    for (const s of statuses) assert.ok(op.responses[String(s)], `${opId} lacks ${s}`);
    type Resp = { content: Record<string, { schema: { $ref: string } }> };
    for (const [status, resp] of Object.entries<Resp>(op.responses)) {
      if (Number(status) >= 400) {
        assert.equal(
          resp.content["application/json"].schema.$ref,
          "#/components/schemas/ErrorBody",
          `${opId} ${status}`,
        );
      }
    }
  }
  assert.deepEqual(doc.components.schemas.ErrorBody.properties.code.enum, ERROR_CODES);
  assert.deepEqual(doc.components.schemas.ErrorBody.required.sort(), [
    "code",
    "doc_url",
    "message",
    "request_id",
  ]);
  // provider_connection_id is not a field anywhere in the request schema
  assert.ok(!JSON.stringify(doc.components.schemas.CreateSessionRequest).includes("provider_connection_id"));
  assert.equal(doc.components.schemas.CreateSessionRequest.additionalProperties, false);
});

Deno.test("docs: /openapi.json, an offline reference page, and an error reference with every code", async () => {
  const h = await createHarness();
  try {
    const spec = await h.req("GET", "/openapi.json");
    assert.equal(spec.status, 200);
    assert.deepEqual(spec.body, JSON.parse(committed));

    const page = await h.req("GET", "/docs");
    assert.equal(page.status, 200);
    assert.match(page.headers.get("content-type")!, /text\/html/);
    // every script and stylesheet is served by the service itself (no CDN)
    const refs = [...page.text.matchAll(/(?:src|href)="([^"]+)"/g)].map((m) => m[1]);
    assert.ok(refs.length >= 3);
    for (const ref of refs) {
      assert.ok(ref.startsWith("/"), `external asset ${ref}`);
      const asset = await h.fetch(new Request(`http://svc.test${ref}`));
      assert.equal(asset.status, 200, ref);
      assert.ok((await asset.arrayBuffer()).byteLength > 20, ref);
    }

    const errors = await h.req("GET", "/docs/errors");
    assert.equal(errors.status, 200);
    for (const code of ERROR_CODES) {
      assert.ok(errors.text.includes(`id="${code.toLowerCase()}"`), `${code} has no anchor`);
      assert.ok(errors.text.includes(`<td>${ERROR_CATALOG[code].status}</td>`));
    }
    // doc_url points at that page
    const res = await h.req("GET", "/v1/sessions/session:x");
    assert.equal(res.body.doc_url, `${h.config.docsUrl}/errors#svc_auth_missing_credentials`);
  } finally {
    await h.close();
  }
});

Deno.test("error catalog: retryable codes are exactly the spec's list and carry retry_after", () => {
  const specRetryable = [
    "SVC_PROVIDER_DOWNSTREAM_FAILED",
    "SVC_PROVIDER_TIMEOUT",
    "SVC_PROVIDER_UNAVAILABLE",
    "SVC_RATE_LIMIT_CONCURRENT_SESSIONS",
    "SVC_RATE_LIMIT_EXCEEDED",
    "SVC_RATE_LIMIT_PROVIDER_QUOTA",
    "SVC_RENDER_CAPACITY",
    "SVC_RENDER_TIMEOUT",
    "SVC_SESSION_STATE_UNAVAILABLE",
    "SVC_SFU_CONNECTION_FAILED",
    "SVC_SFU_NEGOTIATION_FAILED",
    "SVC_SFU_ROOM_FULL",
  ];
  const specNonRetryable = [
    "SVC_AUTH_EXPIRED_TOKEN",
    "SVC_AUTH_FORBIDDEN",
    "SVC_AUTH_INVALID_KEY",
    "SVC_AUTH_MISSING_CREDENTIALS",
    "SVC_AUTH_MISSING_SCOPE",
    "SVC_PROVIDER_MISCONFIGURED",
    "SVC_RENDER_FAILED",
    "SVC_RENDER_MISCONFIGURED",
    "SVC_SESSION_CANCELLED",
    "SVC_SESSION_CONFLICT",
    "SVC_SESSION_ENDED",
    "SVC_SESSION_NOT_FOUND",
    "SVC_SFU_NOT_CONFIGURED",
  ];
  const spec = ERROR_CODES.filter((c) => ERROR_CATALOG[c].spec);
  assert.deepEqual([...spec].sort(), [...specRetryable, ...specNonRetryable].sort());
  for (const c of specRetryable) {
    assert.equal(ERROR_CATALOG[c as keyof typeof ERROR_CATALOG].retryable, true, c);
  }
  for (const c of specNonRetryable) {
    assert.equal(ERROR_CATALOG[c as keyof typeof ERROR_CATALOG].retryable, false, c);
  }
  for (const c of ERROR_CODES) {
    const e = ERROR_CATALOG[c];
    assert.match(c, /^SVC_[A-Z_]+$/);
    if (e.retryable) assert.ok("retryAfter" in e && e.retryAfter >= 1 && e.retryAfter <= 3600, c);
  }
});

Deno.test("docs/errors.md: generated from the catalog and up to date", async () => {
  const { errorReferenceMarkdown } = await import("../../src/api/error_reference.ts");
  const md = await Deno.readTextFile(new URL("../../docs/errors.md", import.meta.url));
  assert.equal(md, errorReferenceMarkdown(), "docs/errors.md is stale: run `deno task openapi`");
});

Deno.test("openapi.json: the lifecycle webhooks with their Standard Webhooks headers and payloads", () => {
  const doc = JSON.parse(committed);
  assert.deepEqual(Object.keys(doc.webhooks).sort(), ["session.ended", "session.failed", "session.started"]);
  for (
    const [name, item] of Object.entries<Record<string, { parameters: { name: string; in: string }[] }>>(
      doc.webhooks,
    )
  ) {
    const op = item.post as unknown as {
      parameters: { name: string; in: string; required: boolean }[];
      requestBody: { content: Record<string, { schema: { $ref: string } }> };
      responses: Record<string, unknown>;
    };
    assert.deepEqual(
      op.parameters.filter((p) => p.in === "header" && p.required).map((p) => p.name).sort(),
      ["webhook-id", "webhook-signature", "webhook-timestamp"],
      name,
    );
    const ref = op.requestBody.content["application/json"].schema.$ref;
    const schema = doc.components.schemas[ref.split("/").pop()!];
    assert.deepEqual(schema.properties.type.enum, [name]);
    assert.ok(op.responses["200"] && op.responses["410"], name);
  }
  const ended = doc.components.schemas.SessionEndedEvent.properties.data;
  assert.deepEqual(
    ["chunks_rendered", "duration_s", "end_reason", "status"].filter((f) => !ended.required.includes(f)),
    [],
  );
  assert.ok(doc.components.schemas.Session.properties.end_reason, "GET adds end_reason");
  assert.ok(doc.components.schemas.EndedSession.properties.end_reason, "the end answer adds end_reason");
  // canonical required fields are unchanged by the added field
  assert.ok(!doc.components.schemas.Session.required.includes("end_reason"));
  // the end reasons and their description come from the one list
  const reason = doc.components.schemas.EndReason;
  assert.deepEqual(reason.enum, [...END_REASONS]);
  for (const r of END_REASONS) {
    assert.ok(reason.description.includes(r), `the EndReason description names ${r}`);
  }
  assert.match(reason.description, /docs\/api\.md#lifetimes-and-end-reasons/);
});
