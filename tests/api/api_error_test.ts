/**
 * ApiError: a client error (4xx without a cause) is built without Error's constructor (no stack walk), yet
 * behaves as an Error and an ApiError everywhere it is handled; server errors and errors with a cause keep a
 * stack.
 */
import assert from "node:assert/strict";
import { OpenAPIHono } from "@hono/zod-openapi";
import { ApiError, ERROR_CODES, errorSpec } from "../../src/errors.ts";
import { PlacementFullError } from "../../src/kv/sessions.ts";

Deno.test("ApiError: every code builds an Error with its catalog status, message and retry_after", () => {
  for (const code of ERROR_CODES) {
    const spec = errorSpec(code);
    const err = new ApiError(code);
    assert.ok(err instanceof Error && err instanceof ApiError, code);
    assert.equal(err.name, "ApiError");
    assert.equal(err.code, code);
    assert.equal(err.status, spec.status);
    assert.equal(err.message, spec.message);
    assert.equal(String(err), `ApiError: ${spec.message}`);
    assert.equal(err.retryAfter === undefined, !spec.retryable, code);
    // Client errors carry no stack; server errors keep theirs for the logs.
    assert.equal(typeof err.stack, spec.status < 500 ? "undefined" : "string", code);
  }
  const custom = new ApiError("SVC_INVALID_REQUEST", "body.avatar_id: required");
  assert.equal(custom.message, "body.avatar_id: required");
  const limited = new ApiError("SVC_RATE_LIMIT_EXCEEDED", undefined, { retryAfter: 7.2 });
  assert.equal(limited.retryAfter, 8);
  assert.equal(new ApiError("SVC_RATE_LIMIT_EXCEEDED", undefined, { retryAfter: 99_999 }).retryAfter, 3600);
});

Deno.test("ApiError: a cause keeps the Error constructor (stack and cause); subclasses keep their identity", () => {
  const cause = new Error("kv down");
  const err = new ApiError("SVC_INVALID_REQUEST", undefined, { cause });
  assert.equal(err.cause, cause);
  assert.equal(typeof err.stack, "string");
  const full = new PlacementFullError();
  assert.ok(full instanceof PlacementFullError && full instanceof ApiError);
  assert.equal(full.name, "PlacementFullError");
  assert.equal(full.status, 503);
});

Deno.test("ApiError: a client error thrown in a Hono handler reaches onError", async () => {
  const app = new OpenAPIHono();
  app.get("/x", () => {
    throw new ApiError("SVC_SESSION_NOT_FOUND");
  });
  app.onError((err, c) => c.json({ code: (err as ApiError).code, is: err instanceof ApiError }, 418));
  const res = await app.fetch(new Request("http://x/x"));
  assert.equal(res.status, 418);
  assert.deepEqual(await res.json(), { code: "SVC_SESSION_NOT_FOUND", is: true });
});
