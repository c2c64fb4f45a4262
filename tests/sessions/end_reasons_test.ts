/**
 * Every end reason (but owner_lost, see owner_lease_test.ts) ends the session with the right status,
 * `end_reason` in GET, a later end answering 409 SVC_SESSION_ENDED, and exactly one signed terminal webhook
 * that a real https receiver verifies with the project's secret.
 */
import { DEADLINE_MS } from "../../testing/deadline.ts";
import assert from "node:assert/strict";
import { LifecycleEvent } from "../../src/vocabulary/schemas.ts";
import { verifyWebhook } from "../../src/webhooks/verify.ts";
import { startFakeEngine } from "../../testing/fake_engine.ts";
import type { FakeEngineBehavior } from "../../testing/fake_engine.ts";
import { checkErrorBody, engineBody, testTls } from "../../testing/fixtures.ts";
import { createHarness, type Harness } from "../../testing/harness.ts";
import { testMedia } from "../../testing/test_media.ts";
import { eventually, startWebhookReceiver, type WebhookReceiver } from "../../testing/webhook_receiver.ts";

interface Setup {
  h: Harness;
  key: string;
  receiver: WebhookReceiver;
  media: ReturnType<typeof testMedia>;
  engine: Awaited<ReturnType<typeof startFakeEngine>>;
  create(): Promise<string>;
  status(sid: string): Promise<Record<string, unknown>>;
  /** The receiver's verified, schema-checked events of a session. */
  events(sid: string): Promise<{ type: string; data: Record<string, unknown> }[]>;
  close(): Promise<void>;
}

async function setup(behavior: FakeEngineBehavior = "ok", chunks = 3): Promise<Setup> {
  const engine = await startFakeEngine(testTls, behavior);
  const receiver = startWebhookReceiver(testTls);
  const media = testMedia(chunks);
  const h = await createHarness({
    caCerts: [testTls.caPem],
    webhookCaCerts: [testTls.caPem],
    env: { SVC_WEBHOOK_ALLOW_PRIVATE: "true", SVC_MAX_CONCURRENT_SESSIONS: "20" },
    media: media.factory,
    lifecycle: true,
    teardownTimeoutMs: 5000, // the engines here answer session.end: a graceful end never waits this long
  });
  const key = await h.key("proj_life");
  const secret = (await h.req("GET", "/v1/webhooks/secret", { key })).body.secret as string;
  return {
    h,
    key,
    receiver,
    media,
    engine,
    async create() {
      const res = await h.req("POST", "/v1/sessions", {
        key,
        body: engineBody(engine.url, { webhook_url: receiver.url }),
      });
      if (behavior === "ok") assert.equal(res.status, 200, res.text);
      return res.body.session_id ?? "";
    },
    async status(sid) {
      return (await h.req("GET", `/v1/sessions/${sid}`, { key })).body;
    },
    async events(sid) {
      const out = [];
      // Delivery is at least once: a delivery the fake clock's jump overtook (its lease expired before its
      // answer was recorded) is delivered again with the same webhook-id. A receiver dedupes by that id.
      const seen = new Set<string>();
      for (const r of receiver.accepted()) {
        if (seen.has(r.id)) continue;
        seen.add(r.id);
        // The fake clock jumps minutes between a delivery and this check (session.started may be signed at
        // the session's start and checked 350 s later): the signature is what is checked here; the
        // timestamp's tolerance is tested in tests/webhooks/.
        await verifyWebhook({
          secret,
          headers: r.headers,
          body: r.body,
          now: h.clock.now(),
          toleranceS: 3600,
        });
        const parsed = LifecycleEvent.parse(JSON.parse(r.body));
        if (parsed.data.session_id === sid) out.push(parsed);
      }
      return out;
    },
    async close() {
      await h.close();
      await engine.close();
      await receiver.close();
    },
  };
}

