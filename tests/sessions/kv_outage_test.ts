/**
 * Sessions never get stuck when KV blinks: an end that happened while storage was out (a lifetime limit,
 * an engine failure, an API end) is recorded once storage is back, with its true reason and `ended_at`,
 * exactly one end event and its slot freed; a retried API end completes an `ending` session; the webhook
 * worker backs off. And an engine that hangs up right after its handshake never leaves a session `active`.
 */
import assert from "node:assert/strict";
import type { SessionRecord } from "../../src/vocabulary/session_record.ts";
import { createHarness, type Harness } from "../../testing/harness.ts";
import { FakeBridge } from "../../testing/fake_bridge.ts";
import { startFakeEngine } from "../../testing/fake_engine.ts";
import { checkErrorBody, engineBody, testTls } from "../../testing/fixtures.ts";
import { faultyKv, KvFaults } from "../../testing/faulty_kv.ts";
import { testMedia } from "../../testing/test_media.ts";
import { eventually } from "../../testing/webhook_receiver.ts";

const WEBHOOK = "https://hooks.example.com/avatar";

interface Outage {
  h: Harness;
  real: Deno.Kv;
  faults: KvFaults;
  fake: FakeBridge;
  key: string;
  create(): Promise<string>;
  record(sid: string): Promise<SessionRecord>;
  /** The outbox events of a session (types). */
  events(sid: string): Promise<string[]>;
  liveCounter(): Promise<number>;
  close(): Promise<void>;
}

async function outage(env: Record<string, string> = {}): Promise<Outage> {
  const real = await Deno.openKv(":memory:");
  const faults = new KvFaults();
  const fake = new FakeBridge();
  const h = await createHarness({
    kv: faultyKv(real, faults),
    bridges: { external_engine: fake },
    env: { SVC_WEBHOOK_ALLOW_PRIVATE: "true", ...env },
    lifecycle: true,
    tickMs: 20,
    endRecordWaitMs: 300,
    journal: { firstDelayMs: 20, maxDelayMs: 100 },
  });
  const key = await h.key("proj_a");
  return {
    h,
    real,
    faults,
    fake,
    key,
    async create() {
      const res = await h.req("POST", "/v1/sessions", {
        key,
        body: engineBody("wss://engine.example/v0", { webhook_url: WEBHOOK }),
      });
      assert.equal(res.status, 200, res.text);
      return res.body.session_id;
    },
    async record(sid) {
      return (await real.get<SessionRecord>(["project", "proj_a", "session", sid])).value!;
    },
    async events(sid) {
      const out: string[] = [];
      for await (
        const e of real.list<{ session_id: string; type: string }>({
          prefix: ["project", "proj_a", "webhook_event"],
        })
      ) {
        if (e.value.session_id === sid) out.push(e.value.type);
      }
      return out.sort();
    },
    async liveCounter() {
      return (await real.get<number>(["project", "proj_a", "live_sessions"])).value ?? 0;
    },
    async close() {
      faults.down = false;
      await h.close();
      real.close();
    },
  };
}

Deno.test("KV outage: a join window that runs out during the outage stops the session at once; its end is recorded when KV is back", async () => {
  const o = await outage({ SVC_SESSION_JOIN_WINDOW_S: "5" });
  try {
    const sid = await o.create();
    o.faults.down = true;
    o.h.clock.advance(6_000);
    await eventually(() => !o.h.runtime.has(sid), 20_000, "the runtime stopped during the outage");
    const stoppedBy = o.h.clock.now();
    assert.equal(o.fake.of(sid).closed, true, "the engine connection was closed");
    assert.equal((await o.record(sid)).status, "active", "storage is out: nothing recorded yet");
    await new Promise((r) => setTimeout(r, 200));
    const back = o.h.clock.now();
    o.faults.down = false;
    await eventually(async () => (await o.record(sid)).status === "ended", 20_000, "the end recorded");
    const rec = await o.record(sid);
    assert.equal(rec.end_reason, "no_client_joined", "its true reason");
    assert.ok(
      rec.ended_at! <= stoppedBy && rec.ended_at! < back,
      "ended_at is when it stopped, not when KV came back",
    );
    assert.deepEqual(await o.events(sid), ["session.ended", "session.started"], "exactly one end event");
    assert.equal(await o.liveCounter(), 0, "slot freed");
    assert.equal((await o.real.get(["owned_session", o.h.instanceId, "proj_a", sid])).versionstamp, null);
  } finally {
    await o.close();
  }
});

