import assert from "node:assert/strict";
import { OffsetClock } from "../../src/clock.ts";
import { ApiError } from "../../src/errors.ts";
import { InternalAuth } from "../../src/fleet/internal_auth.ts";
import { WorkerDirectory } from "../../src/fleet/worker_directory.ts";
import { renewOwnerLease, type WorkerAdvert } from "../../src/kv/owner_leases.ts";
import { createLogger } from "../../src/log.ts";

const SECRET = "directory-secret-0123456789abcdef0123456789";

async function register(
  kv: Deno.Kv,
  auth: InternalAuth,
  now: number,
  id: string,
  advert: Partial<WorkerAdvert> & { sign?: boolean },
) {
  const url = advert.url ?? `http://127.0.0.1:${9000 + id.length}`;
  const publicUrl = advert.public_url ?? url;
  await renewOwnerLease(kv, id, now, 30_000, {
    pid: 1,
    hostname: "h",
    role: "worker",
    worker: {
      url,
      public_url: publicUrl,
      capacity: advert.capacity ?? 2,
      free_slots: advert.capacity ?? 2,
      transports: advert.transports,
      signature: advert.sign === false ? "AAAA" : await auth.signAdvert(id, url, publicUrl),
    },
  });
}

Deno.test("worker directory: placement honours transports, capacity, exclusions and valid registrations only", async () => {
  const kv = await Deno.openKv(":memory:");
  const clock = new OffsetClock();
  const auth = new InternalAuth(SECRET, clock);
  const logs: string[] = [];
  const dir = () =>
    new WorkerDirectory({ kv, clock, auth, logger: createLogger({ sink: (l) => logs.push(l) }) });
  try {
    await register(kv, auth, clock.now(), "w_fmp4", { transports: ["websocket_fmp4"] });
    await register(kv, auth, clock.now(), "w_sfu", { transports: ["websocket_fmp4", "webrtc_sfu"] });
    await register(kv, auth, clock.now(), "w_old", {}); // a registration from before transports existed
    await register(kv, auth, clock.now(), "w_forged", { transports: ["webrtc_sfu"], sign: false });
    const d = dir();
    const live = (await d.live()).map((w) => w.instanceId).sort();
    assert.deepEqual(live, ["w_fmp4", "w_old", "w_sfu"], "the mis-signed registration is ignored");
    assert.ok(logs.some((l) => l.includes("invalid signature")));
    for (let i = 0; i < 20; i++) assert.equal((await d.pick(new Set(), "webrtc_sfu")).owner, "w_sfu");
    const fmp4 = new Set<string>();
    for (let i = 0; i < 60; i++) fmp4.add((await d.pick(new Set(), "websocket_fmp4")).owner);
    assert.deepEqual([...fmp4].sort(), ["w_fmp4", "w_old", "w_sfu"], "ties spread over every free worker");
    await assert.rejects(
      () => d.pick(new Set(["w_sfu"]), "webrtc_sfu"),
      (e: unknown) => e instanceof ApiError && e.code === "SVC_RENDER_CAPACITY",
    );
    // A full worker (its load counter at capacity) is not picked.
    await kv.set(["owner_load", "w_fmp4"], 2);
    await kv.set(["owner_load", "w_old"], 2);
    for (let i = 0; i < 10; i++) assert.equal((await dir().pick(new Set(), "websocket_fmp4")).owner, "w_sfu");
    // An expired lease is gone.
    clock.advance(31_000);
    await assert.rejects(() => dir().pick(new Set(), "websocket_fmp4"), ApiError);
  } finally {
    kv.close();
  }
});
