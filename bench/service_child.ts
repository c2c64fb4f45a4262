/**
 * The bench's service process: the service (`service.ts`) started as a child pinned to one core with
 * `taskset`, sessions created and ended over its API, and the CPU and memory of the process tree read
 * from `/proc`. Shared by `main.ts` (the video runs), `video_free.ts` and `webrtc.ts`.
 *
 * @module
 */
import { type BenchEngine, wallNow } from "./engine.ts";

const CLK_TCK = 100;

/**
 * CPU seconds and RSS of a process and its direct children (the service and its ffmpeg processes);
 * `encoders`: each video encoder's (libx264 ffmpeg's) CPU seconds so far and RSS, by process id.
 */
export function treeUsage(
  pid: number,
): {
  cpuS: number;
  rssKb: number;
  procs: number;
  byKind: Record<string, number>;
  encoders: Map<number, { cpuS: number; rssKb: number }>;
} {
  const pids = [pid];
  for (const e of Deno.readDirSync("/proc")) {
    if (!/^\d+$/.test(e.name)) continue;
    try {
      const stat = Deno.readTextFileSync(`/proc/${e.name}/stat`);
      const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      if (Number(fields[1]) === pid) pids.push(Number(e.name));
    } catch { /* gone */ }
  }
  let ticks = 0, rss = 0, procs = 0;
  const byKind: Record<string, number> = { service: 0, video_encoders: 0, other_children: 0 };
  const encoders = new Map<number, { cpuS: number; rssKb: number }>();
  for (const p of pids) {
    try {
      const stat = Deno.readTextFileSync(`/proc/${p}/stat`);
      const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      const t = Number(f[11]) + Number(f[12]);
      ticks += t;
      const cmd = Deno.readTextFileSync(`/proc/${p}/cmdline`);
      const kind = p === pid ? "service" : cmd.includes("libx264") ? "video_encoders" : "other_children";
      byKind[kind] += t / CLK_TCK;
      const status = Deno.readTextFileSync(`/proc/${p}/status`);
      const kb = Number(status.match(/VmRSS:\s+(\d+)/)?.[1] ?? 0);
      rss += kb;
      if (kind === "video_encoders") encoders.set(p, { cpuS: t / CLK_TCK, rssKb: kb });
      procs++;
    } catch { /* gone */ }
  }
  return { cpuS: ticks / CLK_TCK, rssKb: rss, procs, byKind, encoders };
}

/** Busy and total jiffies of one core (from /proc/stat). */
export function coreTicks(c: number): { busy: number; total: number } {
  const line = Deno.readTextFileSync("/proc/stat").split("\n").find((l) => l.startsWith(`cpu${c} `))!;
  const v = line.trim().split(/\s+/).slice(1).map(Number);
  const idle = v[3] + v[4];
  const total = v.reduce((a, b) => a + b, 0);
  return { busy: total - idle, total };
}

export interface Service {
  url: string;
  apiKey: string;
  pid: number;
  child: Deno.ChildProcess;
}

export async function startServiceProcess(
  caFile: string,
  dir: string,
  core: number,
  env: Record<string, string> = {},
  args: string[] = [],
  /** V8 flags of the service (as `deno run --v8-flags=…` takes them), before any of `BENCH_V8_FLAGS`. */
  v8Flags: string[] = [],
): Promise<Service> {
  const flags = [...v8Flags, ...(Deno.env.get("BENCH_V8_FLAGS")?.split(",").filter(Boolean) ?? [])];
  const script = new URL("./service.ts", import.meta.url).pathname;
  const child = new Deno.Command("taskset", {
    args: [
      "-c",
      String(core),
      Deno.execPath(),
      "run",
      "-A",
      // Profiling the service child: BENCH_V8_PROF=1 (a V8 tick log in the working directory, read with
      // `node --prof-process`), or any V8 flags (BENCH_V8_FLAGS="--perf-basic-prof" for `perf`, "--trace-gc").
      ...(Deno.env.get("BENCH_V8_PROF") ? ["--v8-flags=--prof"] : []),
      ...(flags.length ? [`--v8-flags=${flags.join(",")}`] : []),
      // BENCH_INSPECT=127.0.0.1:9229: the inspector, for a heap or CPU profile taken from outside.
      ...(Deno.env.get("BENCH_INSPECT") ? [`--inspect=${Deno.env.get("BENCH_INSPECT")}`] : []),
      script,
      ...args,
    ],
    env: {
      PORT: "0",
      SVC_KV: `${dir}/svc.kv`,
      SVC_REFERENCE_ENGINE: "false",
      SVC_ENGINE_CA_FILE: caFile,
      SVC_RENDER_CAPACITY: "500",
      SVC_MAX_CONCURRENT_SESSIONS: "1000",
      SVC_RATE_LIMIT_PER_MINUTE: "1000000",
      SVC_RATE_LIMIT_BURST: "100000",
      SVC_DEMO_PAGE: "false",
      SVC_LOG_LEVEL: "warn",
      ...env,
    },
    stdin: "piped",
    stdout: "piped",
    stderr: "inherit",
  }).spawn();
  const reader = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  // Log lines may come first: the ready line is the one with the API key.
  let text = "";
  let info: { url: string; api_key: string; pid: number } | null = null;
  while (!info) {
    const { value, done } = await reader.read();
    if (done) throw new Error("the service process exited before it was ready");
    text += value;
    for (const line of text.split("\n").slice(0, -1)) {
      if (line.includes('"api_key"')) info = JSON.parse(line);
    }
  }
  if (Deno.env.get("BENCH_V8_FLAGS")) {
    // With V8 flags that print (--trace-gc), the rest of the service's output goes to the bench's stderr.
    const out = new TextEncoder();
    void (async () => {
      for (;;) {
        const { value, done } = await reader.read().catch(() => ({ value: "", done: true }));
        if (done) break;
        Deno.stderr.writeSync(out.encode(value));
      }
    })();
  } else {
    reader.releaseLock();
    void child.stdout.cancel().catch(() => {});
  }
  return { url: info.url, apiKey: info.api_key, pid: info.pid, child };
}

/**
 * Creates a session on the bench engine (the service's default transport unless one is named; the default
 * avatar unless one is named).
 */
export async function createSession(
  svc: Service,
  engine: BenchEngine,
  transport?: string,
  avatarId?: string,
) {
  const t = wallNow();
  const res = await fetch(`${svc.url}/v1/sessions`, {
    method: "POST",
    headers: { authorization: `Bearer ${svc.apiKey}`, "content-type": "application/json" },
    body: JSON.stringify({
      provider_type: "external_engine",
      provider_config: {
        external_engine: { url: engine.url, auth_headers: { Authorization: "Bearer bench" } },
      },
      ...(transport ? { transport } : {}),
      ...(avatarId ? { avatar_config: { avatar_id: avatarId } } : {}),
    }),
  });
  const body = await res.json();
  if (res.status !== 200) throw new Error(`create: ${res.status} ${JSON.stringify(body)}`);
  const path = new URL(body.stream_metadata.media_url).pathname;
  return {
    id: body.session_id as string,
    token: body.client_token as string,
    meta: body.stream_metadata as Record<string, unknown>,
    wsUrl: `${svc.url.replace("http", "ws")}${path}`,
    createMs: wallNow() - t,
  };
}

export async function endSession(svc: Service, id: string) {
  const res = await fetch(`${svc.url}/v1/sessions/${id}/end?force=true`, {
    method: "POST",
    headers: { authorization: `Bearer ${svc.apiKey}` },
  });
  await res.body?.cancel();
}
