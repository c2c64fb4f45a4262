/**
 * Control-plane benchmark (`deno task bench:api`), in two parts.
 *
 * 1. **Throughput and latency under concurrency**, measured from outside: the service runs as its own
 *    process (KV file, no media plane, default log level; its sessions' engine is a silent V0 engine in
 *    the bench's process) pinned to one core
 *    with `taskset`; a bare `Deno.serve` returning constant JSON runs beside it on the same core; Debian's
 *    `wrk` (50 connections, one thread) is pinned to another core and drives them alternately: bare, route,
 *    bare, route, … in every round. Each route's throughput is given as a ratio to the mean of the two
 *    bare runs around it, with wrk's latency percentiles. Rows: authenticated `GET /v1/sessions/{id}` (one
 *    session, and 20 sessions in turn), client-token, end of an ended session (409), an unknown session
 *    (404), no key (401) and an unknown key (401), and the framework's floor: a minimal `OpenAPIHono` app
 *    (one route, zod-validated parameter, no middleware, no storage) run the same way. Ends of live sessions are timed 50 at once (a real end
 *    tears a session down, so it cannot be repeated by wrk).
 * 2. **One request at a time** (the figures this bench printed before): a client in the same process as
 *    the service times each canonical request, without and with the media plane.
 *
 * The service's rate limiter stays on (at 100,000,000/min, so that its cost is measured without refusals);
 * `--no-limit` runs it with `SVC_RATE_LIMIT_PER_MINUTE=0`. `--profile DIR` runs the service under
 * `--cpu-prof` while wrk drives `GET /v1/sessions/{id}`, and prints where its CPU time goes.
 *
 * 3. With `--fleet` (or `--fleet-only`): several service processes on one KV file, see `bench/fleet.ts`
 *    (the shared rate budget with 1 and 3 instances, revocation propagation, GET staleness across
 *    instances).
 * 4. The session listing (`GET /v1/sessions`) with 100 and 100,000 sessions in the project, see
 *    `bench/listing.ts` (`--listing-only` runs just that; `--no-listing` leaves it out).
 *
 * Run: `deno task bench:api [--seconds 5] [--rounds 3] [--connections 50] [--core 0] [--wrk-core 1]
 * [--quick] [--no-serial] [--no-limit] [--profile DIR] [--only 0,4] [--fleet|--fleet-only]
 * [--fleet-seconds 20] [--listing-only|--no-listing] [--listing-iterations 300] [--json FILE]` (`--only`: the rows
 * to measure, by index).
 *
 * @module
 */
import { parseArgs } from "node:util";
import { createRoute, OpenAPIHono, z } from "@hono/zod-openapi";
import { loadConfig, loadConfigFromEnv } from "../src/config.ts";
import { silentLogger } from "../src/log.ts";
import { compose as startService, openKv } from "../src/app/compose.ts";
import { createApiKey } from "../src/kv/api_keys.ts";
import { generateApiKey } from "../src/auth/api_key_format.ts";
import { generateEngineTls } from "../engine/mod.ts";
import { startBenchEngine } from "./engine.ts";
import { runSplitBench } from "./split.ts";

/** Percentile of sorted numbers. */
export function percentile(sorted: number[], p: number): number {
  if (!sorted.length) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))];
}

/** Summary row of one measured operation. */
export interface Row {
  operation: string;
  n: number;
  p50_ms: number;
  p99_ms: number;
  max_ms: number;
}

const r2 = (x: number) => Math.round(x * 100) / 100;

function summarise(operation: string, samples: number[]): Row {
  const s = [...samples].sort((a, b) => a - b);
  return {
    operation,
    n: s.length,
    p50_ms: r2(percentile(s, 50)),
    p99_ms: r2(percentile(s, 99)),
    max_ms: r2(s.at(-1)!),
  };
}

// ---------------------------------------------------------------------------------------------------------
// Part 2: one request at a time, in-process client (unchanged from the first version of this bench)
// ---------------------------------------------------------------------------------------------------------

