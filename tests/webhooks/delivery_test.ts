/**
 * Webhook delivery against a real https receiver on loopback: signatures, the retry schedule on the
 * injected clock, 410 Gone, redirects, timeouts, a receiver that is down and comes back, and a restart of
 * the service in the middle of a delivery.
 */
import { DEADLINE_MS } from "../../testing/deadline.ts";
import assert from "node:assert/strict";
import { Webhook } from "standardwebhooks";
import { listEvents, type WebhookEventRecord } from "../../src/kv/webhook_outbox.ts";
import { DEFAULT_RETRY_SCHEDULE, parseRetrySchedule } from "../../src/config.ts";
import { verifyWebhook } from "../../src/webhooks/verify.ts";
import { startFakeEngine } from "../../testing/fake_engine.ts";
import { engineBody, testTls } from "../../testing/fixtures.ts";
import { createHarness, type Harness, type HarnessOptions } from "../../testing/harness.ts";
import {
  eventually,
  startWebhookReceiver,
  type WebhookReceiver as Receiver,
} from "../../testing/webhook_receiver.ts";

const PROJECT = "proj_hooks";

async function harness(options: HarnessOptions = {}): Promise<Harness> {
  return await createHarness({
    caCerts: [testTls.caPem],
    webhookCaCerts: [testTls.caPem],
    teardownTimeoutMs: 5000, // only an engine that does not answer would wait this long
    lifecycle: true,
    ...options,
    env: { SVC_WEBHOOK_ALLOW_PRIVATE: "true", SVC_MAX_CONCURRENT_SESSIONS: "50", ...options.env },
  });
}

/**
 * Waits until the receiver has accepted `n` deliveries; on a timeout the error says where each of the
 * sessions' events stands in the outbox (a failed attempt waits for the injected clock).
 */
async function accepted(h: Harness, receiver: Receiver, n: number, sessions: string[]): Promise<void> {
  try {
    await receiver.waitFor(() => receiver.accepted().length === n, DEADLINE_MS, `${n} deliveries accepted`);
  } catch (err) {
    const events = (await Promise.all(sessions.map((sid) => listEvents(h.kv, PROJECT, sid)))).flat();
    const where = events.map((e) => `${e.type} ${e.state} attempts ${e.attempts} ${e.last_error ?? ""}`);
    throw new Error(`${(err as Error).message}; outbox: ${where.join("; ")}`);
  }
}

