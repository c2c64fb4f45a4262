import assert from "node:assert/strict";
import { fairShare, RateLimiter } from "../../src/kv/rate_limit.ts";
import { renewOwnerLease } from "../../src/kv/owner_leases.ts";
import { OffsetClock } from "../../src/clock.ts";

const close = (a: number, b: number, eps = 1e-9) => assert.ok(Math.abs(a - b) <= eps, `${a} ≉ ${b}`);

Deno.test("fair share: one instance has it all; even demand splits evenly; shares always sum to 1", () => {
  assert.equal(fairShare(0, [], 1, 10), 1);
  assert.equal(fairShare(500, [], 1, 10), 1);
  close(fairShare(5, [5, 5], 3, 10), 1 / 3);
  close(fairShare(0, [], 3, 10), 1 / 3, 1e-9);
  // one instance gets all of a key's traffic: it gets nearly all of the budget (the others keep a floor)
  const hot = fairShare(20, [], 3, 10);
  close(hot, 1 - 2 / 60);
  assert.ok(hot > 0.95);
  // below the budget, each gets its demand plus an equal part of the rest
  close(fairShare(2, [1], 2, 10) * 10, 2 + (10 - 3) / 2);
  // max-min fairness: a light instance gets its demand, the heavy ones split the rest
  close(fairShare(2, [100, 100], 3, 10) * 10, 2);
  close(fairShare(100, [2, 100], 3, 10) * 10, 4);
  // shares sum to 1 over the instances, whatever the demands
  let seed = 7;
  const rnd = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
  for (let round = 0; round < 500; round++) {
    const n = 1 + Math.floor(rnd() * 6);
    const demands = Array.from({ length: n }, () => (rnd() < 0.3 ? 0 : rnd() * 40));
    const rate = 0.1 + rnd() * 30;
    const sum = demands.reduce(
      (a, _, i) => a + fairShare(demands[i], demands.filter((_, j) => j !== i), n, rate),
      0,
    );
    close(sum, 1, 1e-9);
  }
});

Deno.test("rate limiter, one instance: exactly the burst, then the sustained rate, then the burst again", async () => {
  const kv = await Deno.openKv(":memory:");
  const clock = new OffsetClock();
  const limiter = new RateLimiter({ kv, clock, policy: { perMinute: 60, burst: 10 }, instanceId: "inst_a" });
  try {
    const first = await limiter.check("key_1");
    assert.equal(first.allowed, true);
    assert.equal(first.remaining, 9);
    const rest = [];
    for (let i = 0; i < 20; i++) rest.push(await limiter.check("key_1"));
    assert.equal(rest.filter((d) => d.allowed).length, 9);
    const refused = rest.at(-1)!;
    assert.equal(refused.remaining, 0);
    assert.equal(refused.retryAfterS, 1);
    assert.equal((await limiter.check("key_2")).allowed, true, "keys are limited apart");
    clock.advance(1000);
    const next = [];
    for (let i = 0; i < 5; i++) next.push(await limiter.check("key_1"));
    assert.equal(next.filter((d) => d.allowed).length, 1);
    clock.advance(60_000);
    const refill = [];
    for (let i = 0; i < 12; i++) refill.push(await limiter.check("key_1"));
    assert.equal(refill.filter((d) => d.allowed).length, 10);
    assert.equal(limiter.instances, 1);
  } finally {
    await limiter.settled();
    kv.close();
  }
});

Deno.test("rate limiter, several instances: the key's budget is split among the live API instances by demand", async () => {
  const kv = await Deno.openKv(":memory:");
  const clock = new OffsetClock();
  let t = 0;
  const about = { pid: 1, hostname: "h" };
  for (const id of ["inst_a", "inst_b", "inst_c"]) await renewOwnerLease(kv, id, clock.now(), 60_000, about);
  // a worker-only process does not count
  await kv.set(["owner_lease", "inst_w"], {
    instance_id: "inst_w",
    pid: 2,
    hostname: "h",
    acquired_at: clock.now(),
    renewed_at: clock.now(),
    expires_at: clock.now() + 60_000,
    reaped_at: null,
    role: "worker",
  });
  const make = (instanceId: string) =>
    new RateLimiter({
      kv,
      clock,
      policy: { perMinute: 6000, burst: 600 },
      instanceId,
      syncMs: 250,
      now: () => t,
    });
  const [a, b, c] = [make("inst_a"), make("inst_b"), make("inst_c")];
  const all = [a, b, c];
  /** One sync period in which each limiter sees `demand[i]` requests of the key. */
  const period = async (demand: number[]) => {
    t += 250;
    clock.advance(250);
    for (const [i, l] of all.entries()) {
      for (let k = 0; k < demand[i]; k++) await l.check("key_1");
      await l.settled();
    }
  };
  try {
    for (const l of all) await l.check("key_1"); // first sync of each
    assert.deepEqual(all.map((l) => l.instances), [3, 3, 3]);
    for (const l of all) close(l.shareOf("key_1"), 1 / 3, 1e-9);
    // even load above the budget (100/s): a third each
    for (let i = 0; i < 8; i++) await period([40, 40, 40]);
    for (const l of all) close(l.shareOf("key_1"), 1 / 3, 0.02);
    // the load moves to one instance, the others see a trickle (4/s): it gets (nearly) the whole budget
    // within a few periods (the smoothed demands take ~2 s to settle), the others about their demand
    for (let i = 0; i < 16; i++) await period([40, 1, 1]);
    assert.ok(a.shareOf("key_1") > 0.9, `hot share ${a.shareOf("key_1")}`);
    assert.ok(b.shareOf("key_1") < 0.06 && c.shareOf("key_1") < 0.06);
    const sum = all.reduce((s, l) => s + l.shareOf("key_1"), 0);
    close(sum, 1, 0.05);
    // admissions follow: over one second the hot instance admits about its share of 100/s
    let admitted = 0;
    for (let i = 0; i < 4; i++) {
      t += 250;
      clock.advance(250);
      for (let k = 0; k < 40; k++) if ((await a.check("key_1")).allowed) admitted++;
      for (const l of [b, c]) await l.check("key_1");
      for (const l of all) await l.settled();
    }
    assert.ok(
      admitted >= 85 && admitted <= 100,
      `hot instance admitted ${admitted} in 1 s of a 100/s budget`,
    );
  } finally {
    for (const l of all) await l.settled();
    kv.close();
  }
});
