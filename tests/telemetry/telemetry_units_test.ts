/**
 * The telemetry module's parts: everything is a pass-through when Deno's OpenTelemetry is off (the test
 * process runs without it); the sampler rule; the attributes it derives; and a session's figure set
 * (issue 21's shape) recorded as p50/p95 histograms in seconds by a process with `OTEL_DENO=true`.
 */
import assert from "node:assert/strict";
import { telemetry } from "../../src/telemetry/state.ts";
import { instruments, recordCreate, recordEnd, recordWebhookAttempt } from "../../src/telemetry/metrics.ts";
import { errorType, inSpan, samplerHonoursParent, serverOf, untraced } from "../../src/telemetry/tracing.ts";
import { routeOf } from "../../src/api/middleware/api_metrics.ts";
import { ApiError } from "../../src/errors.ts";
import { startOtlpReceiver } from "../../testing/otlp_receiver.ts";
import { DEADLINE_MS } from "../../testing/deadline.ts";

const otelInEnv = ["OTEL_DENO", "OTEL_DENO_TRACING", "OTEL_DENO_METRICS"].some((v) => Deno.env.get(v));

Deno.test({
  name: "telemetry off: no instrument, no span, no context change; the recording sites return at once",
  ignore: otelInEnv,
  async fn() {
    assert.deepEqual(telemetry(), { tracing: false, metrics: false });
    assert.equal(instruments(), null);
    let seen: unknown = "unset";
    assert.equal(
      await inSpan("x", {}, (span) => {
        seen = span;
        return Promise.resolve(7);
      }),
      7,
    );
    assert.equal(seen, null, "no span object is made");
    assert.equal(untraced(() => 42), 42, "called synchronously, result as is");
    recordCreate(200, undefined, "vendor2");
    recordWebhookAttempt("delivered", 204, "session.ended", 0.1);
    // deno-lint-ignore no-explicit-any
    recordEnd({ status: "ended" } as any);
    await assert.rejects(
      inSpan("x", {}, () => Promise.reject(new ApiError("SVC_PROVIDER_TIMEOUT"))),
      ApiError,
    );
  },
});

Deno.test("telemetry: the samplers that keep Deno's spans of credential-bearing URLs out", () => {
  for (
    const ok of [
      "parentbased_always_on",
      "parentbased_traceidratio",
      "parentbased_always_off",
      "always_off",
      " ParentBased_Always_On ",
    ]
  ) {
    assert.ok(samplerHonoursParent(ok), ok);
  }
  for (const bad of [null, "", "always_on", "traceidratio", "jaeger_remote", "parentbased"]) {
    assert.ok(!samplerHonoursParent(bad), String(bad));
  }
});

Deno.test("telemetry: derived attributes hold no id, path or query", () => {
  assert.equal(errorType(new ApiError("SVC_RENDER_TIMEOUT")), "SVC_RENDER_TIMEOUT");
  assert.equal(
    errorType(new TypeError("error sending request for url (https://x/?token=secret)")),
    "TypeError",
  );
  assert.deepEqual(serverOf("https://hooks.example.com/services/T0/B0/secret?key=x"), {
    "server.address": "hooks.example.com",
    "server.port": 443,
  });
  assert.deepEqual(serverOf("http://127.0.0.1:8080/x"), {
    "server.address": "127.0.0.1",
    "server.port": 8080,
  });
  assert.deepEqual(serverOf("not a url"), {});
  assert.equal(routeOf("/v1/sessions"), "/v1/sessions");
  assert.equal(routeOf("/v1/sessions/session:abc/end"), "/v1/sessions/{session_id}/end");
  assert.equal(routeOf("/v1/api-keys/svc_key_abc"), "/v1/api-keys/{key_id}");
});

Deno.test("telemetry: a session's figures (issue 21's shape) are exported as p50/p95 histograms in seconds", async () => {
  const otlp = startOtlpReceiver();
  try {
    const out = await new Deno.Command(Deno.execPath(), {
      args: ["run", "-A", "tests/fixtures/record_figures.ts"],
      cwd: new URL("../..", import.meta.url),
      env: {
        OTEL_DENO: "true",
        OTEL_EXPORTER_OTLP_PROTOCOL: "http/json",
        OTEL_EXPORTER_OTLP_ENDPOINT: otlp.endpoint,
        OTEL_METRIC_EXPORT_INTERVAL: "300",
        OTEL_SERVICE_NAME: "figures",
      },
      stdout: "piped",
      stderr: "piped",
    }).output();
    assert.equal(out.code, 0, new TextDecoder().decode(out.stderr));
    const until = Date.now() + DEADLINE_MS;
    const sumOf = (metric: string, statistic?: string) =>
      otlp.points().find((p) =>
        p.metric === metric && (statistic === undefined || p.attributes["avatar.statistic"] === statistic)
      );
    while (!sumOf("avatar.session.first_frame")) {
      assert.ok(Date.now() < until, "the export arrived");
      await new Promise((r) => setTimeout(r, 50));
    }
    const close = (a: number | undefined, b: number) =>
      assert.ok(a !== undefined && Math.abs(a - b) < 1e-9, `${a} ≈ ${b}`);
    close(sumOf("avatar.session.turn_latency", "p50")?.sum, 0.4);
    close(sumOf("avatar.session.turn_latency", "p95")?.sum, 0.9);
    close(sumOf("avatar.session.av_offset", "p50")?.sum, -0.012);
    close(sumOf("avatar.session.av_offset", "p95")?.sum, 0.03);
    close(sumOf("avatar.session.first_frame")?.sum, 0.12);
    assert.equal(sumOf("avatar.session.avatar_latency"), undefined, "a figure not measured records nothing");
    const p = sumOf("avatar.session.turn_latency", "p50")!;
    assert.equal(p.unit, "s");
    assert.equal(p.attributes["avatar.provider.type"], "vendor2");
    assert.equal(p.attributes["avatar.session.transport"], "webrtc_sfu");
  } finally {
    await otlp.close();
  }
});
