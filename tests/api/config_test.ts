import assert from "node:assert/strict";
import { CONFIG_VARIABLES, ConfigError, loadConfig } from "../../src/config.ts";

Deno.test("config: embedded defaults", () => {
  const c = loadConfig({});
  assert.equal(c.port, 8787);
  assert.equal(c.host, "127.0.0.1");
  assert.equal(c.kv, ".data/svc.kv");
  assert.equal(c.publicUrl, "http://localhost:8787");
  assert.equal(c.docsUrl, "https://localhost:8787/docs");
  assert.deepEqual(c.tokenSecret, { kind: "ephemeral" });
  assert.deepEqual(c.rateLimit, { perMinute: 600, burst: 60 });
  assert.equal(c.maxConcurrentSessions, 10);
  assert.equal(c.providerConnectTimeoutMs, 8000);
  assert.deepEqual(c.referenceEngine, { enabled: true, port: 8788, dir: ".data/reference-engine" });
  assert.equal(c.maxBodyBytes, 65536);
  assert.deepEqual(c.lifetimes, { joinWindowMs: 120_000, idleTimeoutMs: 60_000, maxDurationMs: 3_600_000 });
  assert.equal(c.ownerLeaseMs, 30_000);
  assert.equal(c.shutdownTimeoutMs, 20_000);
  assert.deepEqual(c.webhooks, {
    timeoutMs: 10_000,
    retrySchedule: [
      5_000,
      300_000,
      1_800_000,
      7_200_000,
      18_000_000,
      36_000_000,
      50_400_000,
      72_000_000,
      86_400_000,
    ],
    pollMs: 1000,
    concurrency: 8,
    allowPrivate: false,
    caFile: null,
  });
  assert.deepEqual(c.media, {
    enabled: true,
    ffmpegPath: "ffmpeg",
    width: 512,
    height: 512,
    fps: 25,
    capacity: 20,
    firstFrameTimeoutMs: 5000,
    frameCacheBytes: 256 * 1024 * 1024,
    encoderSpares: 1,
    lipSyncHoldMs: 0,
    opusEncoder: "auto",
  });
  assert.equal(c.demoPage, true);
});

Deno.test("config: lifecycle, webhook and rate-limit settings are validated within their bounds", () => {
  const c = loadConfig({
    SVC_SESSION_JOIN_WINDOW_S: "5",
    SVC_SESSION_IDLE_TIMEOUT_S: "3600",
    SVC_SESSION_MAX_DURATION_S: "86400",
    SVC_OWNER_LEASE_S: "3",
    SVC_WEBHOOK_RETRY_SCHEDULE: "100ms, 1s,1m,48h",
    SVC_WEBHOOK_ALLOW_PRIVATE: "true",
    SVC_RATE_LIMIT_PER_MINUTE: "100000000",
  });
  assert.deepEqual(c.rateLimit, { perMinute: 100_000_000, burst: 60 });
  assert.deepEqual(c.lifetimes, { joinWindowMs: 5_000, idleTimeoutMs: 3_600_000, maxDurationMs: 86_400_000 });
  assert.deepEqual(c.webhooks.retrySchedule, [100, 1000, 60_000, 172_800_000]);
  assert.equal(c.webhooks.allowPrivate, true);
  const bad: [string, string][] = [
    ["SVC_SESSION_JOIN_WINDOW_S", "4"],
    ["SVC_SESSION_IDLE_TIMEOUT_S", "3601"],
    ["SVC_SESSION_MAX_DURATION_S", "59"],
    ["SVC_OWNER_LEASE_S", "601"],
    ["SVC_SHUTDOWN_TIMEOUT_S", "0"],
    ["SVC_WEBHOOK_TIMEOUT_MS", "31000"],
    ["SVC_WEBHOOK_POLL_MS", "5"],
    ["SVC_WEBHOOK_CONCURRENCY", "65"],
    ["SVC_WEBHOOK_ALLOW_PRIVATE", "sometimes"],
    ["SVC_WEBHOOK_RETRY_SCHEDULE", "5s,1s"],
    ["SVC_WEBHOOK_RETRY_SCHEDULE", "5x"],
    ["SVC_WEBHOOK_RETRY_SCHEDULE", "49h"],
    ["SVC_WEBHOOK_RETRY_SCHEDULE", Array(21).fill("1s").join(",")],
    ["SVC_RATE_LIMIT_PER_MINUTE", "100000001"],
    ["SVC_RATE_LIMIT_PER_MINUTE", "-1"],
    ["SVC_RATE_LIMIT_BURST", "0"],
  ];
  for (const [name, value] of bad) {
    assert.throws(
      () => loadConfig({ [name]: value }),
      (e: Error) => e instanceof ConfigError && e.message.includes(name),
    );
  }
});

