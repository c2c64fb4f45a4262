/**
 * Owner leases: a process that is gone (killed, or crashed) leaves sessions behind; another process, or the
 * next start, finds its expired lease and ends them (`owner_lost`), freeing their slots and sending their
 * events exactly once, even with several reapers at once.
 */
import { DEADLINE_MS } from "../../testing/deadline.ts";
import assert from "node:assert/strict";
import { LifecycleEvent } from "../../src/vocabulary/schemas.ts";
import { listEvents } from "../../src/kv/webhook_outbox.ts";
import { startServiceProcess } from "../../testing/service_process.ts";
import { startFakeEngine } from "../../testing/fake_engine.ts";
import { engineBody, testTls } from "../../testing/fixtures.ts";
import { createHarness, type Harness, type HarnessOptions } from "../../testing/harness.ts";
import { eventually, startWebhookReceiver } from "../../testing/webhook_receiver.ts";

const PROJECT = "proj_lease";
const LEASE_MS = 30_000;

function options(kv: Deno.Kv, extra: HarnessOptions = {}): HarnessOptions {
  return {
    kv,
    caCerts: [testTls.caPem],
    webhookCaCerts: [testTls.caPem],
    lifecycle: true,
    env: { SVC_WEBHOOK_ALLOW_PRIVATE: "true", SVC_MAX_CONCURRENT_SESSIONS: "10" },
    ...extra,
  };
}

async function liveCount(kv: Deno.Kv): Promise<number> {
  return (await kv.get<number>(["project", PROJECT, "live_sessions"])).value ?? 0;
}

