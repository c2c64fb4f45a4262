/**
 * Freed memory scrubbed by default: `deno task start` and `deno task test` start Deno with glibc's tunables
 * that overwrite what the process frees (`src/auth/memory_scrub.ts`), and a process that runs sessions
 * without them says so at start-up.
 */
import assert from "node:assert/strict";
import { SCRUB_TUNABLES } from "../../src/auth/memory_scrub.ts";
import { startServiceProcess } from "../../testing/service_process.ts";
import { startTaskLaunch } from "../../testing/start_task.ts";

Deno.test("memory scrub: deno task start and deno task test start Deno with glibc's scrubbing tunables", async () => {
  const tasks = JSON.parse(await Deno.readTextFile(new URL("../../deno.json", import.meta.url))).tasks;
  for (const name of ["start", "test"]) {
    const last = (tasks[name] as string).split("&&").at(-1)!.trim();
    assert.ok(last.startsWith(`GLIBC_TUNABLES=${SCRUB_TUNABLES} deno `), `${name}: ${last}`);
  }
  const launch = await startTaskLaunch();
  assert.deepEqual(launch.env, { GLIBC_TUNABLES: SCRUB_TUNABLES });
  assert.deepEqual(launch.permissions, ["-A"]);
  assert.deepEqual(launch.flags, ["--v8-flags=--single-threaded-gc"]);
});

async function startupLog(env: Record<string, string>, flags: string[]): Promise<string> {
  const proc = await startServiceProcess({ SVC_KV: ":memory:", SVC_MEDIA_ENABLED: "false", ...env }, {
    flags,
  });
  proc.kill("SIGTERM");
  return (await proc.exited()).log;
}

Deno.test({
  name:
    "memory scrub: a session-running process started without the tunables warns once; as started, it does not",
  ignore: Deno.build.os !== "linux",
  async fn() {
    const launch = await startTaskLaunch();
    const asStarted = await startupLog(launch.env, launch.flags);
    assert.ok(!asStarted.includes("does not scrub freed memory"), asStarted);
    const without = await startupLog({ GLIBC_TUNABLES: "" }, launch.flags);
    assert.equal(without.split("does not scrub freed memory").length - 1, 1, without);
    const api = await startupLog({
      GLIBC_TUNABLES: "",
      SVC_ROLE: "api",
      SVC_INTERNAL_SECRET: "test-internal-secret-0123456789abcdefghij",
    }, launch.flags);
    assert.ok(!api.includes("does not scrub freed memory"), "an API process runs no session: no warning");
  },
});
