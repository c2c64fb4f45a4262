/**
 * OpenTelemetry from Deno's own runtime, for real: a loopback OTLP/HTTP receiver (JSON encoding), the split
 * deployment as OS processes (an API process under the Deploy-like sandbox, a worker) with `OTEL_DENO=true`,
 * sessions created and ended through the API on the external engine and on a vendor2 fake, a vendor2 create
 * refused at the upgrade, a create over the project's ceiling, a webhook delivered to a URL with a secret in
 * its path and query. Found in the export: every metric the service defines (from the process that records
 * it), and one trace from the API's create through the signed internal call into the worker's start, engine
 * handshake and first frame; and a session's figures (turn latency, avatar latency, A/V offset, first frame)
 * recorded at its end, after a client watched, spoke and reported. Found nowhere in any exported byte (traces, metrics, logs): the engine's
 * credential, the vendor2 access tokens (the good one and the refused one, both in the upgrade URL's query),
 * the webhook URL's secrets, the API key, the tokens the API answered with, the internal and token secrets.
 * Also: a process that runs sessions refuses to start with tracing on and a sampler that ignores the
 * parent; with tracing on, a media token in the URL query is refused.
 */
import assert from "node:assert/strict";
import { runCli } from "../../testing/cli.ts";
import { startFakeEngine } from "../../testing/fake_engine.ts";
import { checkErrorBody, engineBody, testTls } from "../../testing/fixtures.ts";
import { startApi, startKvConnect, startWorker, TEST_INTERNAL_SECRET } from "../../testing/split.ts";
import { TEST_TOKEN_SECRET } from "../../testing/harness.ts";
import { startWebhookReceiver } from "../../testing/webhook_receiver.ts";
import { startVendor2Fake } from "../../testing/fakes/vendor2.ts";
import { type ReceivedPoint, type ReceivedSpan, startOtlpReceiver } from "../../testing/otlp_receiver.ts";
import { MEDIA_CLOSE } from "../../src/vocabulary/close_codes.ts";
import { MediaClientRecorder } from "../../testing/media.ts";
import { tone } from "../../testing/fake_bridge.ts";

/** Generous: two service processes and ffmpeg on a shared 2-core machine. */
const DEADLINE_MS = 90_000;

