import assert from "node:assert/strict";
import { parseEngineArgs } from "../../engine/cli.ts";
import { TestClient } from "./_helpers.ts";

const ROOT = new URL("../../", import.meta.url).pathname;

Deno.test("cli: defaults", () => {
  assert.deepEqual(parseEngineArgs([]), {
    kind: "run",
    options: {
      host: "127.0.0.1",
      port: 8788,
      path: "/v0",
      token: null,
      tlsDir: ".data/reference-engine",
      mode: "answer",
      greeting: undefined,
      demoTool: null,
      voice: "en-us",
      outputRate: 24000,
      authFailure: "http_401",
    },
  });
});

Deno.test("cli: every option", () => {
  const parsed = parseEngineArgs([
    "--host=0.0.0.0",
    "--port",
    "9000",
    "--path",
    "/engine",
    "--token",
    "abc",
    "--tls-dir",
    "/tmp/x",
    "--mode",
    "echo",
    "--greeting",
    "Hi there",
    "--voice",
    "en-gb",
    "--output-rate",
    "16000",
    "--auth-failure",
    "close_4001",
    "--demo-tool",
    "get_local_time",
  ]);
  assert.deepEqual(parsed, {
    kind: "run",
    options: {
      host: "0.0.0.0",
      port: 9000,
      path: "/engine",
      token: "abc",
      tlsDir: "/tmp/x",
      mode: "echo",
      greeting: "Hi there",
      demoTool: "get_local_time",
      voice: "en-gb",
      outputRate: 16000,
      authFailure: "close_4001",
    },
  });
  const none = parseEngineArgs(["--no-greeting"]);
  assert.equal(none.kind === "run" && none.options.greeting, null);
  assert.deepEqual(parseEngineArgs(["--help"]), { kind: "help" });
});

Deno.test("cli: usage errors", () => {
  for (
    const args of [
      ["--port", "abc"],
      ["--port", "70000"],
      ["--mode", "chat"],
      ["--output-rate", "96000"],
      ["--greeting", "x", "--no-greeting"],
      ["--path", "v0"],
      ["--bogus"],
      ["positional"],
      ["--token", "has space"],
      ["--auth-failure", "403"],
      ["--demo-tool", "two words"],
      ["--demo-tool", ""],
    ]
  ) {
    const parsed = parseEngineArgs(args);
    assert.equal(parsed.kind, "error", args.join(" "));
    assert.ok(parsed.kind === "error" && !parsed.message.includes("\n"));
  }
});

async function readLines(
  stream: ReadableStream<Uint8Array>,
  count: number,
  timeoutMs: number,
): Promise<string[]> {
  const reader = stream.pipeThrough(new TextDecoderStream()).getReader();
  let text = "";
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new Error(`no ${count} lines within ${timeoutMs} ms: ${text}`)),
      timeoutMs,
    );
  });
  try {
    while (text.split("\n").length <= count) {
      const { value, done } = await Promise.race([reader.read(), timeout]);
      if (done) break;
      text += value;
    }
    return text.split("\n").slice(0, count);
  } finally {
    clearTimeout(timer);
    await reader.cancel();
  }
}

Deno.test("cli: deno task engine serves, prints where things are, and stops cleanly on SIGTERM", async () => {
  const dir = await Deno.makeTempDir();
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", "engine/main.ts", "--port", "0", "--tls-dir", `${dir}/tls`, "--no-greeting"],
    cwd: ROOT,
    stdout: "piped",
    stderr: "piped",
    stdin: "null",
  }).spawn();
  const stderr = new Response(child.stderr).text();
  let client: TestClient | null = null;
  try {
    const lines = await readLines(child.stdout, 3, 30_000);
    const url = lines[0].match(/listening on (wss:\/\/localhost:\d+\/v0)$/)?.[1];
    assert.ok(url, lines[0]);
    assert.equal(lines[1], `CA certificate to trust: ${dir}/tls/ca.pem (SVC_ENGINE_CA_FILE)`);
    assert.equal(lines[2], `bearer token: stored in ${dir}/tls/token`);
    const token = (await Deno.readTextFile(`${dir}/tls/token`)).trim();
    assert.equal((await Deno.stat(`${dir}/tls/token`)).mode! & 0o777, 0o600);

    client = TestClient.connect(url, { caPem: await Deno.readTextFile(`${dir}/tls/ca.pem`), token });
    assert.equal(await client.opened, true);
    client.start(16000);
    await client.next("session.ready");

    child.kill("SIGTERM");
    assert.equal((await client.waitClosed()).code, 1001);
    const status = await child.status;
    assert.equal(status.code, 0);
    const logs = await stderr;
    assert.match(logs, /"event":"session_ready"/);
    assert.ok(!logs.includes(token), "the token is never logged");
  } finally {
    await client?.dispose();
    try {
      child.kill("SIGKILL");
    } catch {
      // already exited
    }
    await child.status;
    await stderr.catch(() => "");
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("cli: a usage error exits 2 with one line", async () => {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", "engine/main.ts", "--mode", "chat"],
    cwd: ROOT,
    stdout: "piped",
    stderr: "piped",
  }).output();
  assert.equal(out.code, 2);
  const stderr = new TextDecoder().decode(out.stderr).trim();
  assert.equal(stderr, "engine: --mode must be answer or echo (see --help)");
  assert.equal(out.stdout.length, 0);
});
