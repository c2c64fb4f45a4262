/**
 * `avatars create|list|get|preview|delete` as a subprocess against a running service, with a key minted by
 * `admin bootstrap` (which holds the avatars scopes): JSON answers as the API's, the PNG written, refusals
 * with their exit code.
 */
import assert from "node:assert/strict";
import { runCli } from "../../testing/cli.ts";
import { startTestService } from "../../testing/service.ts";

Deno.test("cli avatars: create from a style and a drawing, list, get, preview -o, delete; --json everywhere", async () => {
  const svc = await startTestService();
  const dir = await Deno.makeTempDir();
  try {
    const boot = await runCli(["admin", "bootstrap", "--project", "proj_av", "--name", "ops", "--json"], {
      env: { SVC_KV: svc.kvPath },
    });
    assert.equal(boot.code, 0, boot.stderr);
    const env = { SVC_API_URL: svc.url, SVC_API_KEY: JSON.parse(boot.stdout).api_key };
    await Deno.writeTextFile(`${dir}/style.json`, JSON.stringify({ hair_style: "long", glasses: "round" }));
    await Deno.writeTextFile(
      `${dir}/face.svg`,
      `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 100 100"><circle cx="50" cy="50" r="40" fill="#e0a030"/><ellipse id="mouth" cx="50" cy="68" rx="12" ry="6" fill="#902030"/></svg>`,
    );
    await Deno.writeTextFile(`${dir}/bad.json`, JSON.stringify({ hair: "long" }));

    const style = await runCli([
      "avatars",
      "create",
      "--name",
      "Styled",
      "--style",
      `${dir}/style.json`,
      "--json",
    ], {
      env,
    });
    assert.equal(style.code, 0, style.stderr);
    const a = JSON.parse(style.stdout);
    assert.match(a.avatar_id, /^av_/);
    assert.equal(a.source, "style");
    const drawn = await runCli(["avatars", "create", "--name", "Drawn", "--svg", `${dir}/face.svg`], { env });
    assert.equal(drawn.code, 0, drawn.stderr);
    assert.match(drawn.stdout, /^source +svg$/m);
    const bad = await runCli(["avatars", "create", "--name", "Bad", "--style", `${dir}/bad.json`], { env });
    assert.notEqual(bad.code, 0);
    assert.match(bad.stderr, /400|hair/);
    const usage = await runCli(["avatars", "create", "--name", "X"], { env });
    assert.notEqual(usage.code, 0);
    assert.match(usage.stderr, /--style|--svg/);

    const list = await runCli(["avatars", "list", "--json"], { env });
    assert.equal(list.code, 0, list.stderr);
    assert.equal(JSON.parse(list.stdout).data.length, 2);
    const table = await runCli(["avatars", "list"], { env });
    assert.match(table.stdout, /Styled/);
    const got = await runCli(["avatars", "get", a.avatar_id, "--json"], { env });
    assert.deepEqual(JSON.parse(got.stdout), a);

    const png = `${dir}/aa.png`;
    const preview = await runCli(["avatars", "preview", a.avatar_id, "--viseme", "aa", "-o", png, "--json"], {
      env,
    });
    assert.equal(preview.code, 0, preview.stderr);
    const bytes = await Deno.readFile(png);
    assert.deepEqual([...bytes.slice(1, 4)], [0x50, 0x4e, 0x47]);
    assert.equal(JSON.parse(preview.stdout).bytes, bytes.length);

    const del = await runCli(["avatars", "delete", a.avatar_id, "--json"], { env });
    assert.equal(del.code, 0, del.stderr);
    assert.deepEqual(JSON.parse(del.stdout), { avatar_id: a.avatar_id, deleted: true });
    const gone = await runCli(["avatars", "get", a.avatar_id], { env });
    assert.notEqual(gone.code, 0);
    assert.match(gone.stderr, /SVC_AVATAR_NOT_FOUND/);
  } finally {
    await Deno.remove(dir, { recursive: true });
    await svc.close();
  }
});
