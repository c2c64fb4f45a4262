import assert from "node:assert/strict";
import { ApiError } from "../../src/errors.ts";
import { kvOp } from "../../src/kv/guard.ts";

Deno.test("kvOp: 'database is locked' (another process on the SQLite file) is retried, then becomes a 503", async () => {
  let calls = 0;
  const value = await kvOp(() => {
    calls++;
    if (calls < 3) return Promise.reject(new TypeError("database is locked"));
    return Promise.resolve(42);
  });
  assert.equal(value, 42);
  assert.equal(calls, 3);

  calls = 0;
  await assert.rejects(
    kvOp(() => {
      calls++;
      return Promise.reject(new TypeError("database is locked"));
    }),
    (e) => e instanceof ApiError && e.code === "SVC_SESSION_STATE_UNAVAILABLE",
  );
  assert.equal(calls, 7, "six retries, then it gives up");

  // other storage errors are not retried
  calls = 0;
  await assert.rejects(kvOp(() => {
    calls++;
    return Promise.reject(new TypeError("simulated KV outage"));
  }));
  assert.equal(calls, 1);
});