Deno.test("KV outage: an engine that fails during the outage is recorded engine_failed when KV is back", async () => {
  const o = await outage();
  try {
    const sid = await o.create();
    o.faults.down = true;
    o.fake.of(sid).events.onClosed({ kind: "failed", reason: "engine_closed_1011" });
    await eventually(() => !o.h.runtime.has(sid), 20_000, "the runtime stopped");
    const stoppedBy = o.h.clock.now();
    // Longer than any bounded retry: the end must survive it.
    await new Promise((r) => setTimeout(r, 3_000));
    o.faults.down = false;
    await eventually(
      async () => (await o.record(sid)).status === "ended_with_warnings",
      20_000,
      "the end recorded",
    );
    const rec = await o.record(sid);
    assert.equal(rec.end_reason, "engine_failed");
    assert.ok(rec.ended_at! <= stoppedBy);
    assert.deepEqual(await o.events(sid), ["session.ended", "session.started"]);
    assert.equal(await o.liveCounter(), 0);
    // A later end sees it ended.
    checkErrorBody(await o.h.req("POST", `/v1/sessions/${sid}/end`, { key: o.key }), {
      status: 409,
      code: "SVC_SESSION_ENDED",
    });
  } finally {
    await o.close();
  }
});

Deno.test("KV outage: an end during the outage answers 503 and leaves the session ending; a retry completes it", async () => {
  const o = await outage();
  try {
    const [a, b] = [await o.create(), await o.create()];
    for (const sid of [a, b]) {
      // Storage goes out after `ending` is written, while the engine is being closed.
      const conn = o.fake.of(sid);
      const close = conn.close.bind(conn);
      conn.close = (options) => {
        o.faults.down = true;
        return close(options);
      };
      checkErrorBody(await o.h.req("POST", `/v1/sessions/${sid}/end`, { key: o.key }), {
        status: 503,
        code: "SVC_SESSION_STATE_UNAVAILABLE",
        retryable: true,
      });
      assert.ok(!o.h.runtime.has(sid), "the teardown happened");
      assert.equal((await o.record(sid)).status, "ending");
      // Retried while storage is still out: 503 again, nothing lost.
      checkErrorBody(await o.h.req("POST", `/v1/sessions/${sid}/end`, { key: o.key }), {
        status: 503,
        code: "SVC_SESSION_STATE_UNAVAILABLE",
        retryable: true,
      });
      o.faults.down = false;
      if (sid === a) {
        // The journal lands it in the background before the client retries.
        await eventually(
          async () => (await o.record(sid)).status === "ended",
          20_000,
          "landed in the background",
        );
      }
      const res = await o.h.req("POST", `/v1/sessions/${sid}/end`, { key: o.key });
      assert.equal(res.status, 200, `${sid === a ? "after" : "before"} the background landing: ${res.text}`);
      assert.equal(res.body.status, "ended");
      assert.equal(res.body.end_reason, "ended_by_api");
      checkErrorBody(await o.h.req("POST", `/v1/sessions/${sid}/end`, { key: o.key }), {
        status: 409,
        code: "SVC_SESSION_ENDED",
      });
      assert.deepEqual(await o.events(sid), ["session.ended", "session.started"]);
    }
    assert.equal(await o.liveCounter(), 0);
  } finally {
    await o.close();
  }
});

Deno.test("KV outage: the webhook worker backs off and says so once, not once per poll", async () => {
  const o = await outage();
  try {
    o.faults.down = true;
    await new Promise((r) => setTimeout(r, 1_500)); // 75 polls' worth at SVC_WEBHOOK_POLL_MS=20
    o.faults.down = false;
    await eventually(
      () => o.h.logs.some((l) => l.includes("webhook worker: storage available again")),
      20_000,
      "the worker noticed storage is back",
    );
    const warnings = o.h.logs.filter((l) => l.includes("webhook worker: poll failed"));
    assert.equal(warnings.length, 1, `one warning for the outage, got ${warnings.length}`);
  } finally {
    await o.close();
  }
});

