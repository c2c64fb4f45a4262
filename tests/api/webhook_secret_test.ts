import assert from "node:assert/strict";
import { checkErrorBody } from "../helpers/fixtures.ts";
import { createHarness } from "../helpers/harness.ts";

Deno.test("webhook secret route: api_keys:write reads and rotates it; other scopes and projects cannot", async () => {
  const h = await createHarness();
  try {
    const admin = await h.key("proj_a");
    const reader = await h.key("proj_a", ["sessions:read", "sessions:write", "api_keys:read"]);
    const other = await h.key("proj_b");
    const got = await h.req("GET", "/v1/webhooks/secret", { key: admin });
    assert.equal(got.status, 200, got.text);
    assert.equal(got.headers.get("cache-control"), "no-store");
    assert.match(got.body.secret, /^whsec_[A-Za-z0-9+/]{43}=$/);
    assert.deepEqual(
      { ...got.body, secret: "x", created_at: 0 },
      { secret: "x", previous_secret: null, previous_valid_until: null, created_at: 0, rotated_at: null },
    );
    // stable across reads; per project
    assert.equal((await h.req("GET", "/v1/webhooks/secret", { key: admin })).body.secret, got.body.secret);
    const b = await h.req("GET", "/v1/webhooks/secret", { key: other });
    assert.notEqual(b.body.secret, got.body.secret);
    for (const [method, path] of [["GET", "/v1/webhooks/secret"], ["POST", "/v1/webhooks/secret/rotate"]]) {
      checkErrorBody(await h.req(method, path, { key: reader }), {
        status: 403,
        code: "SVC_AUTH_MISSING_SCOPE",
      });
      checkErrorBody(await h.req(method, path), { status: 401, code: "SVC_AUTH_MISSING_CREDENTIALS" });
    }
    const rotated = await h.req("POST", "/v1/webhooks/secret/rotate", { key: admin });
    assert.equal(rotated.status, 200);
    assert.notEqual(rotated.body.secret, got.body.secret);
    assert.equal(rotated.body.previous_secret, got.body.secret);
    assert.equal(rotated.body.previous_valid_until, rotated.body.rotated_at + 24 * 3600_000);
    h.clock.advance(24 * 3600_000 + 1);
    const later = await h.req("GET", "/v1/webhooks/secret", { key: admin });
    assert.equal(later.body.secret, rotated.body.secret);
    assert.equal(later.body.previous_secret, null, "the previous secret is gone after its grace period");
  } finally {
    await h.close();
  }
});

Deno.test("cli webhooks secret get|rotate: reads and rotates the secret in the configured KV", async () => {
  const dir = await Deno.makeTempDir();
  const run = async (args: string[]) => {
    const out = await new Deno.Command(Deno.execPath(), {
      args: ["task", "--quiet", "cli", "webhooks", "secret", ...args],
      cwd: new URL("../..", import.meta.url),
      env: { SVC_KV: `${dir}/svc.kv` },
      stdout: "piped",
      stderr: "piped",
    }).output();
    return {
      code: out.code,
      stdout: new TextDecoder().decode(out.stdout),
      stderr: new TextDecoder().decode(out.stderr),
    };
  };
  try {
    const first = await run(["get", "--project", "proj_cli", "--json"]);
    assert.equal(first.code, 0, first.stderr);
    const a = JSON.parse(first.stdout);
    assert.equal(a.project_id, "proj_cli");
    assert.match(a.secret, /^whsec_/);
    assert.equal(JSON.parse((await run(["get", "--project", "proj_cli", "--json"])).stdout).secret, a.secret);
    const rotated = JSON.parse((await run(["rotate", "--project", "proj_cli", "--json"])).stdout);
    assert.notEqual(rotated.secret, a.secret);
    assert.equal(rotated.previous_secret, a.secret);
    const text = await run(["get", "--project", "proj_cli"]);
    assert.ok(text.stdout.includes(rotated.secret) && text.stdout.includes("Previous secret"));
    // the same KV the service reads
    const kv = await Deno.openKv(`${dir}/svc.kv`);
    const h = await createHarness({ kv });
    try {
      const key = await h.key("proj_cli");
      assert.equal((await h.req("GET", "/v1/webhooks/secret", { key })).body.secret, rotated.secret);
    } finally {
      await h.close();
      kv.close();
    }
    const usage = await run(["get"]);
    assert.equal(usage.code, 2);
    assert.match(usage.stderr, /--project/);
    assert.equal((await run(["drop", "--project", "p"])).code, 2);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
