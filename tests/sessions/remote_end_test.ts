/**
 * An end that reaches a process which does not run the session (two processes share one KV): the owner
 * carries it out (graceful teardown included), or, when the owner does not answer, the session is ended
 * with a warning and the owner releases its runtime once it sees that.
 */
import assert from "node:assert/strict";
import { createHarness } from "../../testing/harness.ts";
import { startFakeEngine } from "../../testing/fake_engine.ts";
import { checkErrorBody, engineBody, testTls } from "../../testing/fixtures.ts";

async function pair(options: { ownerLifecycle: boolean }) {
  const kv = await Deno.openKv(":memory:");
  const owner = await createHarness({ kv, caCerts: [testTls.caPem], lifecycle: options.ownerLifecycle });
  const other = await createHarness({
    kv,
    caCerts: [testTls.caPem],
    lifecycle: true,
    // (long enough for the owner to carry out an end on a busy machine; an unresponsive owner waits it out)
    teardownTimeoutMs: 3000,
    remoteEndMarginMs: 300,
  });
  return {
    kv,
    owner,
    other,
    async close() {
      await other.close();
      await owner.close();
      kv.close();
    },
  };
}

Deno.test("remote end: the owner process carries out an end asked of another process", async () => {
  const engine = await startFakeEngine(testTls, "ok");
  const p = await pair({ ownerLifecycle: true });
  try {
    const key = await p.owner.key("proj_a");
    const created = await p.owner.req("POST", "/v1/sessions", { key, body: engineBody(engine.url) });
    const sid = created.body.session_id;
    assert.ok(p.owner.runtime.has(sid) && !p.other.runtime.has(sid));
    const res = await p.other.req("POST", `/v1/sessions/${sid}/end`, { key });
    assert.equal(res.status, 200, res.text);
    assert.equal(res.body.status, "ended", "the owner's graceful teardown completed");
    assert.equal(res.body.end_reason, "ended_by_api");
    assert.ok(!("warning" in res.body));
    assert.ok(engine.messages.some((m) => m.type === "session.end"), "the engine got the V0 session.end");
    assert.ok(!p.owner.runtime.has(sid), "the owner released the session");
    checkErrorBody(await p.other.req("POST", `/v1/sessions/${sid}/end`, { key }), {
      status: 409,
      code: "SVC_SESSION_ENDED",
    });
    assert.equal((await p.kv.get(["project", "proj_a", "live_sessions"])).value, 0);
  } finally {
    await p.close();
    await engine.close();
  }
});

Deno.test("remote end: an owner that does not answer leaves the session ended with a warning, then releases it", async () => {
  const engine = await startFakeEngine(testTls, "ok");
  const p = await pair({ ownerLifecycle: false }); // the owner's reconcile loop is not running
  try {
    const key = await p.owner.key("proj_a");
    const created = await p.owner.req("POST", "/v1/sessions", { key, body: engineBody(engine.url) });
    const sid = created.body.session_id;
    const res = await p.other.req("POST", `/v1/sessions/${sid}/end?force=true`, { key });
    assert.equal(res.status, 200, res.text);
    assert.equal(res.body.status, "ended_with_warnings");
    assert.equal(res.body.end_reason, "ended_by_api_forced");
    assert.match(res.body.warning, /did not complete the end in time/);
    assert.ok(p.owner.runtime.has(sid), "still running at the unresponsive owner");
    // when the owner reconciles, it sees the final record and releases the runtime
    await p.owner.worker.reconcile();
    await p.owner.worker.settled();
    assert.ok(!p.owner.runtime.has(sid));
    const rec = await p.owner.req("GET", `/v1/sessions/${sid}`, { key });
    assert.equal(rec.body.status, "ended_with_warnings", "the record was not rewritten");
  } finally {
    await p.close();
    await engine.close();
  }
});

Deno.test("reconcile: a session still starting here is left alone; one ended elsewhere is released", async () => {
  const engine = await startFakeEngine(testTls, "ok");
  const p = await pair({ ownerLifecycle: false });
  try {
    const key = await p.owner.key("proj_a");
    const created = await p.owner.req("POST", "/v1/sessions", { key, body: engineBody(engine.url) });
    const sid = created.body.session_id;
    const k = ["project", "proj_a", "session", sid];
    const rec = (await p.kv.get<Record<string, unknown>>(k)).value!;
    // as while it starts: the record still says activating
    await p.kv.set(k, { ...rec, status: "activating" });
    await p.owner.worker.reconcile();
    await p.owner.worker.settled();
    assert.ok(p.owner.runtime.has(sid), "a starting session is not torn down");
    // active, and ending without a request (this process's own end under way), are left alone too
    for (const status of ["active", "ending"]) {
      await p.kv.set(k, { ...rec, status });
      await p.owner.worker.reconcile();
      await p.owner.worker.settled();
      assert.ok(p.owner.runtime.has(sid), `${status} is left alone`);
    }
    await p.kv.set(k, { ...rec, status: "ended_with_warnings", end_reason: "owner_lost" });
    await p.owner.worker.reconcile();
    await p.owner.worker.settled();
    assert.ok(!p.owner.runtime.has(sid), "ended elsewhere: released here");
  } finally {
    await p.close();
    await engine.close();
  }
});