Deno.test("config: invalid values stop start-up with one line naming the variable, never the value", () => {
  const cases: [Record<string, string>, string][] = [
    [{ PORT: "eighty" }, "PORT"],
    [{ PORT: "70000" }, "PORT"],
    [{ SVC_DOCS_URL: "http://docs.example" }, "SVC_DOCS_URL"],
    [{ SVC_PUBLIC_URL: "ftp://x" }, "SVC_PUBLIC_URL"],
    [{ SVC_TOKEN_SECRET: "short-secret-value" }, "SVC_TOKEN_SECRET"],
    [{ SVC_TOKEN_SECRET_EPHEMERAL: "maybe" }, "SVC_TOKEN_SECRET_EPHEMERAL"],
    [{ SVC_RATE_LIMIT_BURST: "0" }, "SVC_RATE_LIMIT_BURST"],
    [{ SVC_MAX_CONCURRENT_SESSIONS: "-1" }, "SVC_MAX_CONCURRENT_SESSIONS"],
    [{ SVC_LOG_LEVEL: "loud" }, "SVC_LOG_LEVEL"],
    [{ SVC_TOKEN_SECRET_PREVIOUS: "x".repeat(40) }, "SVC_TOKEN_SECRET_PREVIOUS"],
    [{ SVC_RENDER_WIDTH: "513" }, "SVC_RENDER_WIDTH"],
    [{ SVC_RENDER_FPS: "7" }, "SVC_RENDER_FPS"],
    [{ SVC_RENDER_CAPACITY: "0" }, "SVC_RENDER_CAPACITY"],
    [{ SVC_OPUS_ENCODER: "fastest" }, "SVC_OPUS_ENCODER"],
  ];
  for (const [env, name] of cases) {
    const err = assert.throws(() => loadConfig(env), ConfigError) as unknown;
    void err;
    try {
      loadConfig(env);
    } catch (e) {
      const msg = (e as Error).message;
      assert.ok(msg.includes(name), `${msg} should name ${name}`);
      assert.ok(!msg.includes("\n"), "one line");
      for (const v of Object.values(env)) if (v.length > 6) assert.ok(!msg.includes(v), "value not echoed");
    }
  }
});

Deno.test("config: secrets, overrides and the documented variable list", () => {
  const c = loadConfig({
    PORT: "9000",
    SVC_TOKEN_SECRET: "a".repeat(40),
    SVC_TOKEN_SECRET_PREVIOUS: "b".repeat(40),
    SVC_PUBLIC_URL: "https://avatars.example.com/",
  });
  assert.deepEqual(c.tokenSecret, { kind: "configured", current: "a".repeat(40), previous: "b".repeat(40) });
  assert.equal(c.publicUrl, "https://avatars.example.com");
  assert.equal(c.docsUrl, "https://avatars.example.com/docs");
  assert.deepEqual(loadConfig({ SVC_TOKEN_SECRET_EPHEMERAL: "false" }).tokenSecret, { kind: "none" });
  // every variable is documented in docs/configuration.md and the README
  const docs = Deno.readTextFileSync(new URL("../../docs/configuration.md", import.meta.url));
  const readme = Deno.readTextFileSync(new URL("../../README.md", import.meta.url));
  // One name a setting (a provider's included: its provider definition declares it), each an `SVC_` variable but
  // the OpenTelemetry one.
  assert.equal(new Set(CONFIG_VARIABLES).size, CONFIG_VARIABLES.length, "no variable declared twice");
  for (const name of CONFIG_VARIABLES) {
    assert.match(name, /^(SVC_[A-Z0-9_]+|PORT|OTEL_TRACES_SAMPLER|GLIBC_TUNABLES)$/);
  }
  for (const name of CONFIG_VARIABLES) {
    assert.ok(docs.includes(`\`${name}\``), `${name} missing from docs/configuration.md`);
    assert.ok(readme.includes(`\`${name}\``), `${name} missing from README.md`);
  }
});

