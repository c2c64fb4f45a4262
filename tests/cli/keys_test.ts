/**
 * `keys create|list|revoke` as a subprocess against a running service, with the first key minted by
 * `admin bootstrap`: tables and exact JSON, exit codes, and that no key plaintext is printed except by
 * `keys create` and `admin bootstrap`.
 */
import assert from "node:assert/strict";
import { type CliResult, runCli } from "../../testing/cli.ts";
import { startTestService } from "../../testing/service.ts";

const KEY = /svc_sk_[A-Za-z0-9]{38}/g;

Deno.test("cli keys: create, list and revoke over the API; plaintext only from create and bootstrap", async () => {
  const svc = await startTestService();
  const quiet: CliResult[] = []; // every run that must not print a plaintext
  const plaintexts: string[] = [];
  try {
    const boot = await runCli(["admin", "bootstrap", "--project", "proj_cli", "--name", "ops", "--json"], {
      env: { SVC_KV: svc.kvPath },
    });
    assert.equal(boot.code, 0, boot.stderr);
    const admin = JSON.parse(boot.stdout);
    plaintexts.push(admin.api_key);
    const env = { SVC_API_URL: svc.url, SVC_API_KEY: admin.api_key };

    // create, JSON: exactly the API's answer
    const created = await runCli([
      "keys",
      "create",
      "--name",
      "dashboard",
      "--scope",
      "sessions:read",
      "--json",
    ], {
      env,
    });
    assert.equal(created.code, 0, created.stderr);
    assert.equal(created.stderr, "");
    const dashboard = JSON.parse(created.stdout);
    assert.deepEqual(Object.keys(dashboard).sort(), ["api_key", "created_at", "key_id", "name", "scopes"]);
    assert.deepEqual([dashboard.name, dashboard.scopes], ["dashboard", ["sessions:read"]]);
    plaintexts.push(dashboard.api_key);

    // create, table (with the flags instead of the environment): the plaintext once, on its own line
    const table = await runCli([
      "keys",
      "create",
      "--name",
      "ci",
      "--api-url",
      svc.url,
      "--api-key",
      admin.api_key,
    ]);
    assert.equal(table.code, 0, table.stderr);
    const ci = /^API key \(shown once, store it now\): (svc_sk_\S+)$/m.exec(table.stdout)![1];
    plaintexts.push(ci);
    assert.match(table.stdout, /^key_id +svc_key_\S+$/m);
    assert.match(
      table.stdout,
      /^scopes +sessions:read, sessions:write, api_keys:read, api_keys:write, avatars:read, avatars:write$/m,
    );
    assert.equal(table.stdout.match(KEY)?.length, 1);

    // list, JSON and table
    const listed = await runCli(["keys", "list", "--json"], { env });
    quiet.push(listed);
    assert.equal(listed.code, 0, listed.stderr);
    const page = JSON.parse(listed.stdout);
    assert.deepEqual(Object.keys(page), ["data", "has_more"]);
    assert.equal(page.data.length, 3);
    assert.equal(page.has_more, false);
    // newest first (the API pages in key_id order: random)
    assert.deepEqual(page.data.map((k: { name: string }) => k.name), ["ci", "dashboard", "ops"]);
    const listTable = await runCli(["keys", "list"], { env });
    quiet.push(listTable);
    assert.match(listTable.stdout, /KEY ID.*NAME.*SCOPES.*STATUS.*CREATED.*REVOKED.*HINT/);
    for (const k of page.data) {
      assert.ok(listTable.stdout.includes(k.key_id));
      assert.ok(listTable.stdout.includes(`…${k.hint}`));
    }
    const rows = page.data.map((k: { key_id: string }) => listTable.stdout.indexOf(k.key_id));
    assert.deepEqual(rows, [...rows].sort((a, b) => a - b), "the table is newest first too");

    // paging
    const first = await runCli(["keys", "list", "--limit", "1", "--json"], { env });
    quiet.push(first);
    assert.deepEqual([JSON.parse(first.stdout).data.length, JSON.parse(first.stdout).has_more], [1, true]);
    assert.equal(JSON.parse(first.stdout).data[0].name, "ci", "the newest");
    const firstTable = await runCli(["keys", "list", "--limit", "1"], { env });
    quiet.push(firstTable);
    assert.match(firstTable.stdout, /More keys: --starting-after svc_key_\S+ \(or --all\)/);
    const all = await runCli(["keys", "list", "--limit", "1", "--all", "--json"], { env });
    quiet.push(all);
    assert.deepEqual(
      JSON.parse(all.stdout).data.map((k: { key_id: string }) => k.key_id),
      page.data.map((k: { key_id: string }) => k.key_id),
    );
    assert.equal(JSON.parse(all.stdout).has_more, false);
    const after = await runCli(["keys", "list", "--starting-after", page.data[0].key_id, "--json"], { env });
    quiet.push(after);
    assert.deepEqual(JSON.parse(after.stdout).data.map((k: { name: string }) => k.name), [
      "dashboard",
      "ops",
    ]);
    const nowhere = await runCli(["keys", "list", "--starting-after", "svc_key_AAAAAAAAAAAAAAAAAAAAAA"], {
      env,
    });
    quiet.push(nowhere);
    assert.equal(nowhere.code, 2);
    assert.match(nowhere.stderr, /--starting-after names no key of this project/);

    // revoke (idempotent), JSON and table
    const revoked = await runCli(["keys", "revoke", dashboard.key_id, "--json"], { env });
    quiet.push(revoked);
    assert.equal(revoked.code, 0, revoked.stderr);
    const rev = JSON.parse(revoked.stdout);
    assert.deepEqual(Object.keys(rev).sort(), ["key_id", "revoked_at", "status"]);
    assert.equal(rev.status, "revoked");
    const again = await runCli(["keys", "revoke", dashboard.key_id], { env });
    quiet.push(again);
    assert.equal(again.code, 0);
    assert.match(again.stdout, new RegExp(`^revoked_at +${new Date(rev.revoked_at).toISOString()}$`, "m"));

    // API errors: exit 1 with code, message and request id on stderr, nothing on stdout
    const unknown = await runCli(["keys", "revoke", "svc_key_AAAAAAAAAAAAAAAAAAAAAA"], { env });
    quiet.push(unknown);
    assert.equal(unknown.code, 1);
    assert.equal(unknown.stdout, "");
    assert.match(unknown.stderr, /^error: SVC_API_KEY_NOT_FOUND: No such API key\.$/m);
    assert.match(unknown.stderr, /^ {2}request_id: [0-9a-f-]{36}$/m);
    assert.match(unknown.stderr, /^ {2}doc_url: https:\/\/\S+#svc_api_key_not_found$/m);
    const revokedKey = await runCli(["keys", "list"], { env: { ...env, SVC_API_KEY: dashboard.api_key } });
    quiet.push(revokedKey);
    assert.equal(revokedKey.code, 1);
    assert.match(revokedKey.stderr, /SVC_AUTH_INVALID_KEY/);
    const reader = await runCli(["keys", "create", "--name", "x", "--scope", "sessions:read"], {
      env: { ...env, SVC_API_KEY: ci },
    });
    assert.equal(reader.code, 0, "ci holds every scope");
    const writerOnly = await runCli(
      ["keys", "create", "--name", "w", "--scope", "api_keys:write", "--json"],
      {
        env,
      },
    );
    const escalate = await runCli(["keys", "create", "--name", "x", "--json"], {
      env: { ...env, SVC_API_KEY: JSON.parse(writerOnly.stdout).api_key },
    });
    quiet.push(escalate);
    assert.equal(escalate.code, 1);
    assert.match(escalate.stderr, /SVC_AUTH_FORBIDDEN/);

    for (const run of quiet) {
      const printed = run.stdout + run.stderr;
      assert.equal(printed.match(KEY), null, `a plaintext was printed:\n${printed}`);
      for (const p of plaintexts) assert.ok(!printed.includes(p));
    }
    assert.ok(!svc.logs.join("\n").match(KEY), "the service never logs a key");
  } finally {
    await svc.close();
  }
});