Deno.test("owner lease: a killed service process's session is reaped by another process and its events sent", async () => {
  const dir = await Deno.makeTempDir();
  const engine = await startFakeEngine(testTls, "ok");
  const receiver = startWebhookReceiver(testTls);
  await Deno.writeTextFile(`${dir}/ca.pem`, testTls.caPem);
  const kv = await Deno.openKv(`${dir}/svc.kv`);
  // two processes on one SQLite file: the other process ticks slowly to keep lock contention low
  const other = await createHarness(options(kv, { tickMs: 200 }));
  const proc = await startServiceProcess({
    SVC_KV: `${dir}/svc.kv`,
    SVC_ENGINE_CA_FILE: `${dir}/ca.pem`,
    SVC_WEBHOOK_CA_FILE: `${dir}/ca.pem`,
    SVC_WEBHOOK_ALLOW_PRIVATE: "true",
    SVC_WEBHOOK_POLL_MS: "50",
    SVC_OWNER_LEASE_S: String(LEASE_MS / 1000),
  });
  const url = proc.url;
  try {
    const key = await other.key(PROJECT);
    const res = await fetch(`${url}/v1/sessions`, {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      body: JSON.stringify(engineBody(engine.url, { webhook_url: receiver.url })),
    });
    const created = await res.json();
    assert.equal(res.status, 200, JSON.stringify(created));
    const sid = created.session_id as string;
    await receiver.waitFor(
      () => receiver.accepted().length === 1,
      DEADLINE_MS,
      "session.started from the owner",
    );
    const owner = (await kv.get<{ owner: string }>(["project", PROJECT, "session", sid])).value!.owner;
    assert.notEqual(owner, other.instanceId);

    proc.kill("SIGKILL");
    assert.equal((await proc.exited()).status.signal, "SIGKILL");
    // Dead, but its lease has not run out yet: nothing is reaped.
    await other.lifecycle.sweep();
    assert.equal((await other.req("GET", `/v1/sessions/${sid}`, { key })).body.status, "active");
    assert.equal(await liveCount(kv), 1);

    other.clock.advance(LEASE_MS + 1000);
    await eventually(
      async () => (await other.req("GET", `/v1/sessions/${sid}`, { key })).body.status !== "active",
      DEADLINE_MS,
      "reaped",
    );
    const got = (await other.req("GET", `/v1/sessions/${sid}`, { key })).body;
    assert.equal(got.status, "ended_with_warnings");
    assert.equal(got.end_reason, "owner_lost");
    assert.equal(await liveCount(kv), 0, "the slot is free");
    assert.equal(
      (await kv.get(["owned_session", owner, PROJECT, sid])).versionstamp,
      null,
      "index entry gone",
    );
    // (a pass ends the lease's sessions first and marks the lease after them: read at once, the tombstone
    // was not there yet once in a full CI run, 6 Dec)
    await eventually(
      async () => Boolean((await kv.get<{ reaped_at: number }>(["owner_lease", owner])).value?.reaped_at),
      DEADLINE_MS,
      "lease tombstoned",
    );

    await receiver.waitFor(
      () => receiver.accepted().length === 2,
      DEADLINE_MS,
      "session.ended from the reaper",
    );
    const events = receiver.accepted().map((r) => LifecycleEvent.parse(JSON.parse(r.body)));
    assert.deepEqual(events.map((e) => e.type), ["session.started", "session.ended"]);
    const ended = events[1];
    if (ended.type !== "session.ended") throw new Error("unreachable");
    assert.equal(ended.data.end_reason, "owner_lost");
    assert.equal(ended.data.status, "ended_with_warnings");
  } finally {
    proc.kill("SIGKILL");
    await proc.exited();
    await other.close();
    kv.close();
    await engine.close();
    await receiver.close();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("owner lease: the next start reaps what a crashed process left (active and starting sessions)", async () => {
  const engine = await startFakeEngine(testTls, "ok");
  const receiver = startWebhookReceiver(testTls);
  const kv = await Deno.openKv(":memory:");
  const a = await createHarness(options(kv));
  let b: Harness | null = null;
  try {
    const key = await a.key(PROJECT);
    const res = await a.req("POST", "/v1/sessions", {
      key,
      body: engineBody(engine.url, { webhook_url: receiver.url }),
    });
    const sid = res.body.session_id;
    // a session stuck starting when the process died
    const stuck = "session:stuckActivating000000";
    await kv.set(["project", PROJECT, "session", stuck], {
      ...(await kv.get<Record<string, unknown>>(["project", PROJECT, "session", sid])).value,
      session_id: stuck,
      status: "activating",
      started_at: null,
    });
    await kv.set(["owned_session", a.instanceId, PROJECT, stuck], true);
    await kv.set(["project", PROJECT, "live_sessions"], 2);
    await receiver.waitFor(() => receiver.accepted().length === 1);
    // crash: loops stop, the engine connection drops, nothing is recorded
    await a.close();
    assert.equal(await liveCount(kv), 2);

    b = await createHarness(options(kv, { lifecycle: false }));
    b.clock.advance(LEASE_MS + 1000);
    await b.lifecycle.start(); // the start-up pass reaps
    const s1 = (await b.req("GET", `/v1/sessions/${sid}`, { key })).body;
    assert.equal(s1.status, "ended_with_warnings");
    assert.equal(s1.end_reason, "owner_lost");
    const s2 = (await b.req("GET", `/v1/sessions/${stuck}`, { key })).body;
    assert.equal(s2.status, "failed");
    assert.equal(s2.end_reason, "owner_lost");
    assert.equal(await liveCount(kv), 0);
    await receiver.waitFor(() => receiver.accepted().length === 3, DEADLINE_MS, "ended + failed events");
    const failed = receiver.accepted().map((r) => LifecycleEvent.parse(JSON.parse(r.body))).find((e) =>
      e.type === "session.failed"
    )!;
    if (failed.type !== "session.failed") throw new Error("unreachable");
    assert.equal(failed.data.error_code, "SVC_SESSION_CANCELLED");
  } finally {
    await b?.close();
    kv.close();
    await engine.close();
    await receiver.close();
  }
});

Deno.test("owner lease: reapers racing end each session exactly once; a live lease is never reaped", async () => {
  const engine = await startFakeEngine(testTls, "ok");
  const kv = await Deno.openKv(":memory:");
  const a = await createHarness(options(kv));
  const b = await createHarness(options(kv, { lifecycle: false }));
  const c = await createHarness(options(kv, { lifecycle: false }));
  try {
    const key = await a.key(PROJECT);
    const sids: string[] = [];
    for (let i = 0; i < 6; i++) {
      const res = await a.req("POST", "/v1/sessions", {
        key,
        body: engineBody(engine.url, { webhook_url: "https://localhost:1/unreachable" }),
      });
      assert.equal(res.status, 200, res.text);
      sids.push(res.body.session_id);
    }
    // alive: another process's pass leaves a's sessions alone
    assert.equal(await b.lifecycle.reaper.sweep(), 0);
    await a.lifecycle.stop(); // stops renewing (as a hung process would)
    b.clock.advance(LEASE_MS + 1000);
    c.clock.advance(LEASE_MS + 1000);
    const [rb, rc] = await Promise.all([b.lifecycle.reaper.sweep(), c.lifecycle.reaper.sweep()]);
    assert.equal(rb + rc, 6, "six sessions reaped in total");
    assert.equal(await liveCount(kv), 0);
    for (const sid of sids) {
      const events = await listEvents(kv, PROJECT, sid);
      assert.deepEqual(events.map((e) => e.type).sort(), ["session.ended", "session.started"]);
    }
    // a comes back: its renewal finds the lease reaped and it lets go of the sessions still running here
    assert.equal(a.runtime.size, 6);
    await a.lifecycle.lease.renew();
    assert.equal(a.runtime.size, 0, "the old owner stopped running them");
    for (const sid of sids) {
      assert.equal((await listEvents(kv, PROJECT, sid)).length, 2, "no second end event");
    }
    const lease = (await kv.get<{ reaped_at: number | null }>(["owner_lease", a.instanceId])).value!;
    assert.equal(lease.reaped_at, null, "a fresh lease");
  } finally {
    await a.close();
    await b.close();
    await c.close();
    kv.close();
    await engine.close();
  }
});
