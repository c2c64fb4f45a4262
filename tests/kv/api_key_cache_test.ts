import assert from "node:assert/strict";
import { ApiKeyCache } from "../../src/kv/api_key_cache.ts";
import { apiKeyCacheFor } from "../../src/kv/handle_state.ts";
import { createApiKey, revokeApiKey } from "../../src/kv/api_keys.ts";
import { hashApiKey } from "../../src/auth/api_key_format.ts";
import { ApiError } from "../../src/errors.ts";
import { faultyKv, KvFaults } from "../../testing/faulty_kv.ts";

async function newKey(kv: Deno.Kv) {
  const { plaintext, record } = await createApiKey(kv, {
    projectId: "proj_a",
    name: "k",
    scopes: ["sessions:read"],
    now: Date.now(),
    createdBy: "bootstrap",
  });
  return { hash: hashApiKey(plaintext), keyId: record.key_id };
}

Deno.test("api key hash: the SHA-256 of the plaintext matches the known vector", () => {
  assert.equal(hashApiKey("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
});

Deno.test("key cache: answers from memory, and a revocation through another handle is seen once the epoch is re-read", async () => {
  const dir = await Deno.makeTempDir();
  // Two handles on one file stand for two processes: each has its own cache.
  const kvA = await Deno.openKv(`${dir}/kv`);
  const real = await Deno.openKv(`${dir}/kv`);
  const faults = new KvFaults();
  const kvB = faultyKv(real, faults);
  let t = 0;
  const cache = new ApiKeyCache(kvB, { pollMs: 100, maxStaleMs: 500, now: () => t });
  try {
    const { hash, keyId } = await newKey(kvA);
    assert.equal(cache.peek(hash), undefined, "not read yet");
    assert.equal((await cache.lookup(hash))?.key_id, keyId, "a new key works at once");
    await cache.settled();
    const ops = faults.ops;
    t = 50;
    for (let i = 0; i < 100; i++) assert.equal(cache.peek(hash)?.key_id, keyId);
    assert.equal(faults.ops, ops, "no KV access while the entry is fresh");

    await revokeApiKey(kvA, "proj_a", keyId, Date.now());
    // Within the poll period the entry is still trusted (the bound is maxStaleMs, not zero)...
    assert.equal(cache.peek(hash)?.revoked_at, null);
    // ...and the next poll (one small read of the epoch) makes it stale.
    t = 150;
    cache.peek(hash);
    await cache.settled();
    assert.equal(faults.ops, ops + 1, "one read of the revocation epoch");
    assert.equal(cache.peek(hash), undefined, "stale after the epoch moved");
    assert.notEqual((await cache.lookup(hash))?.revoked_at, null, "read again: revoked");
  } finally {
    await cache.settled();
    kvA.close();
    real.close();
  }
});

Deno.test("key cache: an entry is never trusted past maxStaleMs without a newer confirmation (KV down → 503)", async () => {
  const real = await Deno.openKv(":memory:");
  const faults = new KvFaults();
  const kv = faultyKv(real, faults);
  let t = 0;
  const cache = new ApiKeyCache(kv, { pollMs: 100, maxStaleMs: 500, now: () => t });
  try {
    const { hash } = await newKey(real);
    await cache.lookup(hash);
    faults.down = true;
    t = 450; // a poll is due: it fails
    assert.ok(cache.peek(hash));
    await cache.settled();
    t = 501;
    assert.equal(cache.peek(hash), undefined, "past the bound without a confirmation");
    await assert.rejects(
      () => cache.lookup(hash),
      (e) => e instanceof ApiError && e.code === "SVC_SESSION_STATE_UNAVAILABLE",
    );
    faults.down = false;
    assert.ok(await cache.lookup(hash), "back once KV answers");
  } finally {
    await cache.settled();
    real.close();
  }
});

Deno.test("key cache: a revocation through the same handle takes effect at once, even over a read in flight", async () => {
  const kv = await Deno.openKv(":memory:");
  const cache = apiKeyCacheFor(kv); // the handle's own cache, which revokeApiKey informs
  try {
    const { hash, keyId } = await newKey(kv);
    assert.ok(await cache.lookup(hash));
    const other = await newKey(kv);
    const inFlight = cache.lookup(other.hash); // a read under way while the revocation commits
    await revokeApiKey(kv, "proj_a", keyId, Date.now());
    assert.equal(cache.peek(hash), undefined);
    assert.equal(cache.peek(other.hash), undefined, "the read that started before cannot fill the cache");
    assert.notEqual((await cache.lookup(hash))?.revoked_at, null);
    await inFlight;
  } finally {
    await cache.settled();
    kv.close();
  }
});

Deno.test("key cache: unknown keys are refused from memory for a short while only", async () => {
  const kv = await Deno.openKv(":memory:");
  let t = 0;
  const cache = new ApiKeyCache(kv, { pollMs: 100, maxStaleMs: 500, now: () => t });
  try {
    const missing = "0".repeat(64);
    assert.equal(await cache.lookup(missing), null);
    assert.equal(cache.peek(missing), null, "a miss is remembered");
    t = 80;
    assert.equal(cache.peek(missing), null);
    await cache.settled();
    t = 120;
    cache.peek(missing);
    await cache.settled();
    t = 501;
    cache.peek(missing);
    await cache.settled();
    t = 502;
    assert.equal(cache.peek(missing), undefined, "a miss older than maxStaleMs is read again");
  } finally {
    await cache.settled();
    kv.close();
  }
});
