/**
 * The read caches' second KV handle (src/kv/read_handle.ts): a service on a file KV reads its caches through
 * it, sees its own writes at once, and its cache reads do not queue behind the main handle's writes.
 */
import assert from "node:assert/strict";
import { loadConfig } from "../../src/config.ts";
import { silentLogger } from "../../src/log.ts";
import { compose } from "../../src/app/compose.ts";
// The worker side, loaded with this module rather than by compose()'s `await import()` during a test: its
// lip-sync module opens libespeak-ng when first imported, which the resource sanitizer would count as the
// test's own.
import "../../src/app/worker_side.ts";
import { createApiKey, revokeApiKey } from "../../src/kv/api_keys.ts";
import { readHandleOf, setReadHandle } from "../../src/kv/read_handle.ts";
import { forgetSession, readSessionCached } from "../../src/kv/handle_state.ts";
import { sessionKey } from "../../src/kv/keys.ts";

function serviceConfig(kv: string) {
  return loadConfig({
    SVC_KV: kv,
    SVC_REFERENCE_ENGINE: "false",
    SVC_MEDIA_ENABLED: "false",
    SVC_DEMO_PAGE: "false",
  });
}

Deno.test("read handle: a service on a file KV reads through a second handle and sees its own writes at once", async () => {
  const dir = await Deno.makeTempDir();
  const service = await compose(serviceConfig(`${dir}/svc.kv`), { logger: silentLogger, listen: false });
  try {
    assert.notEqual(readHandleOf(service.kv), service.kv);
    const get = (key: string) =>
      service.fetch(
        new Request("http://svc/v1/sessions/session:AAAAAAAAAAAAAAAAAAAAAA", {
          headers: { authorization: `Bearer ${key}` },
        }),
      );
    // A new key works at once (404: the key is good, the session unknown), a revoked one stops at once.
    const { record, plaintext } = await createApiKey(service.kv, {
      projectId: "proj_rh",
      name: "t",
      scopes: ["sessions:read"],
      now: Date.now(),
      createdBy: "test",
    });
    for (let i = 0; i < 3; i++) {
      const res = await get(plaintext);
      await res.body?.cancel();
      assert.equal(res.status, 404);
    }
    await revokeApiKey(service.kv, "proj_rh", record.key_id, Date.now());
    const refused = await get(plaintext);
    await refused.body?.cancel();
    assert.equal(refused.status, 401);
  } finally {
    await service.close();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("read handle: an in-memory KV has none (a second handle would be another database)", async () => {
  const service = await compose(serviceConfig(":memory:"), { logger: silentLogger, listen: false });
  try {
    assert.equal(readHandleOf(service.kv), service.kv);
  } finally {
    await service.close();
  }
});

Deno.test("read handle: a cache read neither misses a write committed before it nor waits for writes queued on the main handle", async () => {
  const dir = await Deno.makeTempDir();
  const kv = await Deno.openKv(`${dir}/db.kv`);
  const readKv = await Deno.openKv(`${dir}/db.kv`);
  setReadHandle(kv, readKv);
  try {
    const key = sessionKey("proj_rh", "session:rh");
    assert.equal(await readSessionCached(kv, "proj_rh", "session:rh"), null);
    for (let i = 0; i < 20; i++) {
      await kv.set(key, { session_id: "session:rh", status: i % 2 ? "ended" : "active", n: i });
      forgetSession(kv, "proj_rh", "session:rh"); // what every session write of sessions.ts does
      const seen = await readSessionCached(kv, "proj_rh", "session:rh") as unknown as { n: number };
      assert.equal(seen.n, i);
    }
    // 300 writes queued on the main handle (each waits for its commit in turn); a cache read issued after
    // them completes before the last of them.
    let lastWriteDone = false;
    const writes = Array.from({ length: 300 }, (_, i) => kv.set(["filler", i], "x".repeat(512)));
    const allWritten = Promise.all(writes).then(() => (lastWriteDone = true));
    forgetSession(kv, "proj_rh", "session:rh");
    const read = await readSessionCached(kv, "proj_rh", "session:rh") as unknown as { n: number };
    assert.equal(read.n, 19);
    assert.equal(lastWriteDone, false, "the cache read waited for the main handle's writes");
    await allWritten;
  } finally {
    readKv.close();
    kv.close();
    await Deno.remove(dir, { recursive: true });
  }
});
