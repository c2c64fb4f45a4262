/**
 * Project avatars held by concurrent sessions (`src/media/art/project_avatar_leases.ts`): two sessions that
 * start together share one read and one rasterising; a session that ends while another's avatar is being
 * prepared does not let it go under it; the last one lets it go once; a failed preparation is retried by the
 * next session; with a linger time, an avatar no session holds stays prepared that long (the next session
 * reuses it), and closing lets it go at once.
 */
import assert from "node:assert/strict";
import type { AvatarLayers } from "../../src/media/art/layers.ts";
import { ProjectAvatarLeases } from "../../src/media/art/project_avatar_leases.ts";

const LAYERS = { kind: "test" } as unknown as AvatarLayers;

/** A renderer and reader whose steps the test releases by hand. */
function rig(options: { exists?: boolean; failFirst?: boolean; lingerMs?: number } = {}) {
  const log: string[] = [];
  let loads = 0;
  const gates: (() => void)[] = [];
  const leases = new ProjectAvatarLeases({
    load: async (projectId, avatarId) => {
      loads++;
      log.push(`load ${projectId}/${avatarId}`);
      await new Promise<void>((r) => gates.push(r));
      if (options.failFirst && loads === 1) throw new Error("storage out");
      return options.exists === false ? null : LAYERS;
    },
    prepare: (avatarId) => {
      log.push(`prepare ${avatarId}`);
      return Promise.resolve();
    },
    forget: (avatarId) => log.push(`forget ${avatarId}`),
    lingerMs: options.lingerMs,
  });
  const open = async () => {
    while (!gates.length) await new Promise((r) => setTimeout(r, 1));
    gates.shift()!();
  };
  return { leases, log, open };
}

Deno.test("project avatar leases: two sessions starting together share one read and one rasterising", async () => {
  const { leases, log, open } = rig();
  const a = leases.acquire("proj_1", "av_x");
  const b = leases.acquire("proj_1", "av_x");
  await open();
  assert.deepEqual(await Promise.all([a, b]), [true, true]);
  assert.deepEqual(log, ["load proj_1/av_x", "prepare av_x"]);
  assert.equal(leases.users("av_x"), 2);
  assert.equal(leases.layersOf("av_x"), LAYERS);
  leases.release("av_x");
  assert.deepEqual(log, ["load proj_1/av_x", "prepare av_x"], "still held by the other session");
  leases.release("av_x");
  assert.deepEqual(log.at(-1), "forget av_x");
  assert.equal(leases.layersOf("av_x"), null);
});

Deno.test("project avatar leases: a session ending while another's avatar is prepared does not let it go", async () => {
  const { leases, log, open } = rig();
  const first = leases.acquire("proj_1", "av_x");
  await open();
  assert.equal(await first, true);
  // A second session starts with the avatar already prepared; the first ends before the second is live.
  const second = leases.acquire("proj_1", "av_x");
  leases.release("av_x");
  assert.equal(await second, true);
  assert.ok(!log.includes("forget av_x"), "the renderer keeps the art the second session needs");
  assert.equal(leases.layersOf("av_x"), LAYERS);
  leases.release("av_x");
  assert.equal(log.filter((l) => l === "forget av_x").length, 1);
});

Deno.test("project avatar leases: no such avatar holds nothing; a failed read is retried by the next session", async () => {
  const missing = rig({ exists: false });
  const none = missing.leases.acquire("proj_1", "av_gone");
  await missing.open();
  assert.equal(await none, false);
  assert.equal(missing.leases.users("av_gone"), 0);

  const flaky = rig({ failFirst: true });
  const a = flaky.leases.acquire("proj_1", "av_y");
  const b = flaky.leases.acquire("proj_1", "av_y");
  await flaky.open();
  await assert.rejects(a, /storage out/);
  await assert.rejects(b, /storage out/);
  assert.equal(flaky.leases.users("av_y"), 0);
  const c = flaky.leases.acquire("proj_1", "av_y");
  await flaky.open();
  assert.equal(await c, true);
  assert.deepEqual(flaky.log.filter((l) => l.startsWith("load")).length, 2, "read again after the failure");
});

Deno.test("project avatar leases: with a linger time, the next session reuses the avatar its last session let go; it goes after the linger, or at close", async () => {
  const { leases, log, open } = rig({ lingerMs: 80 });
  const first = leases.acquire("proj_a", "av_1");
  await open();
  assert.equal(await first, true);
  leases.release("av_1");
  assert.ok(!log.includes("forget av_1"), "kept while it lingers");
  // The next session: no read, no rasterising.
  assert.equal(await leases.acquire("proj_a", "av_1"), true);
  assert.deepEqual(log.filter((l) => l.startsWith("load")), ["load proj_a/av_1"]);
  leases.release("av_1");
  const deadline = Date.now() + 20_000;
  while (!log.includes("forget av_1") && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
  assert.deepEqual(
    log.filter((l) => l.startsWith("forget")),
    ["forget av_1"],
    "let go once, after the linger",
  );
  assert.equal(leases.users("av_1"), 0);
  // Close: a lingering avatar goes at once (no timer left behind).
  const again = leases.acquire("proj_a", "av_1");
  await open();
  await again;
  leases.release("av_1");
  leases.close();
  assert.equal(log.filter((l) => l === "forget av_1").length, 2);
});
