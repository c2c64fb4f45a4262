/**
 * KV round trips per request on the read path: none written, at most one read in the common case (the
 * key check and the rate limit answer from memory). Background work (the key cache's epoch polls, the
 * rate limiter's syncs) is not per request and is told apart by the keys it touches.
 */
import assert from "node:assert/strict";
import { createHarness } from "../../testing/harness.ts";
import { startFakeEngine } from "../../testing/fake_engine.ts";
import { engineBody, testTls } from "../../testing/fixtures.ts";

interface Op {
  kind: "read" | "write";
  keys: string;
}

/** Wraps `kv`, recording each operation (a get, a getMany, a list, a set/delete, an atomic commit). */
function recordingKv(kv: Deno.Kv, ops: Op[]): Deno.Kv {
  const fmt = (k: unknown) => JSON.stringify(k);
  return new Proxy(kv, {
    get(target, prop) {
      const value = Reflect.get(target, prop, target);
      if (typeof value !== "function") return value;
      if (prop === "get" || prop === "getMany" || prop === "list") {
        return (...args: unknown[]) => {
          ops.push({ kind: "read", keys: fmt(args[0]) });
          return value.apply(target, args);
        };
      }
      if (prop === "set" || prop === "delete") {
        return (...args: unknown[]) => {
          ops.push({ kind: "write", keys: fmt(args[0]) });
          return value.apply(target, args);
        };
      }
      if (prop === "atomic") {
        return () => {
          const op = target.atomic();
          const commit = op.commit.bind(op);
          op.commit = () => {
            ops.push({ kind: "write", keys: "atomic" });
            return commit();
          };
          return op;
        };
      }
      return value.bind(target);
    },
  });
}

const BACKGROUND = /api_key_revocation|owner_lease|rate_demand/;

Deno.test("KV round trips: GET, client-token, 404 and 401 write nothing and read at most once", async () => {
  const engine = await startFakeEngine(testTls, "ok");
  const real = await Deno.openKv(":memory:");
  const ops: Op[] = [];
  const h = await createHarness({
    kv: recordingKv(real, ops),
    caCerts: [testTls.caPem],
    env: { SVC_RATE_LIMIT_PER_MINUTE: "1000000", SVC_RATE_LIMIT_BURST: "100000" }, // on, never refusing
  });
  try {
    const key = await h.key("proj_a");
    const created = await h.req("POST", "/v1/sessions", { key, body: engineBody(engine.url) });
    assert.equal(created.status, 200);
    const sid = created.body.session_id;
    const cases: [string, string, string | undefined, number][] = [
      ["GET", `/v1/sessions/${sid}`, key, 200],
      ["POST", `/v1/sessions/${sid}/client-token`, key, 200],
      ["GET", "/v1/sessions/session:AAAAAAAAAAAAAAAAAAAAAA", key, 404],
      ["GET", `/v1/sessions/${sid}`, undefined, 401],
      ["GET", `/v1/sessions/${sid}`, "svc_sk_" + "x".repeat(38), 401],
    ];
    for (const [method, path, k, status] of cases) {
      for (let i = 0; i < 20; i++) {
        ops.length = 0;
        const res = await h.req(method, path, { key: k });
        assert.equal(res.status, status, `${method} ${path}: ${res.text}`);
        const own = ops.filter((o) => !BACKGROUND.test(o.keys));
        assert.deepEqual(own.filter((o) => o.kind === "write"), [], `${method} ${path} wrote`);
        assert.ok(own.length <= 1, `${method} ${path}: ${own.length} KV operations: ${JSON.stringify(own)}`);
        const background = ops.filter((o) => BACKGROUND.test(o.keys) && o.kind === "write");
        assert.ok(background.every((o) => o.keys.includes("rate_demand")), JSON.stringify(background));
      }
    }
  } finally {
    await h.close();
    real.close();
    await engine.close();
  }
});