Deno.test("ready then fail: an engine that hangs up while the media plane starts fails the create; nothing stays active", async () => {
  const engine = await startFakeEngine(testTls, "ready_then_fail");
  const media = testMedia(0, {
    // The media plane is still starting when the engine hangs up (50 ms after its handshake).
    started: () =>
      eventually(() => engine.messages.length > 0 && engine.upgrades.length > 0, 20_000).then(
        () => new Promise((r) => setTimeout(r, 300)),
      ),
  });
  const h = await createHarness({ caCerts: [testTls.caPem], media: media.factory });
  try {
    const key = await h.key("proj_a");
    const res = await h.req("POST", "/v1/sessions", {
      key,
      body: engineBody(engine.url, { webhook_url: WEBHOOK }),
    });
    checkErrorBody(res, { status: 502, code: "SVC_PROVIDER_DOWNSTREAM_FAILED", retryable: true });
    const recs: SessionRecord[] = [];
    for await (const e of h.kv.list<SessionRecord>({ prefix: ["project", "proj_a", "session"] })) {
      recs.push(e.value);
    }
    assert.equal(recs.length, 1);
    assert.equal(recs[0].status, "failed");
    assert.equal(recs[0].end_reason, "start_failed");
    const types: string[] = [];
    for await (const e of h.kv.list<{ type: string }>({ prefix: ["project", "proj_a", "webhook_event"] })) {
      types.push(e.value.type);
    }
    assert.deepEqual(types, ["session.failed"], "one terminal event, no session.started");
    assert.equal((await h.kv.get(["project", "proj_a", "live_sessions"])).value, 0);
    assert.equal(h.runtime.size, 0);
  } finally {
    await h.close();
    await engine.close();
  }
});

Deno.test("ready then fail: an engine that hangs up while `active` is being written: the engine's end wins", async () => {
  const engine = await startFakeEngine(testTls, "ready_then_fail");
  const real = await Deno.openKv(":memory:");
  const faults = new KvFaults();
  const h = await createHarness({ kv: faultyKv(real, faults), caCerts: [testTls.caPem] });
  try {
    const key = await h.key("proj_a");
    let held = false;
    faults.beforeCommit = async () => {
      // The first commit after the engine's handshake is `active`: hold it until the engine has hung up
      // and the runtime has seen it.
      if (!held && engine.messages.some((m) => m.type === "session.start")) {
        held = true;
        await eventually(
          () => h.logs.some((l) => l.includes("session ended by itself")),
          20_000,
          "engine hung up",
        );
      }
    };
    const res = await h.req("POST", "/v1/sessions", {
      key,
      body: engineBody(engine.url, { webhook_url: WEBHOOK }),
    });
    faults.beforeCommit = null;
    assert.equal(res.status, 200, res.text);
    const sid = res.body.session_id;
    await eventually(
      async () => {
        const v = (await h.req("GET", `/v1/sessions/${sid}`, { key })).body;
        return v.status === "ended_with_warnings" && v.end_reason === "engine_failed";
      },
      20_000,
      "the session ended engine_failed",
    );
    const types: string[] = [];
    for await (const e of real.list<{ type: string }>({ prefix: ["project", "proj_a", "webhook_event"] })) {
      types.push(e.value.type);
    }
    assert.deepEqual(types.sort(), ["session.ended", "session.started"]);
    assert.equal((await real.get(["project", "proj_a", "live_sessions"])).value, 0);
  } finally {
    await h.close();
    real.close();
    await engine.close();
  }
});

Deno.test("ready then fail: with no delay anywhere the session still ends (failed or engine_failed), one end event", async () => {
  const engine = await startFakeEngine(testTls, "ready_then_fail");
  const h = await createHarness({ caCerts: [testTls.caPem] });
  try {
    const key = await h.key("proj_a");
    for (let i = 0; i < 5; i++) {
      await h.req("POST", "/v1/sessions", { key, body: engineBody(engine.url, { webhook_url: WEBHOOK }) });
    }
    await eventually(
      async () => {
        for await (const e of h.kv.list<SessionRecord>({ prefix: ["project", "proj_a", "session"] })) {
          if (!["failed", "ended_with_warnings"].includes(e.value.status)) return false;
        }
        return true;
      },
      20_000,
      "every session ended",
    );
    const ends = new Map<string, number>();
    for await (
      const e of h.kv.list<{ session_id: string; type: string }>({
        prefix: ["project", "proj_a", "webhook_event"],
      })
    ) {
      if (e.value.type !== "session.started") {
        ends.set(e.value.session_id, (ends.get(e.value.session_id) ?? 0) + 1);
      }
    }
    assert.equal(ends.size, 5);
    for (const n of ends.values()) assert.equal(n, 1);
    assert.equal((await h.kv.get(["project", "proj_a", "live_sessions"])).value, 0);
  } finally {
    await h.close();
    await engine.close();
  }
});
