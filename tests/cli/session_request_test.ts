/**
 * How `sessions create` turns flags and a `--config` object into the request body (unit), and the body it
 * actually sends (the CLI run in-process with an injected fetch in front of the app).
 */
import assert from "node:assert/strict";
import { run } from "../../cli/main.ts";
import type { Io } from "../../cli/io.ts";
import { buildSessionRequest, parseConfigText, parseHeaders } from "../../cli/session_request.ts";
import { UsageError } from "../../cli/usage_error.ts";
import { createHarness } from "../../testing/harness.ts";
import { startFakeEngine } from "../../testing/fake_engine.ts";
import { testTls } from "../../testing/fixtures.ts";

const SECRET = "s3cret-value-41";

Deno.test("session request: provider flags fill provider_config[provider_type]", () => {
  assert.deepEqual(
    buildSessionRequest({
      provider: "external_engine",
      engineUrl: "wss://engine.test/v0",
      engineHeaders: ["Authorization: Bearer abc", "X-Tenant:  t1 "],
      sampleRate: "16000",
      avatar: "ben",
      bg: "office",
      transport: "websocket_fmp4",
      webhookUrl: "https://hooks.test/a",
    }),
    {
      provider_type: "external_engine",
      provider_config: {
        external_engine: {
          url: "wss://engine.test/v0",
          auth_headers: { Authorization: "Bearer abc", "X-Tenant": "t1" },
          user_sample_rate: 16000,
        },
      },
      avatar_config: { avatar_id: "ben", bg_id: "office" },
      transport: "websocket_fmp4",
      webhook_url: "https://hooks.test/a",
    },
  );
  assert.deepEqual(buildSessionRequest({ provider: "vendor1_realtime", clientSecret: "cs" }), {
    provider_type: "vendor1_realtime",
    provider_config: { vendor1_realtime: { client_secret: "cs" } },
  });
  assert.deepEqual(buildSessionRequest({ provider: "vendor2", accessToken: "at", agentId: "ag" }), {
    provider_type: "vendor2",
    provider_config: { vendor2: { access_token: "at", agent_id: "ag" } },
  });
  assert.deepEqual(
    buildSessionRequest({ provider: "vendor3", agentId: "ag", providerApiKey: "k", signedUrl: "wss://x" }),
    {
      provider_type: "vendor3",
      provider_config: { vendor3: { agent_id: "ag", api_key: "k", signed_url: "wss://x" } },
    },
  );
  // external_engine always has auth_headers (the service requires the field)
  assert.deepEqual(
    buildSessionRequest({ provider: "external_engine", engineUrl: "wss://e" }).provider_config,
    {
      external_engine: { url: "wss://e", auth_headers: {} },
    },
  );
});

Deno.test("session request: flags apply on top of the --config object", () => {
  const file = {
    provider_type: "external_engine",
    provider_config: {
      external_engine: { url: "wss://file/v0", auth_headers: { authorization: "Bearer old", "X-Keep": "1" } },
    },
    avatar_config: { avatar_id: "kai", bg_id: "sunset" },
    transport: "auto",
  };
  assert.deepEqual(
    buildSessionRequest({ engineHeaders: ["Authorization: Bearer new"], bg: "office" }, file),
    {
      ...file,
      provider_config: {
        external_engine: {
          url: "wss://file/v0",
          auth_headers: { "X-Keep": "1", Authorization: "Bearer new" },
        },
      },
      avatar_config: { avatar_id: "kai", bg_id: "office" },
    },
  );
  assert.deepEqual(file.provider_config.external_engine.auth_headers, {
    authorization: "Bearer old",
    "X-Keep": "1",
  });
  assert.throws(
    () => buildSessionRequest({ provider: "vendor2" }, file),
    /--provider differs from provider_type/,
  );
});

