import assert from "node:assert/strict";
import type { SessionRecord } from "../../src/vocabulary/session_record.ts";
import type { SessionStatus } from "../../src/vocabulary/session_states.ts";
import { TEARDOWN_TIMEOUT_MS } from "../../src/vocabulary/host_requests.ts";
import { createHarness, type Harness } from "../../testing/harness.ts";
import { startFakeEngine } from "../../testing/fake_engine.ts";
import { DEADLINE_MS } from "../../testing/deadline.ts";
import { checkErrorBody, engineBody, testTls } from "../../testing/fixtures.ts";

async function seed(h: Harness, projectId: string, status: SessionStatus): Promise<string> {
  const id = `session:seed${status.replace(/_/g, "")}`;
  const rec: SessionRecord = {
    session_id: id,
    project_id: projectId,
    status,
    provider_type: "external_engine",
    transport: "websocket_fmp4",
    avatar_id: null,
    bg_id: null,
    webhook_url: null,
    created_at: h.clock.now(),
    started_at: null,
    ended_at: null,
    warning: null,
    error_code: null,
    end_reason: null,
    chunks_rendered: 0,
    created_by: "svc_key_seed",
    owner: "elsewhere",
  };
  await h.kv.set(["project", projectId, "session", id], rec);
  return id;
}

Deno.test("end: the spec's teardown timeout is 10 s", () => {
  assert.equal(TEARDOWN_TIMEOUT_MS, 10_000);
});

Deno.test("end: active → ended (graceful handshake completes), then 409 SVC_SESSION_ENDED", async () => {
  const engine = await startFakeEngine(testTls, "ok");
  const h = await createHarness({ caCerts: [testTls.caPem] });
  try {
    const key = await h.key("proj_a");
    const created = await h.req("POST", "/v1/sessions", { key, body: engineBody(engine.url) });
    const sid = created.body.session_id;
    const res = await h.req("POST", `/v1/sessions/${sid}/end`, { key });
    assert.equal(res.status, 200, res.text);
    assert.equal(res.body.status, "ended");
    assert.equal(res.body.session_id, sid);
    assert.ok(Number.isInteger(res.body.ended_at));
    assert.equal(typeof res.body.duration_s, "number");
    assert.ok(res.body.duration_s >= 0 && res.body.duration_s < 60);
    assert.equal(res.body.chunks_rendered, 0);
    assert.ok(!("warning" in res.body));
    // the engine was told, with the V0 session.end
    assert.ok(engine.messages.some((m) => m.type === "session.end"));
    const got = await h.req("GET", `/v1/sessions/${sid}`, { key });
    assert.equal(got.body.status, "ended");
    assert.equal(got.body.ended_at, res.body.ended_at);
    for (const force of ["", "?force=true"]) {
      checkErrorBody(await h.req("POST", `/v1/sessions/${sid}/end${force}`, { key }), {
        status: 409,
        code: "SVC_SESSION_ENDED",
      });
    }
    assert.equal((await h.req("GET", `/v1/sessions/${sid}`, { key })).body.status, "ended");
  } finally {
    await h.close();
    await engine.close();
  }
});

Deno.test("end: force=true skips the handshake and ends at once", async () => {
  const engine = await startFakeEngine(testTls, "ignore_end");
  const h = await createHarness({ caCerts: [testTls.caPem], teardownTimeoutMs: 30_000 });
  try {
    const key = await h.key("proj_a");
    const created = await h.req("POST", "/v1/sessions", { key, body: engineBody(engine.url) });
    const res = await h.req("POST", `/v1/sessions/${created.body.session_id}/end?force=true`, { key });
    assert.equal(res.status, 200, res.text);
    // an engine that ignores session.end would hold a graceful end for the whole 30 s teardown timeout,
    // then answer ended_with_warnings: "ended" is the forced end's own answer
    assert.equal(res.body.status, "ended");
    assert.equal(res.body.end_reason, "ended_by_api_forced");
    assert.ok(!engine.messages.some((m) => m.type === "session.end"), "no session.end on a forced end");
    checkErrorBody(await h.req("POST", `/v1/sessions/${created.body.session_id}/end?force=yes`, { key }), {
      status: 400,
      code: "SVC_INVALID_REQUEST",
    });
  } finally {
    await h.close();
    await engine.close();
  }
});

