/**
 * Every session's figures (`GET /v1/sessions/{session_id}/metrics`, the `session.ended` webhook's `metrics`):
 * the route's scope, 404 across projects, nothing measured yet answered as nulls; a player's report over the
 * media socket and the service's own measures (the user's speech ending, the engine's first audio, where it
 * lands on the media clock) making the turn latency and its split; the final figures kept with the end and
 * sent in the webhook; the clock exchange a player places the media clock with.
 */
import assert from "node:assert/strict";
import { LifecycleEvent, SessionMetrics } from "../../src/vocabulary/schemas.ts";
import { loadConfig } from "../../src/config.ts";
import { createLogger } from "../../src/log.ts";
import { MediaPlane } from "../../src/media/media_plane.ts";
import { DEADLINE_MS } from "../../testing/deadline.ts";
import { FakeBridge, tone } from "../../testing/fake_bridge.ts";
import { checkErrorBody, engineBody, testTls } from "../../testing/fixtures.ts";
import { createHarness, type Harness } from "../../testing/harness.ts";
import { MediaClientRecorder, smallRenderer, until } from "../../testing/media.ts";
import { startWebhookReceiver, type WebhookReceiver } from "../../testing/webhook_receiver.ts";

interface Ctx {
  h: Harness;
  fake: FakeBridge;
  key: string;
  receiver: WebhookReceiver;
  wsUrl(sessionId: string): string;
  // deno-lint-ignore no-explicit-any
  create(): Promise<any>;
}

async function withMetrics(fn: (ctx: Ctx) => Promise<void>): Promise<void> {
  const plane = await MediaPlane.create({
    config: { ...loadConfig({}).media, width: 256, height: 256 },
    publicUrl: "http://localhost:8787",
    logger: createLogger({ sink: () => {} }),
    renderer: await smallRenderer(),
  });
  const fake = new FakeBridge();
  const receiver = startWebhookReceiver(testTls);
  const h = await createHarness({
    mediaPlane: plane,
    bridges: { external_engine: fake },
    webhookCaCerts: [testTls.caPem],
    env: { SVC_WEBHOOK_ALLOW_PRIVATE: "true" },
    lifecycle: true,
  });
  try {
    const base = h.serve();
    const key = await h.key("proj_metrics");
    await fn({
      h,
      fake,
      key,
      receiver,
      wsUrl: (sessionId) => `${base.replace("http", "ws")}/media/v0/sessions/${sessionId}`,
      async create() {
        const res = await h.req("POST", "/v1/sessions", {
          key,
          body: engineBody("wss://engine.test/v0", { webhook_url: receiver.url }),
        });
        if (res.status !== 200) throw new Error(`create answered ${res.status} ${res.text}`);
        return res.body;
      },
    });
  } finally {
    await h.close();
    await receiver.close();
  }
}

Deno.test("metrics route: scope sessions:read, 404 across projects, every figure null before anything is measured", async () => {
  await withMetrics(async ({ h, key, create }) => {
    const s = await create();
    const path = `/v1/sessions/${s.session_id}/metrics`;
    const reader = await h.key("proj_metrics", ["sessions:read"]);
    const res = await h.req("GET", path, { key: reader });
    assert.equal(res.status, 200, res.text);
    const m = SessionMetrics.parse(res.body);
    assert.equal(m.session_id, s.session_id);
    assert.equal(m.first_frame_ms, null);
    for (const f of [m.turn_latency_ms, m.avatar_latency_ms, m.av_offset_ms, m.engine_latency_ms]) {
      assert.deepEqual(f, { count: 0, p50: null, p95: null });
    }
    assert.deepEqual(m.playback, []);
    assert.equal(m.player_reports, 0);
    checkErrorBody(await h.req("GET", path, { key: await h.key("proj_metrics", ["sessions:write"]) }), {
      status: 403,
      code: "SVC_AUTH_MISSING_SCOPE",
    });
    checkErrorBody(await h.req("GET", path), { status: 401, code: "SVC_AUTH_MISSING_CREDENTIALS" });
    const other = await h.key("proj_other");
    checkErrorBody(await h.req("GET", path, { key: other }), { status: 404, code: "SVC_SESSION_NOT_FOUND" });
    checkErrorBody(await h.req("GET", "/v1/sessions/session:AAAAAAAAAAAAAAAAAAAAAA/metrics", { key }), {
      status: 404,
      code: "SVC_SESSION_NOT_FOUND",
    });
    assert.equal((await h.req("POST", `/v1/sessions/${s.session_id}/end`, { key })).status, 200);
  });
});