Deno.test("session request: usage errors never contain a value", () => {
  const cases: [() => unknown, RegExp][] = [
    [() => buildSessionRequest({}), /--provider <type> is required/],
    [() => buildSessionRequest({ provider: "vendor2", clientSecret: SECRET }), /--client-secret applies to/],
    [() => buildSessionRequest({ provider: "external_engine", sampleRate: SECRET }), /--sample-rate/],
    [() => parseHeaders([`Bearer ${SECRET}`]), /#1 must look like 'Name: value'/],
    [() => parseHeaders(["ok: 1", `: ${SECRET}`]), /#2 must look like/],
    [() => parseHeaders([`Bad Name: ${SECRET}`]), /#1 must look like/],
    [() => parseConfigText(`{"token": "${SECRET}"`, "session.json"), /session\.json is not valid JSON/],
    [() => parseConfigText(`"${SECRET}"`, "session.json"), /must hold a JSON object/],
  ];
  for (const [fn, pattern] of cases) {
    assert.throws(
      fn,
      (e: Error) => e instanceof UsageError && pattern.test(e.message) && !e.message.includes(SECRET),
    );
  }
  // later headers win, whatever their case
  assert.deepEqual(parseHeaders(["A: 1", "a: 2"]), { a: "2" });
});

/** An in-process Io: captured output, a config file in memory, the app behind `fetch`. */
function memoryIo(
  fetch: (r: Request) => Promise<Response>,
  env: Record<string, string>,
  files: Record<string, string>,
) {
  const out = { stdout: "", stderr: "" };
  const io: Io = {
    stdout: (t) => void (out.stdout += t),
    stderr: (t) => void (out.stderr += t),
    stdoutIsTerminal: false,
    stderrIsTerminal: false,
    noColor: true,
    env: (name) => env[name],
    readTextFile: (path) =>
      path in files ? Promise.resolve(files[path]) : Promise.reject(new Deno.errors.NotFound()),
    readStdin: () => Promise.resolve(""),
    fetch,
  };
  return { io, out };
}

Deno.test("cli in-process: sessions create sends the body built from the file and flags, with its Idempotency-Key", async () => {
  const engine = await startFakeEngine(testTls, "ok");
  const h = await createHarness({ caCerts: [testTls.caPem] });
  try {
    const sent: { body: Record<string, unknown>; idempotencyKey: string | null; auth: string | null }[] = [];
    const key = await h.key("proj_inproc");
    const { io, out } = memoryIo(
      async (req) => {
        sent.push({
          body: await req.clone().json(),
          idempotencyKey: req.headers.get("idempotency-key"),
          auth: req.headers.get("authorization"),
        });
        return await h.fetch(req);
      },
      { SVC_API_URL: "http://svc.test", SVC_API_KEY: key },
      {
        "s.json": JSON.stringify({
          provider_type: "external_engine",
          provider_config: {
            external_engine: { url: engine.url, auth_headers: { Authorization: `Bearer ${SECRET}` } },
          },
        }),
      },
    );
    const code = await run(
      [
        "sessions",
        "create",
        "--config",
        "s.json",
        "--sample-rate",
        "16000",
        "--avatar",
        "ben",
        "--idempotency-key",
        "k-1",
        "--json",
      ],
      io,
    );
    assert.equal(code, 0, out.stderr);
    assert.deepEqual(sent, [{
      body: {
        provider_type: "external_engine",
        provider_config: {
          external_engine: {
            url: engine.url,
            auth_headers: { Authorization: `Bearer ${SECRET}` },
            user_sample_rate: 16000,
          },
        },
        avatar_config: { avatar_id: "ben" },
      },
      idempotencyKey: "k-1",
      auth: `Bearer ${key}`,
    }]);
    assert.equal(JSON.parse(out.stdout).status, "active");
    assert.equal(
      engine.upgrades[0].get("authorization"),
      `Bearer ${SECRET}`,
      "the credential reached the engine",
    );
    assert.ok(!out.stdout.includes(SECRET) && !out.stderr.includes(SECRET));
  } finally {
    await h.close();
    await engine.close();
  }
});