async function until<T>(
  what: string,
  check: () => T | undefined | false | Promise<T | undefined | false>,
): Promise<T> {
  const end = Date.now() + DEADLINE_MS;
  for (;;) {
    const v = await check();
    if (v) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

const hex = () => crypto.randomUUID().replaceAll("-", "");

Deno.test({
  name:
    "telemetry: Deno's OpenTelemetry exports the service's metrics and one trace across API and worker; no credential in any byte",
  sanitizeResources: false, // child processes' pipes are drained in the background until they exit
  sanitizeOps: false,
  async fn() {
    const dir = await Deno.makeTempDir({ prefix: "svc_otel_" });
    const caFile = `${dir}/ca.pem`;
    await Deno.writeTextFile(caFile, testTls.caPem);
    const otlp = startOtlpReceiver();
    const engineCanary = `canaryEngine${hex()}`;
    const vendor2Canary = `canaryVendorTok${hex()}`;
    const refusedCanary = `canaryRefusedTok${hex()}`;
    const hookPathCanary = `canaryHookPath${hex()}`;
    const hookQueryCanary = `canaryHookQuery${hex()}`;
    const engine = await startFakeEngine(testTls, "ok");
    const vendor2 = startVendor2Fake(testTls, { token: vendor2Canary, agents: ["agent_otel"] });
    const hooks = startWebhookReceiver(testTls);
    const kv = await startKvConnect(dir);
    const stops: (() => Promise<unknown>)[] = [];
    const otel = (service: string, sampler = true) => ({
      OTEL_DENO: "true",
      OTEL_EXPORTER_OTLP_PROTOCOL: "http/json",
      OTEL_EXPORTER_OTLP_ENDPOINT: otlp.endpoint,
      OTEL_SERVICE_NAME: service,
      OTEL_METRIC_EXPORT_INTERVAL: "500",
      OTEL_BSP_SCHEDULE_DELAY: "200",
      ...(sampler ? { OTEL_TRACES_SAMPLER: "parentbased_always_on" } : {}),
    });
    try {
      const worker = await startWorker(kv, {
        ...otel("avatar-worker"),
        SVC_ENGINE_CA_FILE: caFile,
        SVC_WEBHOOK_CA_FILE: caFile,
        SVC_WEBHOOK_ALLOW_PRIVATE: "true",
        SVC_WEBHOOK_POLL_MS: "100",
        SVC_VENDOR2_URL: vendor2.url,
        SVC_RENDER_CAPACITY: "4",
        SVC_RENDER_WIDTH: "128",
        SVC_RENDER_HEIGHT: "128",
        SVC_RENDER_FPS: "10",
        SVC_RENDER_FIRST_FRAME_TIMEOUT_MS: "20000",
        SVC_PROVIDER_CONNECT_TIMEOUT_MS: "20000",
      });
      stops.push(async () => {
        worker.kill("SIGTERM");
        await worker.exited();
      });
      // The API process, as on Deno Deploy: it opens no engine connection and delivers no webhook, so it
      // needs no particular sampler.
      const api = await startApi(kv, {
        ...otel("avatar-api", false),
        SVC_MAX_CONCURRENT_SESSIONS: "2",
        SVC_WEBHOOK_ALLOW_PRIVATE: "true",
        // A burst of 30 a key: this test's own calls stay under it; a loop of 60 GETs does not.
        SVC_RATE_LIMIT_PER_MINUTE: "600",
        SVC_RATE_LIMIT_BURST: "30",
      });
      stops.push(async () => {
        api.kill("SIGTERM");
        await api.exited();
      });
      const boot = await runCli(
        ["admin", "bootstrap", "--project", "proj_otel", "--name", "otel", "--json"],
        {
          env: kv.env,
        },
      );
      assert.equal(boot.code, 0, boot.stderr);
      const apiKey = JSON.parse(boot.stdout).api_key as string;
      const call = async (method: string, path: string, body?: unknown) => {
        const res = await fetch(api.url + path, {
          method,
          headers: { authorization: `Bearer ${apiKey}`, "content-type": "application/json" },
          body: body === undefined ? undefined : JSON.stringify(body),
        });
        const text = await res.text();
        return { status: res.status, headers: res.headers, text, body: text ? JSON.parse(text) : undefined };
      };
      const answered: string[] = []; // tokens the API handed out

      // A: the external engine, with a webhook whose URL holds secrets in its path and query.
      const hookUrl = `${hooks.url}/${hookPathCanary}?secret=${hookQueryCanary}`;
      const a = await call(
        "POST",
        "/v1/sessions",
        engineBody(engine.url, { webhook_url: hookUrl }, engineCanary),
      );
      assert.equal(a.status, 200, a.text);
      answered.push(a.body.client_token, a.body.stream_metadata.session_token);
      const vendor2Body = (token: string) => ({
        provider_type: "vendor2",
        provider_config: { vendor2: { access_token: token, agent_id: "agent_otel" } },
      });
      // C: vendor2 refuses the token at the upgrade (the case where Deno's own client span would be ended and
      // exported, with the URL).
      const c = await call("POST", "/v1/sessions", vendor2Body(refusedCanary));
      assert.ok(c.status >= 400, c.text);
      assert.equal(vendor2.server.requests.at(-1)!.url.searchParams.get("access_token"), refusedCanary);
      // B: vendor2, its access token in the upgrade URL's query.
      const b = await call("POST", "/v1/sessions", vendor2Body(vendor2Canary));
      assert.equal(b.status, 200, b.text);
      answered.push(b.body.client_token, b.body.stream_metadata.session_token);
      assert.equal(vendor2.server.requests.at(-1)!.url.searchParams.get("access_token"), vendor2Canary);
      // D: over the project's ceiling of 2.
      checkErrorBody(await call("POST", "/v1/sessions", engineBody(engine.url, {}, engineCanary)), {
        status: 429,
        code: "SVC_RATE_LIMIT_CONCURRENT_SESSIONS",
        retryable: true,
      });
      // The worker's gauges are read at each collection (every 500 ms): both sessions show while they run.
      await until(
        "both sessions in avatar.session.active",
        () =>
          ["external_engine", "vendor2"].every((provider) =>
            otlp.points().some((p) =>
              p.service === "avatar-worker" && p.metric === "avatar.session.active" && p.value === 1 &&
              p.attributes["avatar.provider.type"] === provider &&
              p.attributes["avatar.session.transport"] === "websocket_fmp4" &&
              typeof p.attributes["avatar.worker.id"] === "string"
            )
          ) || undefined,
      );
      await until(
        "the two taken slots in avatar.worker.free_slots",
        () =>
          otlp.points().some((p) => p.metric === "avatar.worker.free_slots" && p.value === 2) || undefined,
      );
      // Another key over its request rate: 60 GETs at once, some refused.
      const reader = await call("POST", "/v1/api-keys", { name: "reader", scopes: ["sessions:read"] });
      assert.equal(reader.status, 200, reader.text);
      const statuses = await Promise.all(
        Array.from({ length: 60 }, () =>
          fetch(`${api.url}/v1/sessions/${a.body.session_id}`, {
            headers: { authorization: `Bearer ${reader.body.api_key}` },
          }).then(async (r) => (await r.body?.cancel(), r.status))),
      );
      assert.ok(statuses.includes(429) && statuses.includes(200), `${statuses}`);
      const readerKey = reader.body.api_key as string;

      // Session A's figures (issue 21): a client watches and speaks, the engine answers, the client reports
      // what it measured; the session's end records them (turn latency, avatar latency, A/V offset, first
      // frame) for the export.
      const viewer = MediaClientRecorder.withToken(a.body.stream_metadata.media_url, a.body.client_token);
      await viewer.until(() => viewer.texts.some((t) => t.type === "hello"), DEADLINE_MS, "the media hello");
      const inputRate = viewer.texts.find((t) => t.type === "hello").input_sample_rate as number;
      const frame = inputRate / 50;
      for (let i = 0; i < 35; i++) {
        // 400 ms of the user speaking, then silence: the end of the user's speech.
        const pcm = i < 20 ? tone(frame, inputRate, 300, 8000, i * frame) : new Int16Array(frame);
        viewer.ws.send(new Uint8Array(pcm.buffer));
        await new Promise((r) => setTimeout(r, 20));
      }
      engine.sendAll({ type: "response.started", response_id: "r_otel" });
      for (let i = 0; i < 15; i++) engine.sendAudio(tone(480, 24000, 300, 8000, i * 480));
      engine.sendAll({ type: "response.done", response_id: "r_otel", status: "completed" });
      const report = JSON.stringify({
        type: "player_stats",
        playback: "webcodecs",
        first_frame_ms: 90,
        frame_latency_ms: [60, 62, 64],
        av_offset_ms: [-3, 2, 5],
      });
      const figures = await until(
        "session A's turn in its figures (the worker flushes every 2 s)",
        async () => {
          viewer.ws.send(report); // each report presents the responses due before it
          await new Promise((r) => setTimeout(r, 800)); // a GET a second: well within the key's rate
          const m = await call("GET", `/v1/sessions/${a.body.session_id}/metrics`);
          return m.status === 200 && m.body.turn_latency_ms.count >= 1 && m.body.avatar_latency_ms.count >= 1
            ? m.body
            : undefined;
        },
      );
      assert.equal(figures.first_frame_ms, 90);
      const av = figures.av_offset_ms;
      assert.ok(av.count >= 3 && av.count % 3 === 0 && av.p50 === 2 && av.p95 === 5, JSON.stringify(av));
      await viewer.close();

      for (const s of [a, b]) {
        const ended = await call("POST", `/v1/sessions/${s.body.session_id}/end`);
        assert.equal(ended.status, 200, ended.text);
      }
      await hooks.waitFor(
        () => hooks.accepted().length >= 2,
        DEADLINE_MS,
        "session.started and session.ended",
      );
      assert.equal(hooks.received[0].path, `/hook/${hookPathCanary}`);

      // The metrics, each from the process that records it.
      const has = (service: string, metric: string, match: (p: ReceivedPoint) => boolean = () => true) =>
        otlp.points().some((p) => p.service === service && p.metric === metric && match(p));
      // Each point is one attribute set's cumulative value.
      const attr = (p: ReceivedPoint, k: string) => p.attributes[k];
      const expectations: [string, string, (p: ReceivedPoint) => boolean][] = [];
      for (const provider of ["external_engine", "vendor2"]) {
        expectations.push(
          [
            "avatar-api",
            "avatar.session.creates",
            (p) =>
              attr(p, "http.response.status_code") === 200 && attr(p, "avatar.provider.type") === provider,
          ],
          [
            "avatar-api",
            "avatar.session.start.duration",
            (p) => p.unit === "s" && p.sum! > 0 && attr(p, "avatar.provider.type") === provider,
          ],
          [
            "avatar-worker",
            "avatar.session.ends",
            (p) =>
              attr(p, "avatar.session.end_reason") === "ended_by_api" &&
              attr(p, "avatar.session.status") === "ended" &&
              attr(p, "avatar.provider.type") === provider,
          ],
          [
            "avatar-worker",
            "avatar.session.duration",
            (p) => p.unit === "s" && attr(p, "avatar.provider.type") === provider,
          ],
          [
            "avatar-worker",
            "avatar.engine.connect.duration",
            (p) => attr(p, "avatar.provider.type") === provider && attr(p, "error.type") === undefined,
          ],
        );
      }
      expectations.push(
        [
          "avatar-api",
          "avatar.session.creates",
          (p) =>
            attr(p, "http.response.status_code") === 429 &&
            attr(p, "error.type") === "SVC_RATE_LIMIT_CONCURRENT_SESSIONS",
        ],
        [
          "avatar-api",
          "avatar.session.creates",
          (p) =>
            attr(p, "http.response.status_code") === 502 &&
            attr(p, "error.type") === "SVC_PROVIDER_DOWNSTREAM_FAILED" &&
            attr(p, "avatar.provider.type") === "vendor2",
        ],
        [
          "avatar-api",
          "avatar.rate_limit.refusals",
          (p) =>
            attr(p, "error.type") === "SVC_RATE_LIMIT_CONCURRENT_SESSIONS" &&
            attr(p, "http.route") === "/v1/sessions",
        ],
        [
          "avatar-api",
          "avatar.rate_limit.refusals",
          (p) =>
            attr(p, "error.type") === "SVC_RATE_LIMIT_EXCEEDED" &&
            attr(p, "http.route") === "/v1/sessions/{session_id}" && p.value >= 1,
        ],
        [
          "avatar-worker",
          "avatar.session.ends",
          (p) =>
            attr(p, "avatar.session.end_reason") === "start_failed" &&
            attr(p, "avatar.session.status") === "failed",
        ],
        [
          "avatar-worker",
          "avatar.session.active",
          (p) =>
            typeof attr(p, "avatar.worker.id") === "string" &&
            attr(p, "avatar.provider.type") === "vendor2" &&
            attr(p, "avatar.session.transport") === "websocket_fmp4",
        ],
        ["avatar-worker", "avatar.worker.capacity", (p) => p.value === 4],
        ["avatar-worker", "avatar.worker.free_slots", (p) => p.value === 4],
        [
          "avatar-worker",
          "avatar.webhook.deliveries",
          (p) =>
            attr(p, "avatar.webhook.outcome") === "delivered" && attr(p, "http.response.status_code") === 204,
        ],
        [
          "avatar-worker",
          "avatar.webhook.delivery.lag",
          (p) => attr(p, "avatar.webhook.event_type") === "session.started",
        ],
        [
          "avatar-worker",
          "avatar.webhook.delivery.lag",
          (p) => attr(p, "avatar.webhook.event_type") === "session.ended",
        ],
        // Session A's figures, at its end (p50 and p95 of each; the first frame), in seconds.
        ...["turn_latency", "avatar_latency", "av_offset"].flatMap((name) =>
          ["p50", "p95"].map((statistic): [string, string, (p: ReceivedPoint) => boolean] => [
            "avatar-worker",
            `avatar.session.${name}`,
            (p) =>
              p.unit === "s" && p.value >= 1 && attr(p, "avatar.statistic") === statistic &&
              attr(p, "avatar.provider.type") === "external_engine" &&
              attr(p, "avatar.session.transport") === "websocket_fmp4",
          ])
        ),
        [
          "avatar-worker",
          "avatar.session.first_frame",
          (p) =>
            p.unit === "s" && Math.abs(p.sum! - 0.09) < 1e-9 &&
            attr(p, "avatar.provider.type") === "external_engine",
        ],
        [
          "avatar-worker",
          "avatar.engine.connect.failures",
          (p) =>
            attr(p, "avatar.provider.type") === "vendor2" &&
            attr(p, "error.type") === "SVC_PROVIDER_DOWNSTREAM_FAILED",
        ],
      );
      await until("every metric", () => expectations.every(([s, m, f]) => has(s, m, f)) || undefined).catch(
        (err) => {
          const missing = expectations.filter(([s, m, f]) => !has(s, m, f));
          const seen = (s: string, m: string) =>
            JSON.stringify(otlp.points().filter((p) => p.service === s && p.metric === m).slice(-4));
          throw new Error(
            `${err.message}: missing ${
              missing.map(([s, m]) => `${s} ${m} (seen: ${seen(s, m)})`).join("\n")
            }`,
          );
        },
      );

      // One trace: API create → (signed internal call) → worker start → engine handshake → first frame.
      const sid = a.body.session_id as string;
      const trace = await until("the create's trace across both processes", () => {
        const spans = otlp.spans();
        const create = spans.find((s) =>
          s.service === "avatar-api" && s.name === "session.create" &&
          s.attributes["avatar.session.id"] === sid
        );
        if (!create) return undefined;
        const inTrace = spans.filter((s) => s.traceId === create.traceId);
        const names = new Set(inTrace.map((s) => `${s.service} ${s.name}`));
        const wanted = [
          "avatar-worker session.start",
          "avatar-worker engine.connect",
          "avatar-worker media.first_frame",
        ];
        return wanted.every((n) => names.has(n)) ? { create, spans: inTrace } : undefined;
      });
      const byId = new Map(trace.spans.map((s) => [s.spanId, s]));
      const parentOf = (s: ReceivedSpan) => byId.get(s.parentSpanId);
      const ancestors = (s: ReceivedSpan) => {
        const out: ReceivedSpan[] = [];
        for (let p = parentOf(s); p; p = parentOf(p)) out.push(p);
        return out;
      };
      const one = (service: string, name: string) =>
        trace.spans.find((s) => s.service === service && s.name === name)!;
      const start = one("avatar-worker", "session.start");
      const connect = one("avatar-worker", "engine.connect");
      const firstFrame = one("avatar-worker", "media.first_frame");
      assert.ok(ancestors(connect).includes(start), "the engine handshake is inside the worker's start");
      assert.ok(ancestors(firstFrame).includes(start), "the first frame is inside the worker's start");
      const chain = ancestors(start);
      const serverSpan = chain[0];
      assert.equal(serverSpan.service, "avatar-worker");
      assert.equal(serverSpan.kind, 2, "the worker's Deno.serve span of the internal call");
      assert.equal(serverSpan.attributes["url.path"], "/internal/v1/sessions/start");
      assert.equal(
        chain[1].service,
        "avatar-api",
        "its parent is the API's fetch span: context crossed the call",
      );
      assert.equal(chain[1].kind, 3);
      assert.ok(chain.includes(trace.create), "all under the API's session.create");
      assert.equal(start.attributes["avatar.session.id"], sid);
      assert.equal(connect.attributes["avatar.provider.type"], "external_engine");
      for (const s of trace.spans) {
        assert.ok(!("url.query" in s.attributes) || s.attributes["url.query"] === "");
      }

      // The vendor2 connections and the webhook deliveries have the service's spans, without their URLs.
      const spans = otlp.spans();
      const v2 = spans.filter((s) =>
        s.name === "engine.connect" && s.attributes["avatar.provider.type"] === "vendor2"
      );
      assert.equal(v2.length, 2);
      assert.ok(
        v2.some((s) => s.status.code === 2 && typeof s.attributes["error.type"] === "string"),
        "the refused one failed",
      );
      const delivers = await until("webhook.deliver spans", () => {
        const d = otlp.spans().filter((s) => s.name === "webhook.deliver");
        return d.length >= 2 ? d : undefined;
      });
      for (const d of delivers) {
        assert.equal(d.attributes["server.address"], "localhost");
        assert.equal(d.attributes["http.response.status_code"], 204);
        assert.ok(!("url.full" in d.attributes));
      }
      for (const s of otlp.spans()) {
        const u = String(s.attributes["url.full"] ?? "");
        assert.ok(
          !u.includes(vendor2.server.wsOrigin.replace("wss://", "")),
          `no span of a vendor2 URL: ${u}`,
        );
        assert.ok(!u.includes(`:${hooks.port}`), `no span of the webhook URL: ${u}`);
      }

      // No credential, key, token or secret in any exported byte.
      const exported = [...otlp.raw.traces, ...otlp.raw.metrics, ...otlp.raw.logs].join("\n");
      assert.ok(otlp.raw.traces.length > 0 && otlp.raw.metrics.length > 0);
      const secrets: Record<string, string> = {
        engineCanary,
        vendor2Canary,
        refusedCanary,
        hookPathCanary,
        hookQueryCanary,
        apiKey,
        readerKey,
        internalSecret: TEST_INTERNAL_SECRET,
        tokenSecret: TEST_TOKEN_SECRET,
        kvToken: kv.token,
        ...Object.fromEntries(answered.map((t, i) => [`answered token ${i}`, t])),
      };
      for (const [what, secret] of Object.entries(secrets)) {
        assert.ok(!exported.includes(secret), `${what} is in the exported data`);
        // nor its first half (a truncated or split value)
        assert.ok(
          !exported.includes(secret.slice(0, Math.ceil(secret.length / 2))),
          `part of ${what} is exported`,
        );
      }

      // With tracing on, a media token in the URL query is refused (only the subprotocol is taken).
      const e = await call("POST", "/v1/sessions", engineBody(engine.url, {}, engineCanary));
      assert.equal(e.status, 200, e.text);
      const ws = new WebSocket(`${e.body.stream_metadata.media_url}?token=${e.body.client_token}`);
      const closed = await new Promise<CloseEvent>((r) => ws.addEventListener("close", r, { once: true }));
      assert.equal(closed.code, MEDIA_CLOSE.TOKEN_REFUSED.code);
    } finally {
      for (const stop of stops.reverse()) await stop().catch(() => {});
      await kv.close();
      await hooks.close();
      await vendor2.close();
      await engine.close();
      await otlp.close();
      await Deno.remove(dir, { recursive: true }).catch(() => {});
    }
  },
});

Deno.test({
  name:
    "telemetry: a process that runs sessions refuses to start with tracing on and a sampler that ignores the parent",
  async fn() {
    const otlp = startOtlpReceiver();
    try {
      for (const sampler of [undefined, "always_on", "traceidratio"]) {
        const out = await new Deno.Command(Deno.execPath(), {
          args: ["run", "-A", "main.ts"],
          cwd: new URL("../..", import.meta.url),
          env: {
            PORT: "0",
            SVC_KV: ":memory:",
            SVC_MEDIA_ENABLED: "false",
            SVC_REFERENCE_ENGINE: "false",
            OTEL_DENO: "true",
            OTEL_EXPORTER_OTLP_PROTOCOL: "http/json",
            OTEL_EXPORTER_OTLP_ENDPOINT: otlp.endpoint,
            ...(sampler ? { OTEL_TRACES_SAMPLER: sampler } : {}),
          },
          stdout: "piped",
          stderr: "piped",
        }).output();
        assert.equal(out.code, 1, `sampler ${sampler}`);
        assert.match(
          new TextDecoder().decode(out.stderr),
          /^invalid configuration: OTEL_TRACES_SAMPLER must be parentbased_always_on/,
        );
      }
    } finally {
      await otlp.close();
    }
  },
});
