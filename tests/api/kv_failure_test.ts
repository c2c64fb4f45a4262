import assert from "node:assert/strict";
import type { SessionRecord } from "../../src/vocabulary/session_record.ts";
import { LIVE_STATUSES } from "../../src/vocabulary/session_states.ts";
import { createHarness, type Harness } from "../../testing/harness.ts";
import { startFakeEngine } from "../../testing/fake_engine.ts";
import { checkErrorBody, engineBody, testTls } from "../../testing/fixtures.ts";
import { faultyKv, KvFaults } from "../../testing/faulty_kv.ts";

async function records(kv: Deno.Kv, project = "proj_a"): Promise<SessionRecord[]> {
  const out: SessionRecord[] = [];
  for await (const e of kv.list<SessionRecord>({ prefix: ["project", project, "session"] })) {
    out.push(e.value);
  }
  return out;
}

/** The invariants that make state "not half-written". */
async function assertConsistent(real: Deno.Kv, h: Harness, label: string): Promise<void> {
  const recs = await records(real);
  const live = recs.filter((r) => LIVE_STATUSES.includes(r.status));
  const counter = (await real.get<number>(["project", "proj_a", "live_sessions"])).value ?? 0;
  assert.equal(counter, live.length, `${label}: live counter ${counter} != live records ${live.length}`);
  for (const r of recs) {
    assert.ok(!["created", "activating", "ending"].includes(r.status), `${label}: record left ${r.status}`);
    assert.equal(
      h.runtime.has(r.session_id),
      r.status === "active",
      `${label}: runtime disagrees with ${r.status}`,
    );
  }
}

Deno.test("KV down: every route answers retryable 503 SVC_SESSION_STATE_UNAVAILABLE", async () => {
  const real = await Deno.openKv(":memory:");
  const faults = new KvFaults();
  const h = await createHarness({ kv: faultyKv(real, faults) });
  try {
    const key = await h.key("proj_a");
    faults.down = true;
    const sid = "session:AAAAAAAAAAAAAAAAAAAAAA";
    const calls: [string, string, unknown?][] = [
      ["POST", "/v1/api-keys", { name: "x", scopes: ["sessions:read"] }],
      ["DELETE", "/v1/api-keys/svc_key_x"],
      ["GET", "/v1/api-keys"],
      ["POST", "/v1/sessions", engineBody("wss://localhost:1/v0")],
      ["GET", `/v1/sessions/${sid}`],
      ["POST", `/v1/sessions/${sid}/end`],
      ["POST", `/v1/sessions/${sid}/client-token`],
    ];
    for (const [method, path, body] of calls) {
      const res = await h.req(method, path, { key, body });
      checkErrorBody(res, { status: 503, code: "SVC_SESSION_STATE_UNAVAILABLE", retryable: true });
    }
  } finally {
    await h.close();
    real.close();
  }
});

Deno.test("KV failure at each step of a create: 503 or success, never half-written state", async () => {
  const engine = await startFakeEngine(testTls, "ok");
  // Count the operations of one successful create.
  const real0 = await Deno.openKv(":memory:");
  const counting = new KvFaults();
  const h0 = await createHarness({ kv: faultyKv(real0, counting), caCerts: [testTls.caPem] });
  const key0 = await h0.key("proj_a");
  counting.ops = 0;
  assert.equal(
    (await h0.req("POST", "/v1/sessions", {
      key: key0,
      body: engineBody(engine.url),
      headers: { "Idempotency-Key": "k" },
    })).status,
    200,
  );
  const total = counting.ops;
  await h0.close();
  real0.close();
  assert.ok(total >= 6, `a create takes ${total} KV operations`);

  try {
    for (let n = 1; n <= total; n++) {
      const real = await Deno.openKv(":memory:");
      const faults = new KvFaults();
      const h = await createHarness({ kv: faultyKv(real, faults), caCerts: [testTls.caPem] });
      try {
        const key = await h.key("proj_a");
        faults.ops = 0;
        faults.failOp = n;
        const res = await h.req("POST", "/v1/sessions", {
          key,
          body: engineBody(engine.url),
          headers: { "Idempotency-Key": "k" },
        });
        if (res.status !== 200) {
          checkErrorBody(res, { status: 503, code: "SVC_SESSION_STATE_UNAVAILABLE", retryable: true });
        }
        faults.failOp = null;
        await assertConsistent(real, h, `op ${n}/${total}`);
        const active = (await records(real)).filter((r) => r.status === "active");
        assert.equal(
          active.length,
          res.status === 200 ? 1 : 0,
          `op ${n}: ${res.status} but ${active.length} active`,
        );
        // A retry with the same key converges to exactly one active session.
        const retry = await h.req("POST", "/v1/sessions", {
          key,
          body: engineBody(engine.url),
          headers: { "Idempotency-Key": "k" },
        });
        assert.equal(retry.status, 200, `op ${n}: retry ${retry.text}`);
        if (res.status === 200) assert.equal(retry.body.session_id, res.body.session_id);
        assert.equal(
          (await records(real)).filter((r) => r.status === "active").length,
          1,
          `op ${n}: after retry`,
        );
        await assertConsistent(real, h, `op ${n} after retry`);
      } finally {
        await h.close();
        real.close();
      }
    }
  } finally {
    await engine.close();
  }
});

Deno.test("KV failure during end: 503 leaves the session active, or the end completes", async () => {
  const engine = await startFakeEngine(testTls, "ok");
  try {
    for (let n = 1; n <= 8; n++) {
      const real = await Deno.openKv(":memory:");
      const faults = new KvFaults();
      const h = await createHarness({ kv: faultyKv(real, faults), caCerts: [testTls.caPem] });
      try {
        const key = await h.key("proj_a");
        const created = await h.req("POST", "/v1/sessions", { key, body: engineBody(engine.url) });
        faults.ops = 0;
        faults.failOp = n;
        const res = await h.req("POST", `/v1/sessions/${created.body.session_id}/end`, { key });
        faults.failOp = null;
        const rec = (await records(real))[0];
        if (res.status === 200) {
          assert.equal(rec.status, "ended");
        } else {
          checkErrorBody(res, { status: 503, code: "SVC_SESSION_STATE_UNAVAILABLE", retryable: true });
          assert.equal(rec.status, "active", `op ${n}: a refused end leaves the session active`);
          assert.ok(h.runtime.has(rec.session_id));
          assert.equal((await h.req("POST", `/v1/sessions/${rec.session_id}/end`, { key })).status, 200);
        }
        await assertConsistent(real, h, `end op ${n}`);
      } finally {
        await h.close();
        real.close();
      }
    }
  } finally {
    await engine.close();
  }
});