/** Waits for the session's terminal event and checks it and the record. */
async function expectEnd(
  s: Setup,
  sid: string,
  expected: { status: string; reason: string; durationS?: number },
) {
  // Ordering across events is not guaranteed (docs/webhooks.md): wait for the start and the end.
  await eventually(
    async () => {
      const events = await s.events(sid);
      return events.some((e) => e.type === "session.started") &&
        events.some((e) => e.type !== "session.started");
    },
    DEADLINE_MS,
    "the start and end events",
  );
  const events = await s.events(sid);
  const started = events.filter((e) => e.type === "session.started");
  const ends = events.filter((e) => e.type !== "session.started");
  assert.equal(started.length, 1, "one session.started");
  assert.equal(ends.length, 1, "exactly one terminal event");
  const end = ends[0];
  assert.equal(end.type, "session.ended");
  assert.equal(end.data.status, expected.status);
  assert.equal(end.data.end_reason, expected.reason);
  assert.equal(end.data.chunks_rendered, 3);
  if (expected.durationS !== undefined) {
    assert.ok(
      Math.abs((end.data.duration_s as number) - expected.durationS) < 5,
      `duration ${end.data.duration_s}`,
    );
  }
  const got = await s.status(sid);
  assert.equal(got.status, expected.status);
  assert.equal(got.end_reason, expected.reason);
  assert.equal(got.ended_at, end.data.ended_at);
  // a session that ended by itself answers a later end with 409 SVC_SESSION_ENDED
  checkErrorBody(await s.h.req("POST", `/v1/sessions/${sid}/end`, { key: s.key }), {
    status: 409,
    code: "SVC_SESSION_ENDED",
  });
  assert.equal((await s.h.kv.get(["project", "proj_life", "live_sessions"])).value, 0, "slot freed");
}

Deno.test("lifetime: no media client within the join window → ended, no_client_joined", async () => {
  const s = await setup();
  try {
    const sid = await s.create();
    s.h.clock.advance(119_000);
    await new Promise((r) => setTimeout(r, 100));
    assert.equal((await s.status(sid)).status, "active", "still inside the join window");
    s.h.clock.advance(2_000);
    await expectEnd(s, sid, { status: "ended", reason: "no_client_joined", durationS: 121 });
    assert.ok(s.media.sessions.get(sid)!.stopped, "the media plane was stopped");
    assert.ok(s.engine.messages.some((m) => m.type === "session.end"), "the engine was told (graceful)");
  } finally {
    await s.close();
  }
});

Deno.test("lifetime: all clients gone for the idle timeout → ended, idle_timeout", async () => {
  const s = await setup();
  try {
    const sid = await s.create();
    const m = s.media.sessions.get(sid)!;
    m.clients(1);
    s.h.clock.advance(200_000); // past the join window, with a client: stays
    await new Promise((r) => setTimeout(r, 100));
    assert.equal((await s.status(sid)).status, "active");
    m.clients(2);
    m.clients(0);
    s.h.clock.advance(59_000);
    await new Promise((r) => setTimeout(r, 100));
    assert.equal((await s.status(sid)).status, "active", "inside the idle timeout");
    m.clients(1); // a client comes back: the idle clock restarts when it leaves again
    s.h.clock.advance(30_000);
    m.clients(0);
    s.h.clock.advance(59_000);
    await new Promise((r) => setTimeout(r, 100));
    assert.equal((await s.status(sid)).status, "active");
    s.h.clock.advance(2_000);
    await expectEnd(s, sid, { status: "ended", reason: "idle_timeout", durationS: 350 });
    assert.equal(s.h.runtime.clientCount(sid), 0);
  } finally {
    await s.close();
  }
});

Deno.test("lifetime: the maximum duration ends a session with clients → ended, max_duration", async () => {
  const s = await setup();
  try {
    const sid = await s.create();
    s.media.sessions.get(sid)!.clients(1);
    s.h.clock.advance(3_599_000);
    await new Promise((r) => setTimeout(r, 100));
    assert.equal((await s.status(sid)).status, "active");
    s.h.clock.advance(2_000);
    await expectEnd(s, sid, { status: "ended", reason: "max_duration", durationS: 3601 });
  } finally {
    await s.close();
  }
});

