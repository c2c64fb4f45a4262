import assert from "node:assert/strict";
import { createHarness } from "../../testing/harness.ts";
import { startFakeEngine } from "../../testing/fake_engine.ts";
import { checkErrorBody, engineBody, testTls } from "../../testing/fixtures.ts";

Deno.test("rate limit: exactly the burst is admitted under concurrent requests, then 429 with Retry-After", async () => {
  const h = await createHarness({ env: { SVC_RATE_LIMIT_PER_MINUTE: "60", SVC_RATE_LIMIT_BURST: "10" } });
  try {
    const key = await h.key("proj_a");
    const other = await h.key("proj_a");
    const results = await Promise.all(
      Array.from({ length: 30 }, () => h.req("GET", "/v1/api-keys", { key })),
    );
    const ok = results.filter((r) => r.status === 200);
    const limited = results.filter((r) => r.status === 429);
    assert.equal(ok.length, 10, "burst of 10 admitted");
    assert.equal(limited.length, 20);
    for (const r of limited) {
      const body = checkErrorBody(r, { status: 429, code: "SVC_RATE_LIMIT_EXCEEDED", retryable: true });
      assert.ok((body.retry_after as number) >= 1 && (body.retry_after as number) <= 2);
    }
    // per key: another key of the same project is not affected
    assert.equal((await h.req("GET", "/v1/api-keys", { key: other })).status, 200);
    // one emission interval later (1 s at 60/min) exactly one more request is admitted
    h.clock.advance(1000);
    const next = await Promise.all(Array.from({ length: 5 }, () => h.req("GET", "/v1/api-keys", { key })));
    assert.equal(next.filter((r) => r.status === 200).length, 1);
    // after a full refill the burst is available again
    h.clock.advance(10_000);
    const refill = await Promise.all(Array.from({ length: 12 }, () => h.req("GET", "/v1/api-keys", { key })));
    assert.equal(refill.filter((r) => r.status === 200).length, 10);
  } finally {
    await h.close();
  }
});

Deno.test("concurrent sessions: the per-project ceiling holds exactly under concurrent creates", async () => {
  const engine = await startFakeEngine(testTls, "ok");
  const h = await createHarness({ caCerts: [testTls.caPem], env: { SVC_MAX_CONCURRENT_SESSIONS: "3" } });
  try {
    const key = await h.key("proj_a");
    const results = await Promise.all(
      Array.from({ length: 12 }, () => h.req("POST", "/v1/sessions", { key, body: engineBody(engine.url) })),
    );
    const ok = results.filter((r) => r.status === 200);
    assert.equal(ok.length, 3);
    for (const r of results.filter((r) => r.status !== 200)) {
      checkErrorBody(r, { status: 429, code: "SVC_RATE_LIMIT_CONCURRENT_SESSIONS", retryable: true });
    }
    assert.equal(engine.upgrades.length, 3, "refused creates never reached the engine");
    // another project has its own ceiling
    const b = await h.key("proj_b");
    assert.equal((await h.req("POST", "/v1/sessions", { key: b, body: engineBody(engine.url) })).status, 200);
    // ending one frees one slot
    await h.req("POST", `/v1/sessions/${ok[0].body.session_id}/end`, { key });
    const after = await Promise.all(
      Array.from({ length: 3 }, () => h.req("POST", "/v1/sessions", { key, body: engineBody(engine.url) })),
    );
    assert.equal(after.filter((r) => r.status === 200).length, 1);
    assert.equal((await h.kv.get(["project", "proj_a", "live_sessions"])).value, 3);
  } finally {
    await h.close();
    await engine.close();
  }
});

Deno.test("rate limit: SVC_RATE_LIMIT_PER_MINUTE=0 turns it off (no 429, no X-RateLimit-* headers)", async () => {
  const h = await createHarness({ env: { SVC_RATE_LIMIT_PER_MINUTE: "0", SVC_RATE_LIMIT_BURST: "1" } });
  try {
    const key = await h.key("proj_a");
    const results = await Promise.all(
      Array.from({ length: 100 }, () => h.req("GET", "/v1/api-keys", { key })),
    );
    assert.deepEqual([...new Set(results.map((r) => r.status))], [200]);
    assert.equal(results[0].headers.get("x-ratelimit-limit"), null);
    assert.equal(results[0].headers.get("x-ratelimit-remaining"), null);
  } finally {
    await h.close();
  }
});

Deno.test("rate limit: X-RateLimit-Limit is the burst, X-RateLimit-Remaining the requests still admissible at once", async () => {
  const h = await createHarness({ env: { SVC_RATE_LIMIT_PER_MINUTE: "60", SVC_RATE_LIMIT_BURST: "5" } });
  try {
    const key = await h.key("proj_a");
    const seen: [string | null, string | null][] = [];
    for (let i = 0; i < 6; i++) {
      const r = await h.req("GET", "/v1/api-keys", { key });
      seen.push([r.headers.get("x-ratelimit-limit"), r.headers.get("x-ratelimit-remaining")]);
    }
    assert.deepEqual(seen, [["5", "4"], ["5", "3"], ["5", "2"], ["5", "1"], ["5", "0"], ["5", "0"]]);
  } finally {
    await h.close();
  }
});