Deno.test("metrics: the player's reports and the service's measures make the turn latency and its split; the final figures ride in session.ended", async () => {
  await withMetrics(async ({ h, fake, key, receiver, wsUrl, create }) => {
    const s = await create();
    const engine = fake.of(s.session_id);
    const c = MediaClientRecorder.withToken(wsUrl(s.session_id), s.client_token);
    await c.until(() => c.texts.some((t) => t.type === "hello"), DEADLINE_MS, "hello");
    const hello = c.texts.find((t) => t.type === "hello");
    assert.equal(typeof hello.timeline_ms, "number", "the hello says where the media clock is");

    // The player places the media clock on its own: the service answers at once with its clock.
    c.ws.send(JSON.stringify({ type: "clock_sync", t: 1234.5 }));
    await c.until(() => c.texts.some((t) => t.type === "clock_sync"), DEADLINE_MS, "clock answer");
    const sync = c.texts.find((t) => t.type === "clock_sync");
    assert.equal(sync.t, 1234.5);
    assert.ok(sync.timeline_ms >= hello.timeline_ms);

    // The user speaks 300 ms (20 ms frames at the engine's input rate), then is quiet.
    const rate = engine.inputSampleRate;
    for (let i = 0; i < 15; i++) c.ws.send(tone(rate / 50, rate, 300, 8000, i * rate / 50).buffer);
    for (let i = 0; i < 5; i++) c.ws.send(new Int16Array(rate / 50).buffer);
    await until(() => engine.userAudio.length >= 20, DEADLINE_MS, "the user's audio at the engine");
    // The engine answers; its first audio lands on the media clock.
    engine.events.onResponseStarted("r_1");
    for (let i = 0; i < 10; i++) engine.events.onAudio(tone(480, 24000, 220, 9000, i * 480), "r_1");
    engine.events.onResponseDone("r_1", "completed");
    await until(() => engine.played.some((p) => p.responseId === "r_1"), DEADLINE_MS, "r_1 played");

    // The player reports what it measured (as the SDK player does every 2 s).
    const report = {
      type: "player_stats",
      playback: "webcodecs",
      first_frame_ms: 120,
      frame_latency_ms: [55, 60, 65],
      av_offset_ms: [-3, 1, 5],
      presented_frames: 50,
      dropped_frames: 1,
      stalls: 1,
      stall_ms: 2000,
      catch_ups: 1,
      skipped_ms: 1900,
      catch_up_ms: 140,
      audio_underrun_ms: 20,
    };
    c.ws.send(JSON.stringify(report));
    const path = `/v1/sessions/${s.session_id}/metrics`;
    let m = SessionMetrics.parse((await h.req("GET", path, { key })).body);
    await until(
      async () => {
        m = SessionMetrics.parse((await h.req("GET", path, { key })).body);
        return m.turn_latency_ms.count === 1;
      },
      DEADLINE_MS,
      "the turn to be measured",
    );
    assert.equal(m.first_frame_ms, 120);
    assert.deepEqual(m.frame_latency_ms, { count: 3, p50: 60, p95: 65 });
    assert.deepEqual(m.av_offset_ms, { count: 3, p50: 1, p95: 5 });
    assert.deepEqual(m.stalls, { count: 1, total_ms: 2000 });
    assert.deepEqual(m.catch_ups, { count: 1, skipped_ms: 1900, last_ms: 140 });
    assert.deepEqual(m.frames, { presented: 50, dropped: 1 });
    assert.deepEqual(m.playback, ["webcodecs"]);
    assert.ok(m.engine_connect_ms !== null && m.engine_connect_ms >= 0);
    // turn = the engine's share + the avatar's; the avatar's includes the frame latency the player measured.
    const [turn, engineShare, avatar] = [
      m.turn_latency_ms.p50!,
      m.engine_latency_ms.p50!,
      m.avatar_latency_ms.p50!,
    ];
    assert.ok(engineShare >= 0, `engine share ${engineShare}`);
    assert.ok(avatar >= 60, `the avatar's share counts the 60 ms frame latency: ${avatar}`);
    assert.ok(Math.abs(turn - (engineShare + avatar)) <= 2, `${turn} = ${engineShare} + ${avatar}`);

    // A report that is not one (or is absurd) changes nothing, and does not close the socket.
    c.ws.send(JSON.stringify({ type: "player_stats", frame_latency_ms: "lots", first_frame_ms: -5 }));
    c.ws.send("not json");
    c.ws.send(JSON.stringify({ type: "something_else" }));
    await until(
      async () => {
        const n = SessionMetrics.parse((await h.req("GET", path, { key })).body);
        return n.player_reports === 2;
      },
      DEADLINE_MS,
      "the second report",
    );
    const after = SessionMetrics.parse((await h.req("GET", path, { key })).body);
    assert.equal(after.first_frame_ms, 120);
    assert.deepEqual(after.frame_latency_ms, m.frame_latency_ms);
    assert.equal(c.closeCode, null);

    // The end keeps the final figures; the webhook carries the same object.
    assert.equal((await h.req("POST", `/v1/sessions/${s.session_id}/end`, { key })).status, 200);
    const final = (await h.req("GET", path, { key })).body;
    assert.equal(final.player_reports, 2);
    await receiver.waitFor(
      () => receiver.accepted().some((r) => JSON.parse(r.body).type === "session.ended"),
      DEADLINE_MS,
      "session.ended",
    );
    const ended = receiver.accepted().map((r) => LifecycleEvent.parse(JSON.parse(r.body))).find((e) =>
      e.type === "session.ended"
    )!;
    assert.ok(ended.type === "session.ended");
    assert.deepEqual(ended.data.metrics, final);
    await c.close();
  });
});
