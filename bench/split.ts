/**
 * What the API/worker split costs a create: `POST /v1/sessions` → `active` with the session running
 * in the same process (`SVC_ROLE=all`) and with an API process calling a worker process over its signed
 * internal API on loopback (`SVC_ROLE=api` here, `SVC_ROLE=worker` as a child process), side by side in one
 * run, on the same kind of KV (one SQLite file, shared by both processes in the split) and the same engine (the
 * reference engine, embedded in the process that runs the session).
 *
 * Run: `deno task bench:split [--sessions 30] [--media]` (also run by `deno task bench:api`).
 *
 * @module
 */
import { parseArgs } from "node:util";
import { compose } from "../src/app/compose.ts";
import { loadConfig } from "../src/config.ts";
import { createApiKey } from "../src/kv/api_keys.ts";
import { silentLogger } from "../src/log.ts";

/** One measured configuration. */
export interface SplitRow {
  operation: string;
  n: number;
  p50_ms: number;
  p99_ms: number;
}

const TOKEN_SECRET = "bench-token-secret-0123456789abcdefghijklmn";
const INTERNAL_SECRET = "bench-internal-secret-0123456789abcdefghij";

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))];
}

function row(operation: string, samples: number[]): SplitRow {
  const s = [...samples].sort((a, b) => a - b);
  const r = (x: number) => Math.round(x * 100) / 100;
  return { operation, n: s.length, p50_ms: r(percentile(s, 50)), p99_ms: r(percentile(s, 99)) };
}

function freePort(): number {
  const l = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (l.addr as Deno.NetAddr).port;
  l.close();
  return port;
}

/** Creates and ends `n` sessions one at a time; returns the create → active times. */
async function createEnd(base: string, key: string, engine: { url: string; token: string }, n: number) {
  const headers = { authorization: `Bearer ${key}`, "content-type": "application/json" };
  const body = JSON.stringify({
    provider_type: "external_engine",
    provider_config: {
      external_engine: { url: engine.url, auth_headers: { Authorization: `Bearer ${engine.token}` } },
    },
  });
  const times: number[] = [];
  for (let i = 0; i < n + 2; i++) {
    const t0 = performance.now();
    const res = await fetch(`${base}/v1/sessions`, { method: "POST", headers, body });
    const json = await res.json();
    if (res.status !== 200 || json.status !== "active") {
      throw new Error(`create: ${res.status} ${JSON.stringify(json)}`);
    }
    if (i >= 2) times.push(performance.now() - t0); // two warm-up creates
    const end = await fetch(`${base}/v1/sessions/${json.session_id}/end?force=true`, {
      method: "POST",
      headers,
    });
    await end.body?.cancel();
  }
  return times;
}

/** Runs both configurations; resolves with one row each and the p50 difference. */
export async function runSplitBench(options: { sessions: number; media: boolean }): Promise<SplitRow[]> {
  const dir = await Deno.makeTempDir({ prefix: "svc_bench_split_" });
  const label = options.media ? "with media plane" : "API and engine only";
  const common = {
    SVC_TOKEN_SECRET: TOKEN_SECRET,
    SVC_RATE_LIMIT_PER_MINUTE: "1000000",
    SVC_RATE_LIMIT_BURST: "100000",
    SVC_MAX_CONCURRENT_SESSIONS: "100",
    SVC_MEDIA_ENABLED: String(options.media),
    SVC_RENDER_CAPACITY: "100",
    SVC_DEMO_PAGE: "false",
    SVC_LOG_LEVEL: "error",
  };
  const rows: SplitRow[] = [];
  try {
    // 1. In-process: one `all` process.
    {
      const all = await compose(
        loadConfig({
          ...common,
          PORT: "0",
          SVC_KV: `${dir}/all.kv`,
          SVC_REFERENCE_ENGINE_PORT: "0",
          SVC_REFERENCE_ENGINE_DIR: `${dir}/engine-all`,
        }),
        { logger: silentLogger },
      );
      try {
        const { plaintext } = await createApiKey(all.kv, {
          projectId: "bench",
          name: "bench",
          scopes: ["sessions:read", "sessions:write"],
          now: Date.now(),
          createdBy: "bench",
        });
        const engine = all.referenceEngine!;
        rows.push(
          row(
            `create → active, in-process (SVC_ROLE=all), ${label}`,
            await createEnd(all.url!, plaintext, engine, options.sessions),
          ),
        );
      } finally {
        await all.close();
      }
    }
    // 2. Split: this process is the API, a child process the worker; one KV file shared.
    const kvPath = `${dir}/split.kv`;
    const port = freePort();
    const enginePort = freePort();
    const worker = new Deno.Command(Deno.execPath(), {
      args: ["run", "-A", "main.ts"],
      cwd: new URL("..", import.meta.url),
      env: {
        ...common,
        SVC_ROLE: "worker",
        SVC_KV: kvPath,
        PORT: String(port),
        SVC_WORKER_URL: `http://127.0.0.1:${port}`,
        SVC_PUBLIC_URL: `http://127.0.0.1:${port}`,
        SVC_INTERNAL_SECRET: INTERNAL_SECRET,
        SVC_REFERENCE_ENGINE_PORT: String(enginePort),
        SVC_REFERENCE_ENGINE_DIR: `${dir}/engine-worker`,
        SVC_LOG_LEVEL: "info",
      },
      stdout: "piped",
      stderr: "inherit",
    }).spawn();
    const reader = worker.stdout.pipeThrough(new TextDecoderStream()).getReader();
    let out = "";
    while (!/"msg":"listening"/.test(out)) {
      const { value, done } = await reader.read();
      if (done) throw new Error(`the worker did not start:\n${out}`);
      out += value;
    }
    const drain = (async () => {
      while (!(await reader.read()).done) { /* keep the pipe flowing */ }
    })();
    const api = await compose(
      loadConfig({
        ...common,
        PORT: "0",
        SVC_ROLE: "api",
        SVC_KV: kvPath,
        SVC_INTERNAL_SECRET: INTERNAL_SECRET,
      }),
      { logger: silentLogger },
    );
    try {
      const { plaintext } = await createApiKey(api.kv, {
        projectId: "bench",
        name: "bench",
        scopes: ["sessions:read", "sessions:write"],
        now: Date.now(),
        createdBy: "bench",
      });
      const token = (await Deno.readTextFile(`${dir}/engine-worker/token`)).trim();
      // The worker registered itself (its lease) before it logged "listening".
      rows.push(
        row(
          `create → active, API → remote worker on loopback (SVC_ROLE=api + worker), ${label}`,
          await createEnd(
            api.url!,
            plaintext,
            { url: `wss://localhost:${enginePort}/v0`, token },
            options.sessions,
          ),
        ),
      );
    } finally {
      await api.close();
      worker.kill("SIGTERM");
      await worker.status;
      await drain;
    }
    return rows;
  } finally {
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  }
}

if (import.meta.main) {
  const { values } = parseArgs({
    args: Deno.args,
    options: { sessions: { type: "string", default: "30" }, media: { type: "boolean", default: false } },
  });
  const rows = await runSplitBench({ sessions: Number(values.sessions), media: values.media! });
  console.table(rows);
  console.log(`the split adds ${(rows[1].p50_ms - rows[0].p50_ms).toFixed(2)} ms at p50`);
}
