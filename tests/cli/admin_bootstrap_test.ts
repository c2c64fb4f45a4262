import assert from "node:assert/strict";
import { createHarness } from "../../testing/harness.ts";

const ROOT = new URL("../..", import.meta.url);

async function cli(args: string[], env: Record<string, string>) {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["task", "--quiet", "cli", ...args],
    cwd: ROOT,
    env,
    stdout: "piped",
    stderr: "piped",
  }).output();
  return {
    code: out.code,
    stdout: new TextDecoder().decode(out.stdout),
    stderr: new TextDecoder().decode(out.stderr),
  };
}

Deno.test("cli admin bootstrap: mints a working key into the configured KV and prints it as JSON", async () => {
  const dir = await Deno.makeTempDir();
  const kvPath = `${dir}/svc.kv`;
  try {
    const res = await cli(["admin", "bootstrap", "--project", "proj_ext", "--name", "first key", "--json"], {
      SVC_KV: kvPath,
    });
    assert.equal(res.code, 0, res.stderr);
    const out = JSON.parse(res.stdout);
    assert.deepEqual(Object.keys(out), ["project_id", "key_id", "api_key", "scopes"]);
    assert.equal(out.project_id, "proj_ext");
    assert.match(out.key_id, /^svc_key_[A-Za-z0-9_-]+$/);
    assert.deepEqual(out.scopes, [
      "sessions:read",
      "sessions:write",
      "api_keys:read",
      "api_keys:write",
      "avatars:read",
      "avatars:write",
    ]);

    const limited = await cli(
      [
        "admin",
        "bootstrap",
        "--project",
        "proj_ext",
        "--name",
        "ro",
        "--scope",
        "sessions:read",
        "--scope",
        "api_keys:write",
        "--json",
      ],
      { SVC_KV: kvPath },
    );
    assert.equal(limited.code, 0, limited.stderr);
    assert.deepEqual(JSON.parse(limited.stdout).scopes, ["sessions:read", "api_keys:write"]);

    // the key authenticates against an app over the same KV, for its project
    const kv = await Deno.openKv(kvPath);
    const h = await createHarness({ kv });
    try {
      const list = await h.req("GET", "/v1/api-keys", { key: out.api_key });
      assert.equal(list.status, 200, list.text);
      assert.equal(list.body.data.length, 2);
      assert.ok(!list.text.includes(out.api_key));
    } finally {
      await h.close();
      kv.close();
    }
    // the plaintext is not in the KV file
    const raw = await Deno.readFile(kvPath);
    assert.ok(!new TextDecoder("latin1").decode(raw).includes(out.api_key));
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("cli admin bootstrap: usage errors exit 2 with a clear message", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const env = { SVC_KV: `${dir}/svc.kv` };
    for (
      const [args, pattern] of [
        [["admin", "bootstrap", "--name", "x"], /--project/],
        [["admin", "bootstrap", "--project", "p"], /--name/],
        [["admin", "bootstrap", "--project", "p", "--name", "x", "--scope", "root"], /unknown scope/],
        [["admin", "bootstrap", "--project", "bad project", "--name", "x"], /--project/],
        [["admin", "bootstrap", "--project", "p", "--name", "x", "--bogus"], /bogus/],
        [["nope"], /unknown command/],
      ] as [string[], RegExp][]
    ) {
      const res = await cli(args, env);
      assert.equal(res.code, 2, `${args.join(" ")}: ${res.stderr}`);
      assert.match(res.stderr, pattern);
      assert.equal(res.stdout, "");
    }
    const help = await cli(["admin", "bootstrap", "--help"], env);
    assert.equal(help.code, 0);
    assert.match(help.stdout, /--project <id>/);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
