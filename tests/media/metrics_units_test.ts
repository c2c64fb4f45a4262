/**
 * The per-session figures' parts: the distribution (percentiles to the millisecond), a player's report read
 * with bounds, the turn latency and its split from the service's own measures (on an injected clock), speech
 * that waited for a viewer, where the API reads the figures from, the clock exchange and the flush to KV.
 */
import assert from "node:assert/strict";
import { Distribution } from "../../src/metrics/distribution.ts";
import { MetricsRegistry } from "../../src/metrics/registry.ts";
import { parsePlayerReport, SessionMetrics } from "../../src/metrics/session_metrics.ts";
import { ClientMessages } from "../../src/media/client_messages.ts";
import { registerPlayerMessages } from "../../src/media/transports/player_messages.ts";
import { sessionMetricsKey } from "../../src/kv/keys.ts";
import { FLUSH_BATCH, readSessionMetrics } from "../../src/kv/session_metrics.ts";
import { emptySessionMetrics } from "../../src/vocabulary/session_metrics.ts";
import { SessionMetrics as SessionMetricsSchema } from "../../src/vocabulary/schemas.ts";
import { silentLogger } from "../../src/log.ts";
import { tone } from "../../testing/fake_bridge.ts";

Deno.test("distribution: nearest-rank percentiles to the millisecond, clamped, null when empty", () => {
  const d = new Distribution(-100, 1000);
  assert.deepEqual(d.summary(), { count: 0, p50: null, p95: null });
  for (let i = 1; i <= 100; i++) d.add(i);
  d.add(NaN);
  assert.deepEqual(d.summary(), { count: 100, p50: 50, p95: 95 });
  const c = new Distribution(0, 10);
  c.add(-5);
  c.add(50);
  assert.deepEqual(c.summary(), { count: 2, p50: 0, p95: 10 });
});

Deno.test("player report: read with bounds; anything else is not one", () => {
  assert.equal(parsePlayerReport({ type: "tool_result" }), null);
  assert.equal(parsePlayerReport("player_stats"), null);
  const r = parsePlayerReport({
    type: "player_stats",
    playback: "webcodecs",
    first_frame_ms: -3,
    frame_latency_ms: [10, "x", -1, 70_000, 55],
    av_offset_ms: Array.from({ length: 1000 }, () => 1),
    stalls: -2,
    stall_ms: "long",
    catch_up_ms: 120,
  })!;
  assert.equal(r.playback, "webcodecs");
  assert.equal(r.firstFrameMs, null, "a negative first frame is no measure");
  assert.deepEqual(r.frameLatencyMs, [10, 55]);
  assert.equal(r.avOffsetMs.length, 256, "at most 256 samples a report");
  assert.equal(r.stalls, 0);
  assert.equal(r.stallMs, 0);
  assert.equal(r.catchUpMs, 120);
  assert.equal(parsePlayerReport({ type: "player_stats", playback: "flash" })!.playback, "other");
});

/** A session's figures on a clock the test moves. */
function clocked() {
  let t = 1000;
  const m = new SessionMetrics("session:x", "proj_x", { now: () => t, wallNow: () => 1_700_000_000_000 + t });
  return { m, at: (ms: number) => (t = ms) };
}

/** `ms` of 24 kHz PCM16 ending at the clock's now (loud or quiet). */
function speech(ms: number, loud: boolean): Uint8Array {
  const pcm = loud ? tone(24 * ms, 24000, 300, 8000) : new Int16Array(24 * ms);
  return new Uint8Array(pcm.buffer);
}

