/**
 * `sdk/` as a package: its two manifests (`deno.json` for Deno/JSR, `package.json` for npm) agree and
 * point at files that exist; a Deno program imports it by name through a workspace and drives a running
 * service; `deno publish --dry-run` accepts it; its implementation matches its declarations; and every
 * hand-written export (SDK declarations, CLI modules) carries JSDoc.
 */
import assert from "node:assert/strict";
import type * as ClientDecl from "../../sdk/client.d.ts";
import type * as ErrorDecl from "../../sdk/api_error.d.ts";
import type * as RetryDecl from "../../sdk/retry.d.ts";
import type * as KeyDecl from "../../sdk/idempotency_key.d.ts";
import * as ClientImpl from "../../sdk/client.js";
import * as ErrorImpl from "../../sdk/api_error.js";
import * as RetryImpl from "../../sdk/retry.js";
import * as KeyImpl from "../../sdk/idempotency_key.js";
import { startTestService } from "../../testing/service.ts";

const ROOT = new URL("../../", import.meta.url);
const SDK = new URL("sdk/", ROOT);

// Compile-time conformance: each implementation is assignable to its declaration (deno test type-checks).
const conformance = {
  createClient: ClientImpl.createClient satisfies typeof ClientDecl.createClient,
  ApiError: ErrorImpl.ApiError satisfies typeof ErrorDecl.ApiError,
  errorFromAnswer: ErrorImpl.errorFromAnswer satisfies typeof ErrorDecl.errorFromAnswer,
  networkError: ErrorImpl.networkError satisfies typeof ErrorDecl.networkError,
  invalidResponse: ErrorImpl.invalidResponse satisfies typeof ErrorDecl.invalidResponse,
  parseRetryAfter: ErrorImpl.parseRetryAfter satisfies typeof ErrorDecl.parseRetryAfter,
  DEFAULT_RETRY: RetryImpl.DEFAULT_RETRY satisfies typeof RetryDecl.DEFAULT_RETRY,
  resolveRetryPolicy: RetryImpl.resolveRetryPolicy satisfies typeof RetryDecl.resolveRetryPolicy,
  retryDelay: RetryImpl.retryDelay satisfies typeof RetryDecl.retryDelay,
  withRetry: RetryImpl.withRetry satisfies typeof RetryDecl.withRetry,
  sleep: RetryImpl.sleep satisfies typeof RetryDecl.sleep,
  newIdempotencyKey: KeyImpl.newIdempotencyKey satisfies typeof KeyDecl.newIdempotencyKey,
  isValidIdempotencyKey: KeyImpl.isValidIdempotencyKey satisfies typeof KeyDecl.isValidIdempotencyKey,
};

Deno.test("sdk package: each module exports exactly what its declaration file declares", async () => {
  const declared = async (file: string) => {
    const text = await Deno.readTextFile(new URL(file, SDK));
    return [...text.matchAll(/^export declare (?:const|function|class) (\w+)/gm)].map((m) => m[1]).sort();
  };
  for (
    const [file, impl] of [
      ["client", ClientImpl],
      ["api_error", ErrorImpl],
      ["retry", RetryImpl],
      ["idempotency_key", KeyImpl],
      ["mod", await import("../../sdk/mod.js")],
    ] as const
  ) {
    assert.deepEqual(Object.keys(impl).sort(), await declared(`${file}.d.ts`), file);
  }
  assert.equal(Object.keys(conformance).length, 13);
});

Deno.test("sdk package: deno.json and package.json agree and their export targets exist", async () => {
  const denoJson = JSON.parse(
    await Deno.readTextFile(new URL("deno.json", SDK)).then((t) => t.replace(/^\s*\/\/.*$/gm, "")),
  );
  const packageJson = JSON.parse(await Deno.readTextFile(new URL("package.json", SDK)));
  const rootJson = JSON.parse(await Deno.readTextFile(new URL("deno.json", ROOT)));
  assert.equal(denoJson.name, packageJson.name);
  assert.equal(denoJson.version, packageJson.version);
  assert.equal(packageJson.type, "module");
  const range = packageJson.dependencies["openapi-fetch"];
  assert.equal(denoJson.imports["openapi-fetch"], `npm:openapi-fetch@${range}`);
  assert.equal(rootJson.imports["openapi-fetch"], `npm:openapi-fetch@${range}`);
  const browserJson = JSON.parse(
    await Deno.readTextFile(new URL("../tests/sdk/browser.deno.json", SDK)).then((t) =>
      t.replace(/^\s*\/\/.*$/gm, "")
    ),
  );
  assert.equal(browserJson.imports["openapi-fetch"], `npm:openapi-fetch@${range}`);
  // every subpath of the package is mapped the same way at the root (the CLI and tests import by name)
  for (const subpath of Object.keys(denoJson.exports as Record<string, string>)) {
    const name = subpath === "." ? "@avatar-svc/sdk" : `@avatar-svc/sdk/${subpath.slice(2)}`;
    assert.equal(
      rootJson.imports[name],
      `./sdk/${(denoJson.exports as Record<string, string>)[subpath].slice(2)}`,
    );
  }
  const exists = (path: string) => Deno.stat(new URL(path, SDK)).then(() => true, () => false);
  for (const [subpath, target] of Object.entries(denoJson.exports as Record<string, string>)) {
    assert.ok(await exists(target), `deno.json ${subpath} → ${target}`);
  }
  for (const [subpath, target] of Object.entries(packageJson.exports as Record<string, unknown>)) {
    if (target === null) continue; // a reserved slot (./player until the browser player lands)
    const files = typeof target === "string" ? [target] : Object.values(target as Record<string, string>);
    for (const file of files) assert.ok(await exists(file), `package.json ${subpath} → ${file}`);
  }
  assert.equal(packageJson.exports["."].types, "./mod.d.ts");
  assert.equal(packageJson.exports["."].default, denoJson.exports["."]);
  const self = await Deno.readTextFile(new URL("mod.js", SDK));
  assert.match(self, /@ts-self-types="\.\/mod\.d\.ts"/, "Deno finds the entry's types");
});

