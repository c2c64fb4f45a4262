import assert from "node:assert/strict";
import { SessionReadCache } from "../../src/kv/session_cache.ts";
import { sessionKey } from "../../src/kv/keys.ts";

const P = "proj_sc";
const sid = (i: number) => `session:SC${String(i).padStart(20, "0")}`;

/** An in-memory KV whose reads are counted (keys per read), and a hand-driven monotonic clock. */
async function setup(sessions: number) {
  const kv = await Deno.openKv(":memory:");
  for (let i = 0; i < sessions; i++) await kv.set(sessionKey(P, sid(i)), { session_id: sid(i), n: 0 });
  const reads: number[] = [];
  const getMany = kv.getMany.bind(kv);
  // hold(): reads done from now on hand their results over only when released (a read in flight).
  let gate: Promise<void> | null = null;
  let snapshotTaken = () => {};
  kv.getMany = (async (keys: Deno.KvKey[]) => {
    reads.push(keys.length);
    const result = await getMany(keys);
    snapshotTaken();
    if (gate) await gate;
    return result;
  }) as typeof kv.getMany;
  const hold = () => {
    let release!: () => void;
    gate = new Promise((r) => release = r);
    const taken = new Promise<void>((r) => snapshotTaken = r);
    return {
      taken,
      release: () => {
        gate = null;
        release();
      },
    };
  };
  const clock = { t: 1000 };
  const cache = new SessionReadCache(kv, { maxAgeMs: 5, now: () => clock.t });
  const n = async (i: number) => ((await cache.read(P, sid(i))) as unknown as { n: number } | null)?.n;
  const write = (i: number, value: number) => kv.set(sessionKey(P, sid(i)), { session_id: sid(i), n: value });
  /** Sessions 0 and 1 read, 1 served again since (so it rides along), both expired: reading 0 carries 1. */
  const withRiderDue = async () => {
    await n(0);
    await n(1);
    clock.t += 1;
    await n(1);
    clock.t += 5;
  };
  /** {@link withRiderDue}, then a read of 0 carrying 1, held in flight once it has taken its snapshot. */
  const riderReadHeld = async () => {
    await withRiderDue();
    const held = hold();
    const first = n(0);
    await held.taken;
    return { first, release: held.release };
  };
  return {
    kv,
    cache,
    reads,
    clock,
    n,
    write,
    hold,
    withRiderDue,
    riderReadHeld,
    [Symbol.dispose]: () => kv.close(),
  };
}

Deno.test("session cache: served from memory for maxAge after the read, read again after it", async () => {
  using t = await setup(1);
  assert.equal(await t.n(0), 0);
  await t.write(0, 1); // another process's write: not seen while the entry is young
  t.clock.t += 5;
  assert.equal(await t.n(0), 0);
  assert.deepEqual(t.reads, [1]);
  t.clock.t += 0.1;
  assert.equal(await t.n(0), 1);
  assert.deepEqual(t.reads, [1, 1]);
  assert.equal(await t.cache.read(P, "session:unknown"), null);
});

Deno.test("session cache: concurrent misses of one session share one read", async () => {
  using t = await setup(1);
  const all = await Promise.all(Array.from({ length: 20 }, () => t.n(0)));
  assert.deepEqual(all, Array(20).fill(0));
  assert.deepEqual(t.reads, [1]);
});

Deno.test("session cache: a session written through this handle is read again at once, even with a read in flight", async () => {
  using t = await setup(1);
  assert.equal(await t.n(0), 0);
  await t.write(0, 1);
  t.cache.forget(P, sid(0));
  assert.equal(await t.n(0), 1, "forgotten entry: read again");
  // A read that saw KV before a write must not fill the cache with what it saw.
  t.clock.t += 10;
  const held = t.hold();
  const inFlight = t.n(0);
  await held.taken;
  await t.write(0, 2);
  t.cache.forget(P, sid(0));
  held.release();
  assert.equal(await inFlight, 1, "the read in flight answers what it saw");
  assert.equal(await t.n(0), 2);
});

Deno.test("session cache: a miss refreshes the recently served, half-aged entries in the same read (at most 10 keys)", async () => {
  using t = await setup(15);
  for (let i = 0; i < 15; i++) assert.equal(await t.n(i), 0); // 15 reads of one key
  t.reads.length = 0;
  // All served again while young (marks them used), then they age past half.
  t.clock.t += 1;
  for (let i = 0; i < 15; i++) await t.n(i);
  assert.deepEqual(t.reads, []);
  for (let i = 0; i < 15; i++) await t.write(i, 7);
  t.clock.t += 5; // every entry has expired
  assert.equal(await t.n(0), 7);
  assert.deepEqual(t.reads, [10], "the miss carried nine riders");
  for (let i = 1; i < 10; i++) assert.equal(await t.n(i), 7, `rider ${i} refreshed`);
  assert.deepEqual(t.reads, [10], "riders served from memory");
  for (let i = 10; i < 15; i++) assert.equal(await t.n(i), 7);
  assert.deepEqual(t.reads, [10, 5], "the rest in one more read");
});

Deno.test("session cache: entries not served since their read, or younger than half their age, do not ride along", async () => {
  using t = await setup(3);
  for (let i = 0; i < 3; i++) await t.n(i);
  t.reads.length = 0;
  await t.n(1); // served again: used
  t.clock.t += 6; // 0 and 1 expired, 2 never served again
  await t.n(0);
  assert.deepEqual(t.reads, [2], "only session 1 rode along");
  t.reads.length = 0;
  t.clock.t += 1; // entries of 0 and 1 are 1 ms old
  await t.n(1); // used, but young
  await t.n(2); // expired: a miss; 1 is too young to ride
  assert.deepEqual(t.reads, [1]);
});

Deno.test("session cache: a rider written through this handle while the read is in flight is not cached stale", async () => {
  using t = await setup(2);
  const { first, release } = await t.riderReadHeld(); // reads 0 with 1 riding along
  assert.deepEqual(t.reads.at(-1), 2);
  await t.write(1, 9);
  t.cache.forget(P, sid(1));
  release();
  await first;
  assert.equal(await t.n(1), 9);
});

Deno.test("session cache: a failed read rejects its callers and caches nothing", async () => {
  using t = await setup(2);
  await t.withRiderDue();
  const getMany = t.kv.getMany;
  t.kv.getMany = (() => Promise.reject(new Error("disk gone"))) as unknown as typeof getMany;
  await assert.rejects(t.n(0), { code: "SVC_SESSION_STATE_UNAVAILABLE" });
  await assert.rejects(
    t.n(1),
    { code: "SVC_SESSION_STATE_UNAVAILABLE" },
    "the rider's readers get the failure",
  );
  t.kv.getMany = getMany;
  assert.equal(await t.n(0), 0);
  assert.equal(await t.n(1), 0);
});

Deno.test("session cache: a rider whose entry expires while its read is in flight is answered by that read", async () => {
  using t = await setup(2);
  const { first, release } = await t.riderReadHeld(); // reads 0 with 1 riding along
  t.reads.length = 0;
  await t.write(1, 3); // committed after the read: the rider's readers get what the read saw
  const rider = t.n(1); // 1's entry has expired too: it joins the read in flight
  release();
  assert.equal(await first, 0);
  assert.equal(await rider, 0);
  assert.deepEqual(t.reads, [], "no second read");
  t.clock.t += 6;
  assert.equal(await t.n(1), 3);
});