Deno.test("session metrics: the turn is end of speech → first audio (engine) → first frame presented (avatar)", () => {
  const { m, at } = clocked();
  m.clientsChanged(1);
  at(2000);
  m.userAudio(speech(400, true), 24000); // the user speaks until 2000
  at(2300);
  m.userAudio(speech(300, false), 24000);
  at(2900); // the engine's first audio, 900 ms after the speech ended
  m.agentAudio("r_1");
  m.agentAudio("r_1"); // later chunks do not restart it
  m.speechPlaced("r_1", 2935); // due on the media clock 35 ms later
  at(3000); // a report before the frame was presented (2935 + 80 > 3000): not yet
  m.playerReport(parsePlayerReport({ type: "player_stats", playback: "webcodecs", frame_latency_ms: [80] })!);
  assert.equal(m.snapshot().turn_latency_ms.count, 0);
  at(3100);
  m.playerReport(
    parsePlayerReport({ type: "player_stats", playback: "webcodecs", frame_latency_ms: [70, 80, 90] })!,
  );
  const s = m.snapshot();
  assert.deepEqual(s.engine_latency_ms, { count: 1, p50: 900, p95: 900 });
  assert.deepEqual(
    s.avatar_latency_ms,
    { count: 1, p50: 115, p95: 115 },
    "35 ms to the clock + 80 ms presenting",
  );
  assert.deepEqual(s.turn_latency_ms, { count: 1, p50: 1015, p95: 1015 });
  // The next response without new speech has no turn, but the avatar's share is still measured.
  at(5000);
  m.agentAudio("r_2");
  m.speechPlaced("r_2", 5030);
  at(5200);
  m.playerReport(parsePlayerReport({ type: "player_stats", playback: "webcodecs", frame_latency_ms: [60] })!);
  assert.equal(m.snapshot().turn_latency_ms.count, 1);
  assert.equal(m.snapshot().avatar_latency_ms.count, 2);
});

Deno.test("session metrics: speech that waited for a viewer counts for the avatar from when one connected", () => {
  const { m, at } = clocked();
  at(1000);
  m.agentAudio("greeting"); // nobody watches yet
  at(4000);
  m.clientsChanged(1);
  m.speechPlaced("greeting", 4040);
  at(4500);
  m.playerReport(parsePlayerReport({ type: "player_stats", playback: "mse", frame_latency_ms: [200] })!);
  assert.deepEqual(m.snapshot().avatar_latency_ms, { count: 1, p50: 240, p95: 240 });
  assert.equal(m.snapshot().turn_latency_ms.count, 0, "no user speech: no turn");
});

Deno.test("metrics read path: the record's final figures, else this process's, else KV's, else nothing measured", async () => {
  const kv = await Deno.openKv(":memory:");
  const registry = new MetricsRegistry({ kv, logger: silentLogger, flushMs: 60_000 });
  try {
    const rec = { project_id: "proj_x", session_id: "session:x", metrics: null };
    assert.deepEqual(
      await readSessionMetrics(kv, rec, registry.snapshotOf),
      emptySessionMetrics("session:x"),
    );
    const live = registry.open("session:x", "proj_x");
    live.engineConnected(42);
    assert.equal(
      (await readSessionMetrics(kv, rec, registry.snapshotOf)).engine_connect_ms,
      42,
      "live, in memory",
    );
    await registry.flush();
    const stored =
      (await kv.get<{ engine_connect_ms: number }>(sessionMetricsKey("proj_x", "session:x"))).value;
    assert.equal(stored?.engine_connect_ms, 42, "flushed to KV");
    assert.equal((await readSessionMetrics(kv, rec)).engine_connect_ms, 42, "another process reads KV");
    live.engineConnected(43);
    const final = registry.close("session:x")!;
    assert.equal(final.engine_connect_ms, 43);
    assert.equal(registry.get("session:x"), undefined);
    assert.equal(
      (await readSessionMetrics(kv, { ...rec, metrics: final }, registry.snapshotOf)).engine_connect_ms,
      43,
      "the record's final figures win",
    );
    assert.deepEqual([...registry.live()], []);
  } finally {
    await registry.stop();
    kv.close();
  }
});

