/**
 * The storage cost of one session's life — insert, then created → activating → active → ending → ended,
 * each through the service's own storage functions (`src/kv/sessions.ts`) — on a fresh KV file, and the
 * file's size afterwards. Pass the root of a source tree to measure that tree's code, so two versions can be
 * compared on one machine (e.g. before and after the listing index: `git worktree add /tmp/base <commit>`):
 *
 * ```sh
 * for r in 1 2 3; do for t in /tmp/base .; do deno run -A --config $t/deno.json bench/lifecycle_writes.ts $t 300; done; done
 * ```
 *
 * @module
 */
const root = new URL(`${Deno.args[0] ?? "."}/`, `file://${Deno.cwd()}/`).href;
const n = Number(Deno.args[1] ?? 300);
const { insertSession, transitionSession } = await import(`${root}src/kv/sessions.ts`);
const dir = await Deno.makeTempDir({ prefix: "bench_lifecycle_" });
const kv = await Deno.openKv(`${dir}/kv.sqlite3`);
const samples: number[] = [];
const t0 = Date.now();
for (let i = 0; i < n; i++) {
  const id = `session:bench${i.toString().padStart(8, "0")}`;
  const rec = {
    session_id: id,
    project_id: "proj_b",
    status: "created",
    provider_type: "external_engine",
    transport: "websocket_fmp4",
    avatar_id: "ada",
    bg_id: "studio",
    webhook_url: null,
    created_at: t0 + i,
    started_at: null,
    ended_at: null,
    warning: null,
    error_code: null,
    end_reason: null,
    chunks_rendered: 0,
    created_by: "svc_key_b",
    owner: "inst_b",
  };
  const t = performance.now();
  await insertSession(kv, rec, 1_000_000);
  await transitionSession(kv, "proj_b", id, ["created"], "activating", {}, t0);
  await transitionSession(kv, "proj_b", id, ["activating"], "active", { started_at: t0 }, t0);
  await transitionSession(kv, "proj_b", id, ["active"], "ending", {}, t0);
  await transitionSession(
    kv,
    "proj_b",
    id,
    ["ending"],
    "ended",
    { ended_at: t0, end_reason: "ended_by_api" },
    t0,
  );
  samples.push(performance.now() - t);
}
kv.close();
samples.sort((a, b) => a - b);
const p = (q: number) => Number(samples[Math.min(n - 1, Math.ceil(q * n) - 1)].toFixed(2));
const bytes = (await Deno.stat(`${dir}/kv.sqlite3`)).size;
console.log(JSON.stringify({
  tree: Deno.args[0] ?? ".",
  sessions: n,
  lifecycle_p50_ms: p(0.5),
  lifecycle_p90_ms: p(0.9),
  lifecycle_p99_ms: p(0.99),
  kv_bytes_per_session: Math.round(bytes / n),
}));
await Deno.remove(dir, { recursive: true });
