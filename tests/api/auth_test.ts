import assert from "node:assert/strict";
import { generateApiKey } from "../../src/auth/api_key_format.ts";
import { createHarness } from "../../testing/harness.ts";
import { checkErrorBody } from "../../testing/fixtures.ts";

const SID = "session:AAAAAAAAAAAAAAAAAAAAAA";
/** Every /v1 route with the scope it requires. */
const ROUTES: { method: string; path: string; scope: string; body?: unknown }[] = [
  {
    method: "POST",
    path: "/v1/api-keys",
    scope: "api_keys:write",
    body: { name: "x", scopes: ["api_keys:write"] },
  },
  { method: "DELETE", path: "/v1/api-keys/svc_key_unknown", scope: "api_keys:write" },
  { method: "GET", path: "/v1/api-keys", scope: "api_keys:read" },
  { method: "POST", path: "/v1/sessions", scope: "sessions:write", body: {} },
  { method: "GET", path: `/v1/sessions/${SID}`, scope: "sessions:read" },
  { method: "POST", path: `/v1/sessions/${SID}/end`, scope: "sessions:write" },
  { method: "POST", path: `/v1/sessions/${SID}/client-token`, scope: "sessions:write" },
];
const ALL = [
  "sessions:read",
  "sessions:write",
  "api_keys:read",
  "api_keys:write",
  "avatars:read",
  "avatars:write",
] as const;

Deno.test("auth: every /v1 route answers 401 SVC_AUTH_MISSING_CREDENTIALS without a key", async () => {
  const h = await createHarness();
  try {
    for (const r of ROUTES) {
      const res = await h.req(r.method, r.path, { body: r.body });
      checkErrorBody(res, { status: 401, code: "SVC_AUTH_MISSING_CREDENTIALS" });
    }
    // unknown /v1 routes also need a key
    checkErrorBody(await h.req("GET", "/v1/nothing"), { status: 401, code: "SVC_AUTH_MISSING_CREDENTIALS" });
  } finally {
    await h.close();
  }
});

Deno.test("auth: malformed, unknown and revoked keys answer 401 SVC_AUTH_INVALID_KEY", async () => {
  const h = await createHarness();
  try {
    const good = await h.key("proj_a");
    const mangled = good.slice(0, -1) + (good.endsWith("A") ? "B" : "A"); // checksum breaks
    const cases: Record<string, string>[] = [
      { authorization: "Bearer nonsense" },
      { authorization: `Bearer ${mangled}` },
      { authorization: `Bearer ${generateApiKey()}` }, // well-formed, never issued
      { authorization: `Basic ${btoa("user:pass")}` },
      { authorization: "Bearer" },
      { "x-api-key": "svc_sk_short" },
      { "x-api-key": generateApiKey() },
    ];
    for (const headers of cases) {
      const res = await h.req("GET", `/v1/sessions/${SID}`, { headers });
      checkErrorBody(res, { status: 401, code: "SVC_AUTH_INVALID_KEY" });
    }
    // revoke the key with itself, then it is refused
    const list = await h.req("GET", "/v1/api-keys", { key: good });
    const keyId = list.body.data[0].key_id;
    assert.equal((await h.req("DELETE", `/v1/api-keys/${keyId}`, { key: good })).status, 200);
    checkErrorBody(await h.req("GET", "/v1/api-keys", { key: good }), {
      status: 401,
      code: "SVC_AUTH_INVALID_KEY",
    });
    checkErrorBody(await h.req("GET", "/v1/api-keys", { key: good, via: "x-api-key" }), {
      status: 401,
      code: "SVC_AUTH_INVALID_KEY",
    });
  } finally {
    await h.close();
  }
});

Deno.test("auth: both headers are accepted on every route", async () => {
  const h = await createHarness();
  try {
    const key = await h.key("proj_a");
    for (const via of ["bearer", "x-api-key"] as const) {
      for (const r of ROUTES) {
        const res = await h.req(r.method, r.path, { key, via, body: r.body });
        assert.ok(
          ![401, 403].includes(res.status),
          `${via} ${r.method} ${r.path}: ${res.status} ${res.text}`,
        );
      }
    }
    // lowercase scheme is fine too
    const res = await h.req("GET", "/v1/api-keys", { headers: { authorization: `bearer ${key}` } });
    assert.equal(res.status, 200);
  } finally {
    await h.close();
  }
});

Deno.test("auth: each route requires exactly its scope (403 SVC_AUTH_MISSING_SCOPE otherwise)", async () => {
  const h = await createHarness();
  try {
    for (const r of ROUTES) {
      const others = ALL.filter((s) => s !== r.scope);
      const lacking = await h.key("proj_a", [...others]);
      const res = await h.req(r.method, r.path, { key: lacking, body: r.body });
      const body = checkErrorBody(res, { status: 403, code: "SVC_AUTH_MISSING_SCOPE" });
      assert.match(String(body.message), new RegExp(r.scope));
      const holding = await h.key("proj_a", [r.scope as typeof ALL[number]]);
      const ok = await h.req(r.method, r.path, { key: holding, body: r.body });
      assert.notEqual(ok.status, 403, `${r.method} ${r.path} with ${r.scope}: ${ok.text}`);
    }
  } finally {
    await h.close();
  }
});

Deno.test("auth: errors never echo the presented key", async () => {
  const h = await createHarness();
  try {
    const key = await h.key("proj_a", ["sessions:read"]);
    const res = await h.req("POST", "/v1/api-keys", { key, body: { name: "x", scopes: ["sessions:read"] } });
    assert.equal(res.status, 403);
    assert.ok(!res.text.includes(key));
    assert.ok(!h.logs.join("\n").includes(key));
  } finally {
    await h.close();
  }
});