Deno.test("lifetime: the engine ends the session → ended, engine_ended; the engine drops → engine_failed", async () => {
  const s = await setup();
  try {
    const a = await s.create();
    s.engine.closeAll(1000, true);
    await expectEnd(s, a, { status: "ended", reason: "engine_ended" });
    const b = await s.create();
    s.engine.closeAll(1011);
    await expectEnd(s, b, { status: "ended_with_warnings", reason: "engine_failed" });
  } finally {
    await s.close();
  }
});

Deno.test("lifetime: the media plane fails → ended_with_warnings, render_failed", async () => {
  const s = await setup();
  try {
    const sid = await s.create();
    s.media.sessions.get(sid)!.fail("encoder exited");
    await expectEnd(s, sid, { status: "ended_with_warnings", reason: "render_failed" });
    const end = (await s.events(sid)).find((e) => e.type === "session.ended")!;
    assert.equal(end.data.warning, "The avatar media plane failed.");
  } finally {
    await s.close();
  }
});

Deno.test("lifetime: ended by the API, graceful and forced; the end answer carries end_reason", async () => {
  const s = await setup();
  try {
    const a = await s.create();
    const ra = await s.h.req("POST", `/v1/sessions/${a}/end`, { key: s.key });
    assert.equal(ra.status, 200, ra.text);
    assert.equal(ra.body.end_reason, "ended_by_api");
    await expectEnd(s, a, { status: "ended", reason: "ended_by_api" });
    const b = await s.create();
    const rb = await s.h.req("POST", `/v1/sessions/${b}/end?force=true`, { key: s.key });
    assert.equal(rb.body.end_reason, "ended_by_api_forced");
    await expectEnd(s, b, { status: "ended", reason: "ended_by_api_forced" });
  } finally {
    await s.close();
  }
});

Deno.test("lifetime: graceful shutdown ends every session (service_shutdown) and delivers before returning", async () => {
  const s = await setup();
  try {
    const ids = [await s.create(), await s.create(), await s.create()];
    await s.h.lifecycle.shutdown(5_000);
    // no waiting: the events were delivered before shutdown returned
    for (const sid of ids) {
      const ends = (await s.events(sid)).filter((e) => e.type === "session.ended");
      assert.equal(ends.length, 1, `${sid} has its end event at once`);
      assert.equal(ends[0].data.end_reason, "service_shutdown");
      assert.equal((await s.status(sid)).status, "ended");
    }
    assert.equal(s.h.runtime.size, 0);
    // the lease was given up (no session left under it)
    assert.equal((await s.h.kv.get(["owner_lease", s.h.instanceId])).value, null);
  } finally {
    await s.close();
  }
});

Deno.test("lifetime: a failed start → session.failed with its error code, and no session.started", async () => {
  const s = await setup("close_4001");
  try {
    const res = await s.h.req("POST", "/v1/sessions", {
      key: s.key,
      body: engineBody(s.engine.url, { webhook_url: s.receiver.url }),
    });
    assert.equal(res.status, 502);
    await s.receiver.waitFor(() => s.receiver.accepted().length === 1, DEADLINE_MS, "failed event");
    const [ev] = s.receiver.accepted().map((r) => LifecycleEvent.parse(JSON.parse(r.body)));
    assert.equal(ev.type, "session.failed");
    if (ev.type !== "session.failed") throw new Error("unreachable");
    assert.equal(ev.data.error_code, "SVC_PROVIDER_DOWNSTREAM_FAILED");
    assert.equal(ev.data.end_reason, "start_failed");
    const got = await s.status(ev.data.session_id);
    assert.equal(got.status, "failed");
    assert.equal(got.end_reason, "start_failed");
  } finally {
    await s.close();
  }
});