/** Runs the one-at-a-time benchmark and returns its rows. */
export async function runControlPlaneBench(
  options: { sessions: number; gets: number; media: boolean },
): Promise<Row[]> {
  const dir = await Deno.makeTempDir();
  const config = loadConfig({
    PORT: "0",
    SVC_KV: `${dir}/svc.kv`,
    SVC_REFERENCE_ENGINE_PORT: "0",
    SVC_REFERENCE_ENGINE_DIR: `${dir}/engine`,
    SVC_RATE_LIMIT_PER_MINUTE: "100000000",
    SVC_RATE_LIMIT_BURST: "100000",
    SVC_MAX_CONCURRENT_SESSIONS: String(options.sessions + 10),
    SVC_MEDIA_ENABLED: String(options.media),
    SVC_RENDER_CAPACITY: String(options.sessions + 10),
    SVC_DEMO_PAGE: "false",
  });
  const service = await startService(config, { logger: silentLogger });
  const kv = await openKv(config.kv);
  try {
    const { plaintext: key } = await createApiKey(kv, {
      projectId: "bench",
      name: "bench",
      scopes: ["sessions:read", "sessions:write", "api_keys:read", "api_keys:write"],
      now: Date.now(),
      createdBy: "bootstrap",
    });
    const headers = { authorization: `Bearer ${key}`, "content-type": "application/json" };
    const engine = service.referenceEngine!;
    const body = JSON.stringify({
      provider_type: "external_engine",
      provider_config: {
        external_engine: { url: engine.url, auth_headers: { Authorization: `Bearer ${engine.token}` } },
      },
    });
    const time = async (fn: () => Promise<Response>, expect = 200) => {
      const t0 = performance.now();
      const res = await fn();
      await res.body?.cancel();
      if (res.status !== expect) throw new Error(`unexpected status ${res.status}`);
      return performance.now() - t0;
    };
    const create: number[] = [],
      get: number[] = [],
      token: number[] = [],
      end: number[] = [],
      unauth: number[] = [];
    const ids: string[] = [];
    for (let i = 0; i < options.sessions; i++) {
      const t0 = performance.now();
      const res = await fetch(`${service.url}/v1/sessions`, { method: "POST", headers, body });
      const json = await res.json();
      if (res.status !== 200) throw new Error(`create: ${res.status} ${JSON.stringify(json)}`);
      create.push(performance.now() - t0);
      ids.push(json.session_id);
    }
    for (let i = 0; i < options.gets; i++) {
      const id = ids[i % ids.length];
      get.push(await time(() => fetch(`${service.url}/v1/sessions/${id}`, { headers })));
    }
    for (let i = 0; i < Math.min(options.gets, 500); i++) {
      unauth.push(await time(() => fetch(`${service.url}/v1/sessions/${ids[0]}`), 401));
    }
    for (const id of ids) {
      token.push(
        await time(() => fetch(`${service.url}/v1/sessions/${id}/client-token`, { method: "POST", headers })),
      );
    }
    for (const id of ids) {
      end.push(await time(() => fetch(`${service.url}/v1/sessions/${id}/end`, { method: "POST", headers })));
    }
    const label = options.media ? "with media plane" : "API only";
    return [
      summarise(`POST /v1/sessions, ${label} (engine handshake over wss included)`, create),
      summarise(`GET /v1/sessions/{id}, ${label}`, get),
      summarise(`GET without a key (401), ${label}`, unauth),
      summarise(`POST …/client-token, ${label}`, token),
      summarise(`POST …/end (graceful), ${label}`, end),
    ];
  } finally {
    kv.close();
    await service.close();
    await Deno.remove(dir, { recursive: true });
  }
}

// ---------------------------------------------------------------------------------------------------------
// Part 1: throughput against a bare Deno.serve, with wrk
// ---------------------------------------------------------------------------------------------------------

/** What a server child process reports once it listens. */
interface Ready {
  url: string;
  api_key?: string;
}

/** Child mode `--serve`: the service (configured from the environment) plus a fresh all-scope key. */
async function serveService(readyFile: string): Promise<void> {
  const config = loadConfigFromEnv();
  const service = await startService(config);
  const kv = await openKv(config.kv);
  const { plaintext } = await createApiKey(kv, {
    projectId: "proj_bench",
    name: "bench",
    scopes: ["sessions:read", "sessions:write", "api_keys:read", "api_keys:write"],
    now: Date.now(),
    createdBy: "bench",
  });
  kv.close();
  const ready: Ready = { url: service.url!, api_key: plaintext };
  await Deno.writeTextFile(readyFile, JSON.stringify(ready));
  const stop = async () => {
    await service.close();
    Deno.exit(0);
  };
  Deno.addSignalListener("SIGTERM", stop);
  Deno.addSignalListener("SIGINT", stop);
}

