import assert from "node:assert/strict";
import { hashApiKey, isWellFormedApiKey } from "../../src/auth/api_key_format.ts";
import { createHarness, type Harness } from "../../testing/harness.ts";
import { checkErrorBody } from "../../testing/fixtures.ts";

async function kvDump(h: Harness): Promise<string> {
  const rows: string[] = [];
  for await (const e of h.kv.list({ prefix: [] })) rows.push(JSON.stringify([e.key, e.value]));
  return rows.join("\n");
}

Deno.test("api keys: create returns the plaintext once; only its SHA-256 is stored", async () => {
  const h = await createHarness();
  try {
    const admin = await h.key("proj_a");
    const before = h.clock.now();
    const res = await h.req("POST", "/v1/api-keys", {
      key: admin,
      body: { name: "ci deploy", scopes: ["sessions:read", "sessions:write"] },
    });
    const after = h.clock.now();
    assert.equal(res.status, 200, res.text);
    assert.deepEqual(Object.keys(res.body).sort(), ["api_key", "created_at", "key_id", "name", "scopes"]);
    assert.match(res.body.key_id, /^svc_key_[A-Za-z0-9_-]+$/);
    assert.ok(isWellFormedApiKey(res.body.api_key));
    assert.equal(res.body.name, "ci deploy");
    assert.deepEqual(res.body.scopes, ["sessions:read", "sessions:write"]);
    assert.ok(res.body.created_at >= before && res.body.created_at <= after);
    const dump = await kvDump(h);
    assert.ok(!dump.includes(res.body.api_key), "plaintext must not be stored");
    assert.ok(dump.includes(hashApiKey(res.body.api_key)), "hash is stored");
    // the new key works, and the plaintext never appears again
    const list = await h.req("GET", "/v1/api-keys", { key: admin });
    assert.equal(list.status, 200);
    assert.ok(!list.text.includes(res.body.api_key));
    assert.equal((await h.req("GET", "/v1/sessions/session:nope", { key: res.body.api_key })).status, 404);
  } finally {
    await h.close();
  }
});

Deno.test("api keys: body validation (name 1..128, scopes known and non-empty, strict fields)", async () => {
  const h = await createHarness();
  try {
    const key = await h.key("proj_a");
    const bad: unknown[] = [
      { name: "", scopes: ["sessions:read"] },
      { name: "x".repeat(129), scopes: ["sessions:read"] },
      { name: "tab\there", scopes: ["sessions:read"] },
      { name: "x", scopes: [] },
      { name: "x", scopes: ["sessions:admin"] },
      { name: "x", scopes: "sessions:read" },
      { name: "x" },
      { scopes: ["sessions:read"] },
      { name: "x", scopes: ["sessions:read"], expires_at: 5 },
      [],
      "null",
    ];
    for (const body of bad) {
      const res = await h.req("POST", "/v1/api-keys", { key, body });
      checkErrorBody(res, { status: 400, code: "SVC_INVALID_REQUEST" });
    }
    const unknownScope = await h.req("POST", "/v1/api-keys", {
      key,
      body: { name: "x", scopes: ["sessions:read", "root"] },
    });
    assert.match(unknownScope.body.message, /scopes\.1/);
    // 128 characters (astral code points count once) are fine
    for (const name of ["x".repeat(128), "😀".repeat(128), "a"]) {
      const res = await h.req("POST", "/v1/api-keys", { key, body: { name, scopes: ["sessions:read"] } });
      assert.equal(res.status, 200, res.text);
    }
  } finally {
    await h.close();
  }
});

Deno.test("api keys: a key cannot grant scopes it does not hold (403 SVC_AUTH_FORBIDDEN)", async () => {
  const h = await createHarness();
  try {
    const limited = await h.key("proj_a", ["api_keys:write", "sessions:read"]);
    const res = await h.req("POST", "/v1/api-keys", {
      key: limited,
      body: { name: "x", scopes: ["sessions:write"] },
    });
    checkErrorBody(res, { status: 403, code: "SVC_AUTH_FORBIDDEN" });
    const ok = await h.req("POST", "/v1/api-keys", {
      key: limited,
      body: { name: "x", scopes: ["sessions:read"] },
    });
    assert.equal(ok.status, 200);
  } finally {
    await h.close();
  }
});

