/**
 * `webhooks secret get|rotate` as a subprocess against a running service: it goes through the API with
 * the operator's key (never the KV file), so the secret it prints is the one the service signs with, the
 * project is the key's own, and a key without `api_keys:write` is refused.
 */
import assert from "node:assert/strict";
import { createClient } from "@avatar-svc/sdk";
import { runCli } from "../../testing/cli.ts";
import { startTestService } from "../../testing/service.ts";

Deno.test("cli webhooks secret get|rotate: through the API, with the key's project", async () => {
  const svc = await startTestService();
  const dir = await Deno.makeTempDir();
  try {
    const admin = await svc.key("proj_hooks");
    // A KV path that does not exist: the command must not create (or read) any KV.
    const strayKv = `${dir}/stray.kv`;
    const env = { SVC_API_URL: svc.url, SVC_API_KEY: admin, SVC_KV: strayKv };
    const first = await runCli(["webhooks", "secret", "get", "--json"], { env });
    assert.equal(first.code, 0, first.stderr);
    const a = JSON.parse(first.stdout);
    assert.deepEqual(Object.keys(a).sort(), [
      "created_at",
      "previous_secret",
      "previous_valid_until",
      "rotated_at",
      "secret",
    ]);
    assert.match(a.secret, /^whsec_/);
    // the very secret the service signs with
    const api = createClient({ baseUrl: svc.url, apiKey: admin });
    assert.equal((await api.getWebhookSecret()).secret, a.secret);

    const rotated = await runCli(["webhooks", "secret", "rotate", "--json"], { env });
    assert.equal(rotated.code, 0, rotated.stderr);
    const r = JSON.parse(rotated.stdout);
    assert.notEqual(r.secret, a.secret);
    assert.equal(r.previous_secret, a.secret);
    assert.equal((await api.getWebhookSecret()).secret, r.secret);

    const text = await runCli(["webhooks", "secret", "get"], { env });
    assert.equal(text.code, 0, text.stderr);
    assert.match(text.stdout, new RegExp(`^secret +${r.secret.replace(/[+/]/g, "\\$&")}$`, "m"));
    assert.match(text.stdout, new RegExp(`^previous_secret +${a.secret.replace(/[+/]/g, "\\$&")}$`, "m"));
    assert.match(text.stdout, /^previous_valid_until +\d{4}-\d\d-\d\dT/m);

    // another project's key sees its own secret
    const other = await runCli(["webhooks", "secret", "get", "--json"], {
      env: { ...env, SVC_API_KEY: await svc.key("proj_other") },
    });
    assert.notEqual(JSON.parse(other.stdout).secret, r.secret);
    // the secret is a credential: api_keys:write only
    const reader = await runCli(["webhooks", "secret", "get"], {
      env: { ...env, SVC_API_KEY: await svc.key("proj_hooks", ["sessions:read", "api_keys:read"]) },
    });
    assert.equal(reader.code, 1);
    assert.equal(reader.stdout, "");
    assert.match(reader.stderr, /^error: SVC_AUTH_MISSING_SCOPE: /m);

    // no key: a usage error, not a secret from some KV file; --project is gone (the key decides)
    const noKey = await runCli(["webhooks", "secret", "get"], {
      env: { SVC_API_URL: svc.url, SVC_KV: strayKv },
    });
    assert.equal(noKey.code, 2);
    assert.match(noKey.stderr, /no API key/);
    const project = await runCli(["webhooks", "secret", "get", "--project", "proj_hooks"], { env });
    assert.equal(project.code, 2);
    assert.match(project.stderr, /Unknown option '--project'/);
    assert.equal((await runCli(["webhooks", "secret", "drop"], { env })).code, 2);
    assert.equal(
      await Deno.stat(strayKv).then(() => true, () => false),
      false,
      "no KV file was created",
    );
  } finally {
    await svc.close();
    await Deno.remove(dir, { recursive: true });
  }
});