Deno.test("metrics flush: the changed figures of many sessions, a few sessions per commit, only what changed", async () => {
  const kv = await Deno.openKv(":memory:");
  let commits = 0;
  // Counts the atomic commits the flush makes (everything else is the real KV).
  const counting = new Proxy(kv, {
    get(target, prop) {
      if (prop === "atomic") {
        return () => {
          const op = target.atomic();
          const commit = op.commit.bind(op);
          op.commit = () => {
            commits++;
            return commit();
          };
          return op;
        };
      }
      const v = Reflect.get(target, prop, target);
      return typeof v === "function" ? v.bind(target) : v;
    },
  });
  const registry = new MetricsRegistry({ kv: counting, logger: silentLogger, flushMs: 60_000 });
  try {
    const n = 25;
    const live = Array.from({ length: n }, (_, i) => registry.open(`session:s${i}`, `proj_${i % 3}`));
    live.forEach((m, i) => m.engineConnected(100 + i));
    await registry.flush();
    assert.equal(commits, Math.ceil(n / FLUSH_BATCH));
    for (let i = 0; i < n; i++) {
      const stored = (await kv.get<{ engine_connect_ms: number }>(
        sessionMetricsKey(`proj_${i % 3}`, `session:s${i}`),
      )).value;
      assert.equal(stored?.engine_connect_ms, 100 + i, `session ${i} flushed under its own project`);
    }
    live[7].engineConnected(7);
    await registry.flush();
    assert.equal(commits, Math.ceil(n / FLUSH_BATCH) + 1, "only the session that changed is written again");
    await registry.flush();
    assert.equal(commits, Math.ceil(n / FLUSH_BATCH) + 1, "nothing changed: nothing written");
    for (let i = 0; i < n; i++) registry.close(`session:s${i}`);
  } finally {
    await registry.stop();
    kv.close();
  }
});

Deno.test("player messages: in the session's one dispatcher, a report is delivered and a clock exchange answered to its sender; other types are left alone", () => {
  const reports: unknown[] = [];
  const replies: string[] = [];
  const others: string[] = [];
  const messages = new ClientMessages();
  registerPlayerMessages(messages, {
    report: (r) => reports.push(r),
    timelineMs: () => 1234.567,
    clockExtras: () => ({ send_ms: { video: 4, audio: -9 } }),
  });
  const from = { reply: (t: string) => replies.push(t) };
  const other = { reply: (t: string) => others.push(t) };
  const send = (msg: unknown, sender = from) => messages.dispatch(JSON.stringify(msg), sender);
  assert.equal(send({ type: "player_stats", playback: "webrtc" }), "handled");
  assert.equal(reports.length, 1);
  assert.equal(send({ type: "clock_sync", t: 99.5 }), "handled");
  assert.deepEqual(JSON.parse(replies[0]), {
    type: "clock_sync",
    t: 99.5,
    timeline_ms: 1234.57,
    send_ms: { video: 4, audio: -9 },
  });
  assert.deepEqual(others, [], "the answer goes to the sender only");
  assert.equal(send({ type: "clock_sync", t: 7 }, other), "handled");
  assert.equal(JSON.parse(others[0]).t, 7, "another client gets its own answer");
  assert.equal(replies.length, 1);
  assert.equal(send({ type: "clock_sync", t: "soon" }), "handled");
  assert.equal(replies.length, 1, "a clock exchange without a time is not answered");
  assert.equal(send({ type: "tool_result", id: "x" }), "unhandled", "not the players' type");
  assert.equal(messages.dispatch("player_stats {", from), "invalid");
  assert.equal(send({ type: "player_stats", pad: "x".repeat(20_000) }), "invalid", "over 16 KiB");
  assert.equal(reports.length, 1);
  // Before the media clock runs, a clock exchange is not answered.
  const early = new ClientMessages();
  registerPlayerMessages(early, { report: () => {}, timelineMs: () => null });
  assert.equal(early.dispatch(JSON.stringify({ type: "clock_sync", t: 1 }), from), "handled");
  assert.equal(replies.length, 1);
});

Deno.test("metrics: the snapshot is what the API documents (the vocabulary's schema)", () => {
  const { m, at } = clocked();
  m.engineConnected(12);
  at(1500);
  m.playerReport(parsePlayerReport({ type: "player_stats", playback: "webcodecs", frame_latency_ms: [60] })!);
  assert.deepEqual(SessionMetricsSchema.parse(m.snapshot()), m.snapshot());
  assert.deepEqual(
    SessionMetricsSchema.parse(emptySessionMetrics("session:x")),
    emptySessionMetrics("session:x"),
  );
});
