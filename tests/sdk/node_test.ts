/**
 * The SDK as an npm package in Node 20+: an ESM program imports it by its package name (through
 * `sdk/package.json`'s export map) and drives a running service; a TypeScript program gets its types
 * through the same map (`tsc` with `nodenext` resolution).
 */
import assert from "node:assert/strict";
import { installSdk } from "../../testing/npm_package.ts";
import { startTestService } from "../../testing/service.ts";

const NODE_PROGRAM = `
import { ApiError, createClient, newIdempotencyKey } from "@PKG@";

const client = createClient({ baseUrl: process.env.SVC_URL, apiKey: process.env.SVC_KEY, retry: true });
const body = JSON.parse(process.env.ENGINE_BODY);
const key = newIdempotencyKey();
const created = await client.createSession(body, { idempotencyKey: key });
const replayed = await client.createSession(body, { idempotencyKey: key });
const got = await client.getSession(created.session_id);
const token = await client.createClientToken(created.session_id);
const ended = await client.endSession(created.session_id, { force: true });
const keys = await client.listApiKeys();
let failure = null;
try {
  // Another session's id: the last character changed (an id that already ends in "Z" gets a "Y").
  const other = created.session_id.slice(0, -1) + (created.session_id.endsWith("Z") ? "Y" : "Z");
  await client.getSession(other);
} catch (err) {
  failure = { instance: err instanceof ApiError, name: err.name, code: err.code, status: err.status, requestId: err.requestId };
}
console.log(JSON.stringify({
  node: process.versions.node,
  created: created.status,
  sameSession: replayed.session_id === created.session_id,
  got: got.status,
  tokenTransport: token.transport,
  ended: ended.status,
  keys: keys.data.length,
  failure,
}));
`;

Deno.test("sdk in Node (ESM): imported by package name, it drives a running service", async () => {
  const dir = await Deno.makeTempDir({ prefix: "sdk_node_" });
  const svc = await startTestService();
  try {
    const name = await installSdk(dir);
    await Deno.writeTextFile(`${dir}/program.mjs`, NODE_PROGRAM.replace("@PKG@", name));
    const out = await new Deno.Command("node", {
      args: ["program.mjs"],
      cwd: dir,
      env: {
        SVC_URL: svc.url,
        SVC_KEY: await svc.key("proj_node"),
        ENGINE_BODY: JSON.stringify(svc.engineBody()),
      },
      stdout: "piped",
      stderr: "piped",
    }).output();
    const stderr = new TextDecoder().decode(out.stderr);
    assert.equal(out.code, 0, stderr);
    const result = JSON.parse(new TextDecoder().decode(out.stdout));
    assert.ok(Number(result.node.split(".")[0]) >= 20, `node ${result.node}`);
    assert.deepEqual({ ...result, node: undefined }, {
      node: undefined,
      created: "active",
      sameSession: true,
      got: "active",
      tokenTransport: "websocket_fmp4",
      ended: "ended",
      keys: 1,
      failure: {
        instance: true,
        name: "ApiError",
        code: "SVC_SESSION_NOT_FOUND",
        status: 404,
        requestId: result.failure?.requestId,
      },
    });
    assert.match(result.failure.requestId, /^[0-9a-f-]{36}$/);
  } finally {
    await svc.close();
    await Deno.remove(dir, { recursive: true });
  }
});

const TS_PROGRAM = `
import { ApiError, type Client, type CreatedSession, createClient } from "@PKG@";

const client: Client = createClient({ baseUrl: "https://svc.example", apiKey: "svc_sk_x", retry: { maxAttempts: 2 } });
export async function start(): Promise<CreatedSession> {
  try {
    return await client.createSession({
      provider_type: "external_engine",
      provider_config: { external_engine: { url: "wss://engine.example/v0", auth_headers: {} } },
    });
  } catch (err) {
    if (err instanceof ApiError) console.error(err.code, err.requestId, err.retryAfter);
    throw err;
  }
}
// @ts-expect-error an unknown scope is a type error for npm users too
client.createApiKey({ name: "x", scopes: ["root"] });
`;

Deno.test("sdk for TypeScript on Node: the export map's types resolve (tsc, nodenext, strict)", async () => {
  const dir = await Deno.makeTempDir({ prefix: "sdk_tsc_" });
  try {
    const name = await installSdk(dir);
    await Deno.writeTextFile(`${dir}/package.json`, JSON.stringify({ type: "module" }));
    await Deno.writeTextFile(`${dir}/program.ts`, TS_PROGRAM.replace("@PKG@", name));
    await Deno.writeTextFile(
      `${dir}/tsconfig.json`,
      JSON.stringify({
        compilerOptions: {
          strict: true,
          module: "nodenext",
          moduleResolution: "nodenext",
          target: "es2022",
          lib: ["es2022", "dom"],
          noEmit: true,
        },
        files: ["program.ts"],
      }),
    );
    const out = await new Deno.Command(Deno.execPath(), {
      args: ["run", "-A", "npm:typescript@5.9.3/bin/tsc", "-p", dir],
      cwd: dir,
      stdout: "piped",
      stderr: "piped",
    }).output();
    const text = new TextDecoder().decode(out.stdout) + new TextDecoder().decode(out.stderr);
    assert.equal(out.code, 0, text);
    // the check is real: a type error in the program fails it
    await Deno.writeTextFile(
      `${dir}/program.ts`,
      `${TS_PROGRAM.replace("@PKG@", name)}\nclient.getSession(42);\n`,
    );
    const broken = await new Deno.Command(Deno.execPath(), {
      args: ["run", "-A", "npm:typescript@5.9.3/bin/tsc", "-p", dir],
      cwd: dir,
      stdout: "piped",
      stderr: "piped",
    }).output();
    assert.notEqual(broken.code, 0);
    assert.match(new TextDecoder().decode(broken.stdout), /TS2345/);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