/** Child mode `--bare`: the reference point, a bare `Deno.serve` answering constant JSON. */
async function serveBare(readyFile: string): Promise<void> {
  const body = '{"session_id":"session:AAAAAAAAAAAAAAAAAAAAAA","status":"active"}';
  const server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen: () => {} },
    () => new Response(body, { headers: { "content-type": "application/json" } }),
  );
  await Deno.writeTextFile(readyFile, JSON.stringify({ url: `http://127.0.0.1:${server.addr.port}` }));
  Deno.addSignalListener("SIGTERM", async () => {
    await server.shutdown();
    Deno.exit(0);
  });
}

/**
 * Child mode `--hono`: the framework's floor, a minimal `OpenAPIHono` app with one `createRoute` route
 * (`GET /v1/sessions/{session_id}`, zod-validated parameter, constant JSON), no middleware, no storage.
 */
async function serveMinimalHono(readyFile: string): Promise<void> {
  const app = new OpenAPIHono();
  const route = createRoute({
    method: "get",
    path: "/v1/sessions/{session_id}",
    request: { params: z.object({ session_id: z.string().max(255) }) },
    responses: {
      200: {
        description: "a session",
        content: { "application/json": { schema: z.object({ session_id: z.string(), status: z.string() }) } },
      },
    },
  });
  app.openapi(route, (c) => c.json({ session_id: c.req.valid("param").session_id, status: "active" }, 200));
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, app.fetch);
  await Deno.writeTextFile(readyFile, JSON.stringify({ url: `http://127.0.0.1:${server.addr.port}` }));
  Deno.addSignalListener("SIGTERM", async () => {
    await server.shutdown();
    Deno.exit(0);
  });
}

/** A server child process pinned to one core. */
interface Child {
  ready: Ready;
  pid: number;
  stop(): Promise<void>;
}