Deno.test("end: teardown timeout → ended_with_warnings with a warning; concurrent end meanwhile → 409 CONFLICT", async () => {
  const engine = await startFakeEngine(testTls, "ignore_end");
  // (a teardown timeout long enough for the checks below to run while the session is ending, however busy
  // the machine)
  const h = await createHarness({ caCerts: [testTls.caPem], teardownTimeoutMs: 3000 });
  try {
    const key = await h.key("proj_a");
    const created = await h.req("POST", "/v1/sessions", { key, body: engineBody(engine.url) });
    const sid = created.body.session_id;
    const ending = h.req("POST", `/v1/sessions/${sid}/end`, { key });
    await waitFor(async () => (await h.req("GET", `/v1/sessions/${sid}`, { key })).body.status === "ending");
    checkErrorBody(await h.req("POST", `/v1/sessions/${sid}/end`, { key }), {
      status: 409,
      code: "SVC_SESSION_CONFLICT",
    });
    checkErrorBody(await h.req("POST", `/v1/sessions/${sid}/client-token`, { key }), {
      status: 409,
      code: "SVC_SESSION_CONFLICT",
    });
    const res = await ending;
    assert.equal(res.status, 200, res.text);
    assert.equal(res.body.status, "ended_with_warnings");
    assert.equal(typeof res.body.warning, "string");
    assert.ok(res.body.warning.length > 0);
    assert.ok(!/localhost|127\.0\.0\.1|wss:/.test(res.body.warning), "warning is provider-agnostic");
    checkErrorBody(await h.req("POST", `/v1/sessions/${sid}/end`, { key }), {
      status: 409,
      code: "SVC_SESSION_ENDED",
    });
  } finally {
    await h.close();
    await engine.close();
  }
});

Deno.test("end: created, activating, ending and failed answer 409 SVC_SESSION_CONFLICT and stay unchanged", async () => {
  const h = await createHarness();
  try {
    const key = await h.key("proj_a");
    for (const status of ["created", "activating", "ending", "failed"] as const) {
      const sid = await seed(h, "proj_a", status);
      checkErrorBody(await h.req("POST", `/v1/sessions/${sid}/end`, { key }), {
        status: 409,
        code: "SVC_SESSION_CONFLICT",
      });
      checkErrorBody(await h.req("POST", `/v1/sessions/${sid}/end?force=true`, { key }), {
        status: 409,
        code: "SVC_SESSION_CONFLICT",
      });
      assert.equal((await h.req("GET", `/v1/sessions/${sid}`, { key })).body.status, status);
    }
    for (const status of ["ended", "ended_with_warnings"] as const) {
      const sid = await seed(h, "proj_a", status);
      checkErrorBody(await h.req("POST", `/v1/sessions/${sid}/end`, { key }), {
        status: 409,
        code: "SVC_SESSION_ENDED",
      });
      checkErrorBody(await h.req("POST", `/v1/sessions/${sid}/client-token`, { key }), {
        status: 409,
        code: "SVC_SESSION_ENDED",
      });
    }
  } finally {
    await h.close();
  }
});

Deno.test("end: an engine that ends the session itself leaves it ended; a dropped engine leaves a warning", async () => {
  const engine = await startFakeEngine(testTls, "ok");
  const h = await createHarness({ caCerts: [testTls.caPem], env: { SVC_MAX_CONCURRENT_SESSIONS: "2" } });
  try {
    const key = await h.key("proj_a");
    const a = await h.req("POST", "/v1/sessions", { key, body: engineBody(engine.url) });
    engine.closeAll(1000, true);
    await waitFor(async () =>
      (await h.req("GET", `/v1/sessions/${a.body.session_id}`, { key })).body.status === "ended"
    );
    const b = await h.req("POST", "/v1/sessions", { key, body: engineBody(engine.url) });
    engine.closeAll(1011);
    await waitFor(async () =>
      (await h.req("GET", `/v1/sessions/${b.body.session_id}`, { key })).body.status === "ended_with_warnings"
    );
    checkErrorBody(await h.req("POST", `/v1/sessions/${b.body.session_id}/end`, { key }), {
      status: 409,
      code: "SVC_SESSION_ENDED",
    });
    assert.equal((await h.kv.get(["project", "proj_a", "live_sessions"])).value, 0, "both slots freed");
    const rec = (await h.kv.get<SessionRecord>(["project", "proj_a", "session", b.body.session_id])).value!;
    assert.equal(rec.end_reason, "engine_failed");
  } finally {
    await h.close();
    await engine.close();
  }
});

async function waitFor(cond: () => Promise<boolean>, ms = DEADLINE_MS): Promise<void> {
  const until = Date.now() + ms;
  while (Date.now() < until) {
    if (await cond()) return;
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error("condition not met in time");
}