/** Creates a session posting to `url` and ends it: two events (start, end). */
async function startAndEnd(h: Harness, key: string, engineUrl: string, url: string): Promise<string> {
  const res = await h.req("POST", "/v1/sessions", { key, body: engineBody(engineUrl, { webhook_url: url }) });
  assert.equal(res.status, 200, res.text);
  const end = await h.req("POST", `/v1/sessions/${res.body.session_id}/end?force=true`, { key });
  assert.equal(end.status, 200, end.text);
  return res.body.session_id;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

Deno.test("delivery: signed with the project's secret; after a rotation with both secrets", async () => {
  const engine = await startFakeEngine(testTls, "ok");
  const receiver = startWebhookReceiver(testTls);
  const h = await harness();
  try {
    const key = await h.key(PROJECT);
    const before = (await h.req("GET", "/v1/webhooks/secret", { key })).body.secret;
    const sessions = [await startAndEnd(h, key, engine.url, receiver.url)];
    await accepted(h, receiver, 2, sessions);
    for (const r of receiver.accepted()) {
      assert.equal(r.headers.get("content-type"), "application/json");
      assert.match(r.headers.get("user-agent")!, /^avatar-session-service-webhooks\//);
      await verifyWebhook({ secret: before, headers: r.headers, body: r.body });
      new Webhook(before).verify(r.body, Object.fromEntries(r.headers));
      assert.ok(Math.abs(Number(r.timestamp) - Date.now() / 1000) < 5);
    }
    const rotated = (await h.req("POST", "/v1/webhooks/secret/rotate", { key })).body;
    assert.notEqual(rotated.secret, before);
    assert.equal(rotated.previous_secret, before);
    sessions.push(await startAndEnd(h, key, engine.url, receiver.url));
    await accepted(h, receiver, 4, sessions);
    for (const r of receiver.accepted().slice(2)) {
      assert.equal(r.signature.split(" ").length, 2, "both signatures during the grace period");
      await verifyWebhook({ secret: before, headers: r.headers, body: r.body });
      await verifyWebhook({ secret: rotated.secret, headers: r.headers, body: r.body });
      new Webhook(rotated.secret).verify(r.body, Object.fromEntries(r.headers));
    }
    // after the grace period only the new secret signs
    h.clock.advance(24 * 3600_000 + 1000);
    sessions.push(await startAndEnd(h, key, engine.url, receiver.url));
    await accepted(h, receiver, 6, sessions);
    for (const r of receiver.accepted().slice(4)) {
      assert.equal(r.signature.split(" ").length, 1);
      await assert.rejects(
        verifyWebhook({ secret: before, headers: r.headers, body: r.body, now: h.clock.now() }),
      );
      await verifyWebhook({ secret: rotated.secret, headers: r.headers, body: r.body, now: h.clock.now() });
    }
  } finally {
    await h.close();
    await engine.close();
    await receiver.close();
  }
});

Deno.test("delivery: failed attempts are retried on the schedule (injected clock), then given up", async () => {
  const engine = await startFakeEngine(testTls, "ok");
  const receiver = startWebhookReceiver(testTls, () => 500);
  const h = await harness();
  try {
    const key = await h.key(PROJECT);
    const sid = await startAndEnd(h, key, engine.url, receiver.url);
    // an attempt counts once its outcome is recorded (the next due time is set from that moment)
    const recorded = (n: number) =>
      eventually(
        async () => {
          const events = await listEvents(h.kv, PROJECT, sid);
          return events.length === 2 && events.every((e) => e.attempts === n && e.lease_owner === null);
        },
        DEADLINE_MS,
        `attempt ${n} recorded`,
      );
    await recorded(1);
    const schedule = parseRetrySchedule(DEFAULT_RETRY_SCHEDULE);
    assert.ok(schedule.reduce((a, b) => a + b) > 24 * 3600_000, "the default schedule spans more than a day");
    let seen = 2;
    for (const [i, delay] of schedule.entries()) {
      h.clock.advance(delay - 1000);
      await sleep(120);
      assert.equal(receiver.received.length, seen, `no attempt before ${delay} ms`);
      h.clock.advance(1000);
      seen += 2;
      await receiver.waitFor(
        () => receiver.received.length === seen,
        DEADLINE_MS,
        `attempts after ${delay} ms`,
      );
      await recorded(i + 2);
    }
    h.clock.advance(7 * 24 * 3600_000);
    await sleep(150);
    assert.equal(receiver.received.length, 2 * (schedule.length + 1), "no attempt after the last one");
    const events = await listEvents(h.kv, PROJECT, sid);
    assert.equal(events.length, 2);
    for (const e of events) {
      assert.equal(e.state, "failed");
      assert.equal(e.attempts, schedule.length + 1);
      assert.equal(e.last_status, 500);
      assert.equal(e.last_error, "HTTP 500");
    }
    // the same id on every retry
    const ids = new Set(receiver.received.map((r) => r.id));
    assert.deepEqual([...ids].sort(), events.map((e) => e.event_id).sort());
  } finally {
    await h.close();
    await engine.close();
    await receiver.close();
  }
});

Deno.test("delivery: 410 Gone stops deliveries to that URL; other URLs still get theirs", async () => {
  const engine = await startFakeEngine(testTls, "ok");
  const receiver = startWebhookReceiver(testTls, () => 410);
  const live = startWebhookReceiver(testTls);
  const h = await harness();
  try {
    const key = await h.key(PROJECT);
    const a = await startAndEnd(h, key, engine.url, receiver.url);
    await eventually(
      async () => (await listEvents(h.kv, PROJECT, a)).every((e) => e.state === "gone"),
      DEADLINE_MS,
      "gone",
    );
    const firstCount = receiver.received.length;
    assert.ok(firstCount >= 1 && firstCount <= 2, `${firstCount} requests before the URL was known gone`);
    const b = await startAndEnd(h, key, engine.url, receiver.url);
    const c = await startAndEnd(h, key, engine.url, live.url);
    await live.waitFor(() => live.accepted().length === 2);
    await eventually(
      async () => (await listEvents(h.kv, PROJECT, b)).every((e) => e.state === "gone"),
      DEADLINE_MS,
      "b gone",
    );
    h.clock.advance(3 * 3600_000);
    await sleep(100);
    assert.equal(receiver.received.length, firstCount, "nothing more was sent to the gone URL");
    const bEvents = await listEvents(h.kv, PROJECT, b);
    assert.ok(bEvents.every((e) => e.attempts === 0 && e.last_error!.includes("410")));
    assert.ok((await listEvents(h.kv, PROJECT, c)).every((e) => e.state === "delivered"));
  } finally {
    await h.close();
    await engine.close();
    await receiver.close();
    await live.close();
  }
});

Deno.test("delivery: redirects are not followed; a receiver that does not answer times out; both are retried", async () => {
  const engine = await startFakeEngine(testTls, "ok");
  const target = startWebhookReceiver(testTls);
  const redirecting = startWebhookReceiver(
    testTls,
    () => new Response(null, { status: 307, headers: { location: target.url } }),
  );
  const hanging = startWebhookReceiver(testTls, () => "hang");
  // (long enough for the redirect to be answered on a busy machine; the hanging receiver waits it out)
  const h = await harness({ env: { SVC_WEBHOOK_TIMEOUT_MS: "2000" } });
  try {
    const key = await h.key(PROJECT);
    const r = await startAndEnd(h, key, engine.url, redirecting.url);
    const t = await startAndEnd(h, key, engine.url, hanging.url);
    const settled = async (sid: string) =>
      (await listEvents(h.kv, PROJECT, sid)).every((e) => e.attempts === 1 && e.state === "pending");
    await eventually(
      async () => (await settled(r)) && (await settled(t)),
      DEADLINE_MS,
      "first attempts recorded",
    );
    for (const e of await listEvents(h.kv, PROJECT, r)) {
      assert.equal(e.last_status, 307);
      assert.equal(e.last_error, "redirect 307 (not followed)");
      assert.equal(e.due_at, e.last_attempt_at! + 5000);
    }
    for (const e of await listEvents(h.kv, PROJECT, t)) {
      assert.equal(e.last_status, null);
      assert.equal(e.last_error, "timeout after 2000 ms");
    }
    assert.equal(target.received.length, 0, "the redirect was not followed");
  } finally {
    await h.close();
    await engine.close();
    await target.close();
    await redirecting.close();
    await hanging.close();
  }
});

Deno.test("delivery: a receiver that is down and comes back gets every event exactly once per event id", async () => {
  const engine = await startFakeEngine(testTls, "ok");
  const probe = startWebhookReceiver(testTls);
  const port = probe.port;
  const url = probe.url;
  await probe.close(); // the receiver is down: connections are refused
  const h = await harness();
  let receiver: ReturnType<typeof startWebhookReceiver> | null = null;
  try {
    const key = await h.key(PROJECT);
    const sids: string[] = [];
    for (let i = 0; i < 5; i++) sids.push(await startAndEnd(h, key, engine.url, url));
    const all = async () => (await Promise.all(sids.map((s) => listEvents(h.kv, PROJECT, s)))).flat();
    await eventually(async () => (await all()).every((e) => e.attempts === 1), DEADLINE_MS, "first attempts");
    h.clock.advance(5_000);
    await eventually(
      async () => (await all()).every((e) => e.attempts === 2),
      DEADLINE_MS,
      "second attempts",
    );
    assert.ok((await all()).every((e) => e.last_error === "connection failed"));
    receiver = startWebhookReceiver(testTls, () => 204, port);
    h.clock.advance(5 * 60_000);
    await receiver.waitFor(() => receiver!.accepted().length === 10, DEADLINE_MS, "all ten events");
    // Each delivery is recorded after the receiver's answer: jump the clock only once every record says so,
    // else a claim still in flight has its lease expire under the jump and is (rightly) attempted again.
    await eventually(
      async () => (await all()).every((e) => e.state === "delivered"),
      DEADLINE_MS,
      "every delivery recorded",
    );
    h.clock.advance(24 * 3600_000);
    await sleep(150);
    const ids = receiver.received.map((r) => r.id);
    assert.equal(ids.length, 10, "no event twice");
    assert.equal(new Set(ids).size, 10);
    const events = await all();
    assert.deepEqual(ids.sort(), events.map((e: WebhookEventRecord) => e.event_id).sort());
    assert.ok(events.every((e) => e.state === "delivered" && e.attempts === 3));
  } finally {
    await h.close();
    await engine.close();
    await receiver?.close();
  }
});

Deno.test("delivery: a service restart in the middle of a delivery loses nothing", async () => {
  const dir = await Deno.makeTempDir();
  const engine = await startFakeEngine(testTls, "ok");
  const receiver = startWebhookReceiver(testTls, () => "hang");
  const kvA = await Deno.openKv(`${dir}/svc.kv`);
  const a = await harness({ kv: kvA, env: { SVC_WEBHOOK_TIMEOUT_MS: "2000" } });
  let kvB: Deno.Kv | null = null;
  let b: Harness | null = null;
  try {
    const key = await a.key(PROJECT);
    const sid = await startAndEnd(a, key, engine.url, receiver.url);
    await receiver.waitFor(() => receiver.received.length === 2, DEADLINE_MS, "attempts in flight");
    // the process stops mid-delivery: its attempts are cut, nothing is recorded
    await a.close();
    kvA.close();
    receiver.behave(() => 204);
    kvB = await Deno.openKv(`${dir}/svc.kv`);
    b = await harness({ kv: kvB });
    const events = await listEvents(b.kv, PROJECT, sid);
    assert.equal(events.length, 2);
    assert.ok(events.every((e) => e.state === "pending" && e.lease_owner === a.instanceId), "still claimed");
    await sleep(100);
    assert.equal(receiver.accepted().length, 0, "not redelivered while the claim holds");
    b.clock.advance(2_000 + 30_000); // the claim of a (its timeout + margin) runs out
    await receiver.waitFor(
      () => receiver.accepted().length === 2,
      DEADLINE_MS,
      "redelivered after the restart",
    );
    assert.deepEqual(receiver.accepted().map((r) => r.id).sort(), events.map((e) => e.event_id).sort());
    await eventually(async () =>
      (await listEvents(b!.kv, PROJECT, sid)).every((e) => e.state === "delivered")
    );
  } finally {
    await b?.close();
    kvB?.close();
    await engine.close();
    await receiver.close();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("delivery: a receiver that hangs holds one slot, not the queue: other events are delivered meanwhile", async () => {
  const engine = await startFakeEngine(testTls, "ok");
  // Requests to /slow hang until the receiver closes; the others are accepted.
  const receiver = startWebhookReceiver(testTls, (r) => (r.path.endsWith("/slow") ? "hang" : 204));
  const h = await harness({ env: { SVC_WEBHOOK_TIMEOUT_MS: "10000", SVC_WEBHOOK_CONCURRENCY: "4" } });
  try {
    const key = await h.key(PROJECT);
    await startAndEnd(h, key, engine.url, `${receiver.url}/slow`);
    await receiver.waitFor(() => receiver.received.length === 2, DEADLINE_MS, "both slow attempts in flight");
    const fast = await startAndEnd(h, key, engine.url, `${receiver.url}/fast`);
    await receiver.waitFor(() => receiver.accepted().length === 2, DEADLINE_MS, "fast events delivered");
    assert.ok(receiver.accepted().every((r) => r.path.endsWith("/fast")));
    assert.ok(receiver.accepted().every((r) => JSON.parse(r.body).data.session_id === fast));
    assert.equal(
      receiver.received.filter((r) => r.status === 0).length,
      2,
      "the slow attempts are still hanging",
    );
  } finally {
    await h.close();
    await engine.close();
    await receiver.close();
  }
});