async function spawnChild(
  mode: "--serve" | "--bare" | "--hono",
  options: { core: number; dir: string; env?: Record<string, string>; cpuProfDir?: string },
): Promise<Child> {
  const readyFile = `${options.dir}/ready${mode}-${crypto.randomUUID()}.json`;
  const log = `${options.dir}/log${mode}.jsonl`;
  const denoArgs = [
    "run",
    "-A",
    ...(options.cpuProfDir ? ["--cpu-prof", `--cpu-prof-dir=${options.cpuProfDir}`] : []),
    new URL(import.meta.url).pathname,
    mode,
    readyFile,
  ];
  const quote = (s: string) => `'${s.replaceAll("'", `'\\''`)}'`;
  // The service's log (an access summary every 10 s at the default level) goes to a file, as a
  // deployment's would go to a file or a collector.
  const cmd = `exec taskset -c ${options.core} ${[Deno.execPath(), ...denoArgs].map(quote).join(" ")} >${
    quote(log)
  } 2>&1`;
  const child = new Deno.Command("sh", {
    args: ["-c", cmd],
    env: options.env,
    stdin: "null",
    stdout: "null",
    stderr: "null",
  }).spawn();
  const deadline = Date.now() + 60_000;
  for (;;) {
    try {
      const ready = JSON.parse(await Deno.readTextFile(readyFile)) as Ready;
      return {
        ready,
        pid: child.pid,
        async stop() {
          try {
            child.kill("SIGTERM");
          } catch { /* gone */ }
          const timer = setTimeout(() => {
            try {
              child.kill("SIGKILL");
            } catch { /* gone */ }
          }, 30_000);
          await child.status;
          clearTimeout(timer);
        },
      };
    } catch {
      if (Date.now() > deadline) {
        child.kill("SIGKILL");
        await child.status;
        throw new Error(`${mode} did not start: ${await Deno.readTextFile(log).catch(() => "")}`);
      }
      await new Promise((r) => setTimeout(r, 100));
    }
  }
}

/** CPU time (user + system, all threads) a process has used so far, ms. */
function cpuMs(pid: number): number {
  try {
    const stat = Deno.readTextFileSync(`/proc/${pid}/stat`);
    const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return (Number(f[11]) + Number(f[12])) * 10; // utime + stime, at 100 ticks a second
  } catch {
    return NaN;
  }
}

/** One wrk run's figures. */
export interface WrkResult {
  /** CPU µs the server process spent per request (set by {@link runWrk} when given its pid). */
  cpu_us?: number;
  rps: number;
  requests: number;
  non2xx: number;
  errors: number;
  p50_ms: number;
  p90_ms: number;
  p99_ms: number;
}

/** Parses wrk's text output (`--latency`). */
export function parseWrk(text: string): WrkResult {
  const num = (re: RegExp) => Number(re.exec(text)?.[1] ?? NaN);
  const ms = (p: string) => {
    const m = new RegExp(`^\\s*${p}%\\s+([\\d.]+)(us|ms|s)\\s*$`, "m").exec(text);
    if (!m) return NaN;
    const v = Number(m[1]);
    return r2(m[2] === "us" ? v / 1000 : m[2] === "s" ? v * 1000 : v);
  };
  const errs = /Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)/.exec(text);
  return {
    rps: num(/Requests\/sec:\s+([\d.]+)/),
    requests: num(/(\d+) requests in/),
    non2xx: /Non-2xx or 3xx responses: (\d+)/.exec(text) ? num(/Non-2xx or 3xx responses: (\d+)/) : 0,
    errors: errs ? errs.slice(1).reduce((a, b) => a + Number(b), 0) : 0,
    p50_ms: ms("50"),
    p90_ms: ms("90"),
    p99_ms: ms("99"),
  };
}

/** A wrk target: a URL, a method, headers, and optionally paths taken in turn. */
interface Target {
  name: string;
  url: string;
  method?: string;
  headers?: Record<string, string>;
  /** Paths requested in turn (instead of the URL's path). */
  paths?: string[];
  /** Expected status of every answer. */
  status: number;
  /** The server process measured, when not the service (its CPU time per request is reported). */
  pid?: number;
}

function luaScript(t: Target): string {
  const lua = (s: string) => JSON.stringify(s); // a JSON string literal is a valid Lua string literal here
  const lines = [`wrk.method = ${lua(t.method ?? "GET")}`];
  for (const [k, v] of Object.entries(t.headers ?? {})) lines.push(`wrk.headers[${lua(k)}] = ${lua(v)}`);
  // A POST without a body is sent with `Content-Length: 0`, as fetch() sends it (wrk leaves the header
  // out unless the body is given, and then only when the request is formatted after wrk's own setup).
  const body = t.method === "POST" ? '""' : "nil";
  const paths = t.paths?.length ? t.paths : [null];
  lines.push(
    `local paths = { ${paths.map((p) => (p === null ? "false" : lua(p))).join(", ")} }`,
    "local requests = {}",
    "local i = 0",
    "request = function()",
    "  i = i + 1",
    "  local k = (i % #paths) + 1",
    "  if not requests[k] then",
    `    requests[k] = wrk.format(nil, paths[k] or nil, nil, ${body})`,
    "  end",
    "  return requests[k]",
    "end",
  );
  return lines.join("\n") + "\n";
}

async function runWrk(
  t: Target,
  o: { core: number; seconds: number; connections: number; dir: string },
  serverPid?: number,
): Promise<WrkResult> {
  const cpu0 = serverPid ? cpuMs(serverPid) : NaN;
  const script = `${o.dir}/${crypto.randomUUID()}.lua`;
  await Deno.writeTextFile(script, luaScript(t));
  const out = await new Deno.Command("taskset", {
    args: [
      "-c",
      String(o.core),
      "wrk",
      "-t1",
      `-c${o.connections}`,
      `-d${o.seconds}s`,
      "--latency",
      "-s",
      script,
      t.url,
    ],
    stdout: "piped",
    stderr: "piped",
  }).output();
  const text = new TextDecoder().decode(out.stdout);
  if (!out.success) throw new Error(`wrk failed: ${new TextDecoder().decode(out.stderr)}`);
  const result = parseWrk(text);
  if (serverPid) result.cpu_us = Math.round((cpuMs(serverPid) - cpu0) * 1000 / result.requests * 10) / 10;
  return result;
}

/** One row of the throughput table. */
export interface ThroughputRow {
  route: string;
  status: number;
  rps: number;
  bare_rps: number;
  ratio: number;
  p50_ms: number;
  p90_ms: number;
  p99_ms: number;
  /** The largest p99 of the rounds (the other figures are medians of the rounds). */
  p99_max_ms: number;
  /** CPU µs the service spent per request, and the same for the bare server. */
  cpu_us: number;
  bare_cpu_us: number;
  /** bare CPU per request / service CPU per request (less sensitive to other load than `ratio`). */
  cpu_ratio: number;
  /** Answers with another status than expected (wrong statuses make a row invalid). */
  unexpected: number;
}

const median = (xs: number[]) => percentile([...xs].sort((a, b) => a - b), 50);

/** Runs part 1 and returns its rows (plus the ends timed 50 at once). */
export async function runThroughputBench(options: {
  seconds: number;
  rounds: number;
  connections: number;
  core: number;
  wrkCore: number;
  limit: boolean;
  profileDir?: string;
  /** Indexes of the rows to measure (default all). */
  only?: number[];
}): Promise<{ rows: ThroughputRow[]; ends: Row; profile?: string }> {
  const dir = await Deno.makeTempDir({ prefix: "bench_api_" });
  // The sessions' engine runs in this process and stays silent (the reference engine would stream to
  // every session and spend the service's CPU on it while it is measured).
  // This process (the engine, the setup requests) stays off the service's core.
  await new Deno.Command("taskset", { args: ["-a", "-p", "-c", String(options.wrkCore), String(Deno.pid)] })
    .output().catch(() => {});
  const tls = await generateEngineTls();
  await Deno.writeTextFile(`${dir}/engine-ca.pem`, tls.caPem);
  const engine = startBenchEngine(tls);
  const env = {
    ...Deno.env.toObject(),
    PORT: "0",
    SVC_KV: `${dir}/svc.kv`,
    SVC_REFERENCE_ENGINE: "false",
    SVC_ENGINE_CA_FILE: `${dir}/engine-ca.pem`,
    SVC_MEDIA_ENABLED: "false",
    SVC_DEMO_PAGE: "false",
    SVC_MAX_CONCURRENT_SESSIONS: "1000",
    SVC_SESSION_JOIN_WINDOW_S: "3600",
    SVC_SESSION_IDLE_TIMEOUT_S: "3600",
    SVC_RATE_LIMIT_PER_MINUTE: options.limit ? "100000000" : "0",
    SVC_RATE_LIMIT_BURST: "100000",
  };
  const service = await spawnChild("--serve", {
    core: options.core,
    dir,
    env,
    cpuProfDir: options.profileDir,
  });
  const bare = await spawnChild("--bare", { core: options.core, dir });
  const floor = await spawnChild("--hono", { core: options.core, dir });
  try {
    const { url, api_key: key } = service.ready;
    const auth = { authorization: `Bearer ${key}` };
    const body = JSON.stringify({
      provider_type: "external_engine",
      provider_config: {
        external_engine: { url: engine.url, auth_headers: { Authorization: "Bearer bench" } },
      },
    });
    const create = async () => {
      const res = await fetch(`${url}/v1/sessions`, {
        method: "POST",
        headers: { ...auth, "content-type": "application/json" },
        body,
      });
      const json = await res.json();
      if (res.status !== 200) throw new Error(`create: ${res.status} ${JSON.stringify(json)}`);
      return json.session_id as string;
    };
    const live: string[] = [];
    for (let i = 0; i < 20; i++) live.push(await create());

    // Real ends, 20 at once (the embedded reference engine takes 32 sessions) (each tears a session down: engine goodbye, records, webhook outbox).
    const toEnd: string[] = [];
    for (let i = 0; i < 50; i++) toEnd.push(await create());
    const endTimes = await Promise.all(toEnd.map(async (id) => {
      const t0 = performance.now();
      const res = await fetch(`${url}/v1/sessions/${id}/end`, { method: "POST", headers: auth });
      await res.body?.cancel();
      if (res.status !== 200) throw new Error(`end: ${res.status}`);
      return performance.now() - t0;
    }));
    const ends = summarise("POST …/end of 50 live sessions at once (graceful teardown)", endTimes);

    const unknownKey = generateApiKey(); // well-formed (checksum holds), never issued
    const targets: Target[] = [
      {
        name: "GET /v1/sessions/{id} (one session)",
        url: `${url}/v1/sessions/${live[0]}`,
        headers: auth,
        status: 200,
      },
      {
        name: "GET /v1/sessions/{id} (20 sessions in turn)",
        url: `${url}/v1/sessions/${live[0]}`,
        headers: auth,
        paths: live.map((id) => `/v1/sessions/${id}`),
        status: 200,
      },
      {
        name: "POST …/client-token",
        url: `${url}/v1/sessions/${live[1]}/client-token`,
        method: "POST",
        headers: auth,
        status: 200,
      },
      {
        name: "POST …/end of an ended session (409)",
        url: `${url}/v1/sessions/${toEnd[0]}/end`,
        method: "POST",
        headers: auth,
        status: 409,
      },
      {
        name: "GET unknown session (404)",
        url: `${url}/v1/sessions/session:AAAAAAAAAAAAAAAAAAAAAA`,
        headers: auth,
        status: 404,
      },
      { name: "GET without a key (401)", url: `${url}/v1/sessions/${live[0]}`, status: 401 },
      {
        name: "GET with an unknown key (401)",
        url: `${url}/v1/sessions/${live[0]}`,
        headers: { authorization: `Bearer ${unknownKey}` },
        status: 401,
      },
      {
        name: "floor: a minimal OpenAPIHono app (one route, zod param)",
        url: `${floor.ready.url}/v1/sessions/${live[0]}`,
        status: 200,
        pid: floor.pid,
      },
    ];
    if (options.profileDir && !options.only) targets.splice(1); // profile the authenticated GET alone
    if (options.only) {
      const keep = new Set(options.only);
      for (let i = targets.length - 1; i >= 0; i--) if (!keep.has(i)) targets.splice(i, 1);
    }
    // Check each target's status once before measuring it.
    for (const t of targets) {
      const res = await fetch(t.paths ? new URL(t.paths[0], t.url) : t.url, {
        body: t.method === "POST" ? "" : undefined,
        method: t.method ?? "GET",
        headers: t.headers,
      });
      await res.body?.cancel();
      if (res.status !== t.status) throw new Error(`${t.name}: status ${res.status}, expected ${t.status}`);
    }
    const wrkOptions = {
      core: options.wrkCore,
      seconds: options.seconds,
      connections: options.connections,
      dir,
    };
    const bareTarget: Target = { name: "bare", url: bare.ready.url, status: 200 };
    // Warm-up (JIT, connection setup) of both servers.
    await runWrk(bareTarget, { ...wrkOptions, seconds: 2 });
    const warmup = await runWrk(targets[0], { ...wrkOptions, seconds: 2 });
    const samples = new Map<string, { r: WrkResult; bare: number; bareCpu: number }[]>();
    let before = await runWrk(bareTarget, wrkOptions, bare.pid);
    for (let round = 0; round < options.rounds; round++) {
      for (const t of targets) {
        const r = await runWrk(t, wrkOptions, t.pid ?? service.pid);
        const after = await runWrk(bareTarget, wrkOptions, bare.pid);
        const list = samples.get(t.name) ?? [];
        list.push({ r, bare: (before.rps + after.rps) / 2, bareCpu: (before.cpu_us! + after.cpu_us!) / 2 });
        samples.set(t.name, list);
        before = after;
      }
    }
    const rows = targets.map((t): ThroughputRow => {
      const s = samples.get(t.name)!;
      const ratios = s.map((x) => x.r.rps / x.bare);
      const expectedNon2xx = t.status >= 300;
      return {
        route: t.name,
        status: t.status,
        rps: Math.round(median(s.map((x) => x.r.rps))),
        bare_rps: Math.round(median(s.map((x) => x.bare))),
        ratio: Math.round(median(ratios) * 1000) / 1000,
        p50_ms: median(s.map((x) => x.r.p50_ms)),
        p90_ms: median(s.map((x) => x.r.p90_ms)),
        p99_ms: median(s.map((x) => x.r.p99_ms)),
        p99_max_ms: Math.max(...s.map((x) => x.r.p99_ms)),
        cpu_us: median(s.map((x) => x.r.cpu_us!)),
        bare_cpu_us: r2(median(s.map((x) => x.bareCpu))),
        cpu_ratio: Math.round(median(s.map((x) => x.bareCpu / x.r.cpu_us!)) * 1000) / 1000,
        unexpected: s.reduce(
          (a, x) => a + (expectedNon2xx ? x.r.requests - x.r.non2xx : x.r.non2xx) + x.r.errors,
          0,
        ),
      };
    });
    let profile: string | undefined;
    await service.stop();
    if (options.profileDir) {
      // Requests served while profiled: the measured runs plus the 2 s warm-up.
      const served = [...samples.values()].flat().reduce((a, x) => a + x.r.requests, 0);
      profile = await summariseProfile(options.profileDir, served + warmup.requests);
    }
    return { rows, ends, profile };
  } finally {
    await service.stop();
    await bare.stop();
    await floor.stop();
    await engine.close();
    if (!Deno.env.get("BENCH_KEEP")) await Deno.remove(dir, { recursive: true }).catch(() => {});
  }
}

/** A V8 `.cpuprofile`. */
interface CpuProfile {
  nodes: {
    id: number;
    callFrame: { functionName: string; url: string; lineNumber: number };
    children?: number[];
  }[];
  samples: number[];
  timeDeltas: number[];
}

/**
 * Summarises the newest `.cpuprofile` in `dir`: self time by function (top 25) and by module group
 * (hono, zod, the service's modules, Deno's runtime, GC, native), as shares of the busy (non-idle) time
 * and, given the number of requests served, as µs per request. The main thread only: work on other
 * threads (KV's SQLite, blocking I/O) is not in it, and the HTTP server's Rust code runs partly while V8
 * counts the thread idle.
 */
export async function summariseProfile(dir: string, requests?: number): Promise<string> {
  const files: string[] = [];
  for await (const e of Deno.readDir(dir)) if (e.name.endsWith(".cpuprofile")) files.push(`${dir}/${e.name}`);
  if (!files.length) return "(no profile written)";
  const stats = await Promise.all(
    files.map(async (f) => ({ f, m: (await Deno.stat(f)).mtime?.getTime() ?? 0 })),
  );
  const newest = stats.sort((a, b) => b.m - a.m)[0].f;
  const prof = JSON.parse(await Deno.readTextFile(newest)) as CpuProfile;
  const byId = new Map(prof.nodes.map((n) => [n.id, n]));
  const self = new Map<number, number>();
  for (let i = 0; i < prof.samples.length; i++) {
    self.set(prof.samples[i], (self.get(prof.samples[i]) ?? 0) + (prof.timeDeltas[i] ?? 0));
  }
  let total = 0;
  for (const [id, us] of self) if (byId.get(id)!.callFrame.functionName !== "(idle)") total += us;
  const fn = new Map<string, number>();
  const group = new Map<string, number>();
  const groupOf = (url: string, name: string) => {
    if (name === "(idle)") return "idle";
    if (name === "(garbage collector)") return "GC";
    if (name === "(program)") return "native (V8/Rust: HTTP, KV, crypto ops)";
    if (/node_modules\/\.deno\/hono|npm\/.*hono|\/hono@/.test(url)) return "hono";
    if (/zod/.test(url)) return "zod";
    if (url.includes("/src/")) return "service: " + url.slice(url.indexOf("/src/") + 1).replace(/\.ts$/, "");
    if (url.startsWith("ext:") || url.startsWith("node:")) return "Deno runtime (JS)";
    return url ? "other JS" : "native (V8/Rust: HTTP, KV, crypto ops)";
  };
  for (const [id, us] of self) {
    const n = byId.get(id)!;
    const cf = n.callFrame;
    const where = cf.url
      ? `${cf.url.replace(/^.*\/(node_modules|src|ext:)/, "$1")}:${cf.lineNumber + 1}`
      : "";
    const key = `${cf.functionName || "(anonymous)"} ${where}`;
    fn.set(key, (fn.get(key) ?? 0) + us);
    const g = groupOf(cf.url, cf.functionName);
    group.set(g, (group.get(g) ?? 0) + us);
  }
  group.delete("idle");
  const pct = (us: number) =>
    `${(100 * us / total).toFixed(1).padStart(5)} %` +
    (requests ? `  ${(us / requests).toFixed(2).padStart(6)} µs/req` : "");
  const lines = [
    `profile ${newest}: ${(total / 1e6).toFixed(1)} s busy` +
    (requests ? `, ${requests} requests, ${(total / requests).toFixed(1)} µs busy per request` : ""),
    "",
    "self time by group (share of busy time):",
  ];
  for (const [g, us] of [...group].sort((a, b) => b[1] - a[1]).slice(0, 20)) lines.push(`  ${pct(us)}  ${g}`);
  lines.push("", "self time by function (top 25):");
  for (
    const [f, us] of [...fn].sort((a, b) => b[1] - a[1]).filter(([f]) => !f.startsWith("(idle)")).slice(0, 30)
  ) {
    lines.push(`  ${pct(us)}  ${f}`);
  }
  return lines.join("\n");
}

if (import.meta.main) {
  if (Deno.args[0] === "--serve") {
    await serveService(Deno.args[1]);
  } else if (Deno.args[0] === "--bare") {
    await serveBare(Deno.args[1]);
  } else if (Deno.args[0] === "--hono") {
    await serveMinimalHono(Deno.args[1]);
  } else {
    const { values } = parseArgs({
      args: Deno.args,
      options: {
        sessions: { type: "string", default: "20" },
        gets: { type: "string", default: "2000" },
        seconds: { type: "string", default: "5" },
        rounds: { type: "string", default: "3" },
        connections: { type: "string", default: "50" },
        core: { type: "string", default: "0" },
        "wrk-core": { type: "string", default: "1" },
        quick: { type: "boolean", default: false },
        "no-serial": { type: "boolean", default: false },
        "no-limit": { type: "boolean", default: false },
        profile: { type: "string" },
        only: { type: "string" },
        fleet: { type: "boolean", default: false },
        "fleet-only": { type: "boolean", default: false },
        "fleet-seconds": { type: "string", default: "20" },
        "listing-only": { type: "boolean", default: false },
        "no-listing": { type: "boolean", default: false },
        "listing-iterations": { type: "string", default: "300" },
        json: { type: "string" },
      },
    });
    const quick = values.quick!;
    const hasWrk = (await new Deno.Command("sh", { args: ["-c", "command -v wrk && command -v taskset"] })
      .output()).success;
    const result: Record<string, unknown> = {};
    const listingOnly = values["listing-only"]!;
    if (values.fleet || values["fleet-only"]) {
      const { runCoherenceBench, runRateBench } = await import("./fleet.ts");
      const seconds = quick ? 5 : Number(values["fleet-seconds"]);
      const rate = await runRateBench(seconds);
      console.log(
        "Shared rate budget (one key at the default 600/min, burst 60; 8 request loops far above it; " +
          "allowed = burst + rate × duration):",
      );
      console.table(rate);
      const coherence = await runCoherenceBench(quick ? 3 : 10);
      console.log("Coherence across two instances:");
      console.table(coherence);
      result.fleet = { rate, coherence };
    }
    if (values["fleet-only"] || listingOnly) {
      // nothing else
    } else if (!hasWrk) {
      console.log(
        "wrk or taskset is missing (Debian: apt-get install -y wrk util-linux): throughput part skipped",
      );
    } else {
      const { rows, ends, profile } = await runThroughputBench({
        seconds: quick ? 2 : Number(values.seconds),
        rounds: quick ? 1 : Number(values.rounds),
        connections: Number(values.connections),
        core: Number(values.core),
        wrkCore: Number(values["wrk-core"]),
        limit: !values["no-limit"],
        profileDir: values.profile,
        only: values.only?.split(",").map(Number),
      });
      console.log(
        `Throughput and latency under ${values.connections} connections (wrk, service on core ${values.core}, ` +
          `wrk on core ${
            values["wrk-core"]
          }; ratio = route / bare Deno.serve measured alternately; medians of ${
            quick ? 1 : values.rounds
          } rounds, ` +
          `p99_max_ms the worst round's p99; rate limiter ${values["no-limit"] ? "off" : "on"}):`,
      );
      console.table(rows);
      console.table([ends]);
      if (profile) console.log(profile);
      result.throughput = rows;
      result.ends = ends;
    }
    if (!values["no-serial"] && !values.profile && !values["fleet-only"] && !listingOnly) {
      const base = { sessions: Number(values.sessions), gets: quick ? 300 : Number(values.gets) };
      const rows = [
        ...await runControlPlaneBench({ ...base, media: false }),
        ...await runControlPlaneBench({ ...base, media: true }),
      ];
      console.log("One request at a time (client in the service's process):");
      console.table(rows);
      result.serial = rows;
      // What the API/worker split adds to a create, side by side with the in-process figure.
      const split = await runSplitBench({ sessions: Number(values.sessions), media: false });
      console.log("A create in one process and across the API/worker split:");
      console.table(split);
      console.log(`the split adds ${(split[1].p50_ms - split[0].p50_ms).toFixed(2)} ms to a create at p50`);
      result.split = split;
    }
    if (listingOnly || (!values["no-listing"] && !values["fleet-only"] && !values.profile)) {
      const { runListingBench } = await import("./listing.ts");
      const listing = await runListingBench({
        iterations: quick ? 100 : Number(values["listing-iterations"]),
      });
      console.log(
        `GET /v1/sessions, one project with 100 vs 100,000 sessions (KV file; 100,000 seeded in ${listing.seed_s.big} s; ` +
          "one request at a time over loopback, alternating between the two services, the page after the first, through its cursor):",
      );
      console.table(listing.rows);
      result.listing = listing;
    }
    if (values.json) await Deno.writeTextFile(values.json, JSON.stringify(result, null, 2));
  }
}