Deno.test("sdk package: a Deno program imports it by name (workspace) and JSR's checks accept it", async () => {
  const dir = await Deno.makeTempDir({ prefix: "sdk_deno_" });
  const svc = await startTestService();
  try {
    await Deno.mkdir(`${dir}/sdk`);
    for await (const e of Deno.readDir(SDK)) {
      if (e.isFile) await Deno.copyFile(new URL(e.name, SDK), `${dir}/sdk/${e.name}`);
    }
    await Deno.writeTextFile(`${dir}/deno.json`, JSON.stringify({ workspace: ["./sdk"] }));
    const name = JSON.parse(await Deno.readTextFile(new URL("package.json", SDK))).name;
    await Deno.writeTextFile(
      `${dir}/main.ts`,
      `import { ApiError, type Session, createClient } from "${name}";
const client = createClient({ baseUrl: Deno.env.get("SVC_URL")!, apiKey: Deno.env.get("SVC_KEY")! });
const body = JSON.parse(Deno.env.get("ENGINE_BODY")!);
const created = await client.createSession(body);
const got: Session = await client.getSession(created.session_id);
await client.endSession(created.session_id, { force: true });
const err = await client.endSession(created.session_id).catch((e) => e);
console.log(JSON.stringify({ status: got.status, error: err instanceof ApiError ? err.code : String(err) }));
`,
    );
    const run = (args: string[], cwd: string, env: Record<string, string> = {}) =>
      new Deno.Command(Deno.execPath(), { args, cwd, env, stdout: "piped", stderr: "piped" }).output();
    const env = {
      SVC_URL: svc.url,
      SVC_KEY: await svc.key("proj_deno"),
      ENGINE_BODY: JSON.stringify(svc.engineBody()),
    };
    const out = await run(["run", "--check", "-A", "main.ts"], dir, env);
    assert.equal(out.code, 0, new TextDecoder().decode(out.stderr));
    assert.deepEqual(JSON.parse(new TextDecoder().decode(out.stdout)), {
      status: "active",
      error: "SVC_SESSION_ENDED",
    });
    const publish = await run(["publish", "--dry-run", "--allow-dirty"], `${dir}/sdk`);
    const text = new TextDecoder().decode(publish.stdout) + new TextDecoder().decode(publish.stderr);
    assert.equal(publish.code, 0, text);
    assert.match(text, /Dry run complete/);
  } finally {
    await svc.close();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("sdk docs: the README's examples and the JSDoc examples type-check", async () => {
  // Server-side parts with the project's configuration; the browser parts (the player and the README's
  // frontend example) with the DOM libraries.
  const runs: string[][] = [
    [
      "sdk/mod.d.ts",
      "sdk/client.d.ts",
      "sdk/api_error.d.ts",
      "sdk/idempotency_key.d.ts",
      "sdk/webhooks.d.ts",
    ],
    [
      "--config",
      "tests/sdk/browser.deno.json",
      "sdk/README.md",
      "sdk/player.js",
      "sdk/player.d.ts",
      "sdk/player_webrtc.js",
      "sdk/player_webrtc.d.ts",
    ],
  ];
  for (const files of runs) {
    const out = await new Deno.Command(Deno.execPath(), {
      args: ["check", "--doc", ...files],
      cwd: ROOT,
      env: { NO_COLOR: "1" },
      stdout: "piped",
      stderr: "piped",
    }).output();
    const text = new TextDecoder().decode(out.stdout) + new TextDecoder().decode(out.stderr);
    assert.equal(out.code, 0, text);
  }
  const readme = await Deno.readTextFile(new URL("README.md", SDK));
  assert.equal(
    (readme.match(/^```ts$/gm) ?? []).length,
    3,
    "the backend, provider and webhook examples are ts blocks",
  );
  assert.equal((readme.match(/^```js$/gm) ?? []).length, 1, "the page's script is a js block");
});

Deno.test("sdk and cli: every hand-written export has JSDoc (deno doc --lint)", async () => {
  const files: string[] = [];
  for (const dir of ["cli", "cli/commands"]) {
    for await (const e of Deno.readDir(new URL(dir, ROOT))) {
      if (e.name.endsWith(".ts")) files.push(`${dir}/${e.name}`);
    }
  }
  for await (const e of Deno.readDir(SDK)) {
    if (e.name.endsWith(".d.ts") && e.name !== "schema.d.ts" && e.name !== "mod.d.ts") {
      files.push(`sdk/${e.name}`);
    }
  }
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["doc", "--lint", ...files.sort()],
    cwd: ROOT,
    env: { NO_COLOR: "1" },
    stdout: "piped",
    stderr: "piped",
  }).output();
  const text = new TextDecoder().decode(out.stdout) + new TextDecoder().decode(out.stderr);
  // References to the generated schema and to openapi-fetch's types are public through mod.d.ts.
  const problems = text.split("\n").filter((l) =>
    /^error\[/.test(l) && !l.startsWith("error[private-type-ref]")
  );
  assert.deepEqual(problems, [], text);
  assert.ok(files.length >= 20, `${files.length} files linted`);
});