Deno.test("config: main.ts exits 1 with a one-line error for an invalid environment", async () => {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", "main.ts"],
    cwd: new URL("../..", import.meta.url),
    env: { PORT: "not-a-port" },
    stdout: "piped",
    stderr: "piped",
  }).output();
  assert.equal(out.code, 1);
  const err = new TextDecoder().decode(out.stderr).trim();
  assert.equal(err, "invalid configuration: PORT must be a whole number");
});

Deno.test("config: roles — api and worker need the internal and token secrets; a worker URL is https or loopback http", () => {
  const secrets = { SVC_INTERNAL_SECRET: "i".repeat(40), SVC_TOKEN_SECRET: "t".repeat(40) };
  assert.equal(loadConfig({}).role, "all");
  const api = loadConfig({ SVC_ROLE: "api", ...secrets });
  assert.equal(api.role, "api");
  assert.equal(api.media.enabled, false, "an API process renders nothing");
  assert.equal(api.referenceEngine.enabled, false, "an API process runs no engine");
  for (
    const [env, needle] of [
      [{ SVC_ROLE: "api" }, "SVC_INTERNAL_SECRET is required when SVC_ROLE=api"],
      [
        { SVC_ROLE: "api", SVC_INTERNAL_SECRET: "i".repeat(40) },
        "SVC_TOKEN_SECRET is required when SVC_ROLE=api",
      ],
      [{ SVC_ROLE: "worker", ...secrets }, "SVC_WORKER_URL is required when SVC_ROLE=worker"],
      [{ SVC_ROLE: "worker", ...secrets, SVC_WORKER_URL: "http://10.0.0.5:9000" }, "SVC_WORKER_URL"],
      [{ SVC_ROLE: "worker", ...secrets, SVC_WORKER_URL: "https://w.example/?k=1" }, "SVC_WORKER_URL"],
      [{ SVC_WORKER_URL: "http://127.0.0.1:9000" }, "SVC_WORKER_URL is set but SVC_INTERNAL_SECRET is not"],
      [{ SVC_ROLE: "edge" }, "SVC_ROLE must be all, api or worker"],
      [{ SVC_INTERNAL_SECRET: "short" }, "SVC_INTERNAL_SECRET"],
    ] as [Record<string, string>, string][]
  ) {
    assert.throws(
      () => loadConfig(env),
      (e: Error) => e instanceof ConfigError && e.message.includes(needle),
      needle,
    );
  }
  for (
    const url of [
      "https://worker-1.internal:8443",
      "http://127.0.0.1:9000",
      "http://[::1]:9000",
      "http://localhost:1",
    ]
  ) {
    assert.equal(loadConfig({ SVC_ROLE: "worker", ...secrets, SVC_WORKER_URL: url + "/" }).workerUrl, url);
  }
  // On Deno Deploy an unset SVC_KV means the app's own database; elsewhere the local file.
  assert.equal(loadConfig({ DENO_DEPLOYMENT_ID: "abc" }).kv, null);
  assert.equal(loadConfig({}).kv, ".data/svc.kv");
});

Deno.test("config: an SVC_KV that cannot be opened stops start-up with one line naming it", async () => {
  const dir = await Deno.makeTempDir();
  try {
    await Deno.writeTextFile(`${dir}/file`, "x");
    const out = await new Deno.Command(Deno.execPath(), {
      args: ["run", "-A", "main.ts"],
      cwd: new URL("../..", import.meta.url),
      env: {
        PORT: "0",
        SVC_KV: `${dir}/file/svc.kv`,
        SVC_REFERENCE_ENGINE: "false",
        SVC_MEDIA_ENABLED: "false",
      },
      stdout: "piped",
      stderr: "piped",
    }).output();
    assert.equal(out.code, 1);
    const err = new TextDecoder().decode(out.stderr).trim();
    assert.match(err, /^invalid configuration: SVC_KV cannot be opened \(.+\)$/);
    assert.ok(!err.includes("\n") && !err.includes("    at "), "one line, no stack trace");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