Deno.test("api keys: revocation is permanent and idempotent; unknown or foreign keys answer 404", async () => {
  const h = await createHarness();
  try {
    const a = await h.key("proj_a");
    const b = await h.key("proj_b");
    const created = await h.req("POST", "/v1/api-keys", {
      key: a,
      body: { name: "victim", scopes: ["sessions:read"] },
    });
    const id = created.body.key_id;
    // another project's key: 404, and the key still works
    checkErrorBody(await h.req("DELETE", `/v1/api-keys/${id}`, { key: b }), {
      status: 404,
      code: "SVC_API_KEY_NOT_FOUND",
    });
    assert.equal((await h.req("GET", "/v1/sessions/session:x", { key: created.body.api_key })).status, 404);

    const first = await h.req("DELETE", `/v1/api-keys/${id}`, { key: a });
    assert.equal(first.status, 200, first.text);
    assert.deepEqual(Object.keys(first.body).sort(), ["key_id", "revoked_at", "status"]);
    assert.equal(first.body.status, "revoked");
    assert.equal(first.body.key_id, id);
    h.clock.advance(60_000);
    const second = await h.req("DELETE", `/v1/api-keys/${id}`, { key: a });
    assert.equal(second.status, 200);
    assert.equal(second.body.revoked_at, first.body.revoked_at, "same revoked_at on repeat");
    checkErrorBody(await h.req("GET", "/v1/sessions/session:x", { key: created.body.api_key }), {
      status: 401,
      code: "SVC_AUTH_INVALID_KEY",
    });
    checkErrorBody(await h.req("DELETE", "/v1/api-keys/svc_key_doesnotexist", { key: a }), {
      status: 404,
      code: "SVC_API_KEY_NOT_FOUND",
    });
    checkErrorBody(await h.req("DELETE", "/v1/api-keys/not-a-key-id", { key: a }), {
      status: 404,
      code: "SVC_API_KEY_NOT_FOUND",
    });
    assert.ok(!second.text.includes(created.body.api_key));
  } finally {
    await h.close();
  }
});

Deno.test("api keys: listing is project-scoped, paginated, and never shows plaintext", async () => {
  const h = await createHarness();
  try {
    const a = await h.key("proj_a");
    await h.key("proj_b");
    const plaintexts: string[] = [];
    for (let i = 0; i < 5; i++) {
      const r = await h.req("POST", "/v1/api-keys", {
        key: a,
        body: { name: `k${i}`, scopes: ["sessions:read"] },
      });
      plaintexts.push(r.body.api_key);
    }
    const seen: string[] = [];
    let after: string | undefined;
    for (let page = 0; page < 10; page++) {
      const r = await h.req("GET", `/v1/api-keys?limit=2${after ? `&starting_after=${after}` : ""}`, {
        key: a,
      });
      assert.equal(r.status, 200, r.text);
      for (const p of plaintexts) assert.ok(!r.text.includes(p));
      for (const k of r.body.data) {
        assert.deepEqual(Object.keys(k).sort(), [
          "created_at",
          "hint",
          "key_id",
          "name",
          "revoked_at",
          "scopes",
          "status",
        ]);
        seen.push(k.key_id);
      }
      if (!r.body.has_more) break;
      after = r.body.data.at(-1).key_id;
    }
    assert.equal(seen.length, 6, "5 created + the bootstrap key, none of proj_b");
    assert.equal(new Set(seen).size, 6);
    checkErrorBody(await h.req("GET", "/v1/api-keys?limit=0", { key: a }), {
      status: 400,
      code: "SVC_INVALID_REQUEST",
    });
    checkErrorBody(await h.req("GET", "/v1/api-keys?limit=101", { key: a }), {
      status: 400,
      code: "SVC_INVALID_REQUEST",
    });
  } finally {
    await h.close();
  }
});
