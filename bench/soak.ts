/**
 * `deno task soak`: a bounded lifecycle soak of a real service assembly (`startService`: HTTP on loopback,
 * KV on a file, the owner lease, reaper, lifetimes and webhook worker) against a fake engine over wss and a
 * real https webhook receiver, with the test media plane reporting client counts and failures.
 *
 * SESSIONS (default 1000) sessions are created in waves of WAVE (default 100) and end every way a session
 * can end in one process: by the API (graceful and forced), no client joined, idle timeout, maximum
 * duration (the clock is moved, not waited for), render failure, the engine ending it, and service shutdown
 * (the last wave's share). Afterwards it checks: zero sessions live (KV records and counters, runtime),
 * zero engine sockets still open, zero ffmpeg processes, no file descriptors left over, and exactly one
 * terminal event per session, delivered once. Prints the figures as JSON; exits 1 if a check fails.
 *
 * With `--media real` the sessions run on the real media plane instead (ffmpeg encoders, the media WebSocket):
 * media clients are real WebSocket connections with the session's client token, and a render failure is an
 * encoder process killed with SIGKILL. Waves are then 20 sessions (the default render capacity).
 *
 * Usage: deno task soak [--sessions 1000] [--wave 100] [--media test|real]
 *
 * @module
 */
import { parseArgs } from "node:util";
import { generateEngineTls } from "../engine/mod.ts";
import { OffsetClock } from "../src/clock.ts";
import { loadConfig } from "../src/config.ts";
import { createApiKey } from "../src/kv/api_keys.ts";
import { countPendingEvents, listEvents } from "../src/kv/webhook_outbox.ts";
import type { SessionRecord } from "../src/vocabulary/session_record.ts";
import { LIVE_STATUSES } from "../src/vocabulary/session_states.ts";
import { createLogger } from "../src/log.ts";
import { compose as startService } from "../src/app/compose.ts";
import { workerOverrides } from "../src/app/worker_side.ts";
import { startFakeEngine } from "../testing/fake_engine.ts";
import { testMedia } from "../testing/test_media.ts";
import { startWebhookReceiver } from "../testing/webhook_receiver.ts";

const { values } = parseArgs({
  args: Deno.args,
  options: {
    sessions: { type: "string", default: "1000" },
    wave: { type: "string" },
    media: { type: "string", default: "test" },
  },
});
const REAL_MEDIA = values.media === "real";
if (!["test", "real"].includes(values.media!)) throw new Error("--media must be test or real");
const TOTAL = Number(values.sessions);
const WAVE = Number(values.wave ?? (REAL_MEDIA ? "20" : "100"));
const DEADLINE = Date.now() + 15 * 60_000; // the whole soak is bounded
const PROJECTS = ["proj_soak_a", "proj_soak_b", "proj_soak_c", "proj_soak_d"];
/** The fate of session i. */
const FATES = [
  "ended_by_api",
  "ended_by_api",
  "ended_by_api_forced",
  "no_client_joined",
  "no_client_joined",
  "idle_timeout",
  "idle_timeout",
  "max_duration",
  "render_failed",
  "last", // engine_ended in every wave but the last, where it is service_shutdown
] as const;

function openFds(): number {
  return [...Deno.readDirSync("/proc/self/fd")].length;
}

/** ESTABLISHED TCP connections with `port` at either end (IPv4 and IPv6). */
function tcpConnections(port: number): number {
  const hex = port.toString(16).toUpperCase().padStart(4, "0");
  let n = 0;
  for (const file of ["/proc/net/tcp", "/proc/net/tcp6"]) {
    let text = "";
    try {
      text = Deno.readTextFileSync(file);
    } catch {
      continue;
    }
    for (const line of text.split("\n").slice(1)) {
      const f = line.trim().split(/\s+/);
      if (f.length < 4 || f[3] !== "01") continue;
      if (f[1].endsWith(`:${hex}`) || f[2].endsWith(`:${hex}`)) n++;
    }
  }
  return n;
}

async function ffmpegProcesses(): Promise<number> {
  const out = await new Deno.Command("pgrep", { args: ["-c", "ffmpeg"], stdout: "piped", stderr: "null" })
    .output().catch(() => null);
  return out ? Number(new TextDecoder().decode(out.stdout).trim() || "0") : -1;
}

async function until(cond: () => boolean | Promise<boolean>, what: string, ms = 60_000): Promise<void> {
  const stop = Math.min(Date.now() + ms, DEADLINE);
  while (!(await cond())) {
    if (Date.now() > stop) throw new Error(`soak: ${what} did not happen in time`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

async function pool<T>(items: T[], width: number, fn: (t: T) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(Array.from({ length: width }, async () => {
    while (next < items.length) await fn(items[next++]);
  }));
}

const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? Math.round(s[Math.min(s.length - 1, Math.floor(p * s.length))] * 10) / 10 : 0;
};

const dir = await Deno.makeTempDir({ prefix: "soak" });
const tls = await generateEngineTls();
await Deno.writeTextFile(`${dir}/ca.pem`, tls.caPem);
const engine = await startFakeEngine(tls, "ok");
/** A second engine for the engine_ended share: its closeAll ends only those sessions. */
const endingEngine = await startFakeEngine(tls, "ok");
const enginePorts = [engine, endingEngine].map((e) => Number(new URL(e.url.replace("wss:", "https:")).port));
const receiver = startWebhookReceiver(tls);
const media = testMedia(5);
/** Encoder processes of each session (real media plane). */
const encoderPids = new Map<string, number[]>();
/** Connect data of each session (real media plane). */
const connects = new Map<string, { mediaUrl: string; clientToken: string }>();
const clock = new OffsetClock();
const warnings: string[] = [];
const config = loadConfig({
  PORT: "0",
  SVC_KV: `${dir}/svc.kv`,
  SVC_REFERENCE_ENGINE: "false",
  SVC_ENGINE_CA_FILE: `${dir}/ca.pem`,
  SVC_WEBHOOK_CA_FILE: `${dir}/ca.pem`,
  SVC_WEBHOOK_ALLOW_PRIVATE: "true",
  SVC_WEBHOOK_POLL_MS: "50",
  SVC_MAX_CONCURRENT_SESSIONS: String(WAVE),
  SVC_RATE_LIMIT_PER_MINUTE: "1000000",
  SVC_RATE_LIMIT_BURST: "100000",
  SVC_TOKEN_SECRET: "soak-secret-0123456789abcdef0123456789abcdef",
  SVC_RENDER_CAPACITY: String(WAVE),
});
const kv = await Deno.openKv(`${dir}/svc.kv`);
const keys = new Map<string, string>();
for (const p of PROJECTS) {
  const { plaintext } = await createApiKey(kv, {
    projectId: p,
    name: "soak",
    scopes: ["sessions:read", "sessions:write"],
    now: clock.now(),
    createdBy: "soak",
  });
  keys.set(p, plaintext);
}
const service = await startService(config, {
  clock,
  worker: workerOverrides(
    REAL_MEDIA
      ? {
        media: {
          observer: {
            encoderStarted: (sid: string, pid: number) =>
              encoderPids.set(sid, [...encoderPids.get(sid) ?? [], pid]),
          },
        },
      }
      : { mediaFactory: media.factory },
  ),
  tickMs: 50,
  logger: createLogger({ level: "warn", sink: (l) => warnings.push(l) }),
});
const fdsBaseline = openFds();
const fdsAfterWave: number[] = [];
const t0 = performance.now();
const createMs: number[] = [];
const created: { sid: string; project: string; fate: string }[] = [];
let refused = 0;

const api = async (project: string, method: string, path: string, body?: unknown) => {
  const res = await fetch(`${service.url}${path}`, {
    method,
    headers: { authorization: `Bearer ${keys.get(project)}`, "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: res.status, body: await res.json() };
};

/** Media clients of each session (real media plane): open sockets, in order. */
const sockets = new Map<string, { ws: WebSocket; closed: Promise<void> }[]>();

/** Makes `n` media clients connected to `sid`, then waits until the session's runtime counts them. */
async function setClients(sid: string, n: number): Promise<void> {
  if (!REAL_MEDIA) return media.sessions.get(sid)!.clients(n);
  const open = sockets.get(sid) ?? [];
  sockets.set(sid, open);
  while (open.length < n) {
    const { mediaUrl, clientToken } = connects.get(sid)!;
    const ws = new WebSocket(mediaUrl, ["avatar-media.v0", `bearer.${clientToken}`]);
    ws.binaryType = "arraybuffer";
    const closed = new Promise<void>((r) => ws.addEventListener("close", () => r(), { once: true }));
    open.push({ ws, closed });
  }
  while (open.length > n) {
    const c = open.pop()!;
    c.ws.close(1000);
    await c.closed;
  }
  await until(
    () => service.runtime!.clientCount(sid) === n || !service.runtime!.has(sid),
    "media clients counted",
  );
}

/** Makes the session's media plane fail (real: SIGKILL its video encoder). */
function failMedia(sid: string): void {
  if (!REAL_MEDIA) return media.sessions.get(sid)!.fail("soak: encoder exited");
  Deno.kill(encoderPids.get(sid)![0], "SIGKILL");
}

/** Closes every media client socket left (they are closed by the service when sessions end). */
async function closeSockets(): Promise<void> {
  for (const list of sockets.values()) {
    for (const c of list) if (c.ws.readyState === WebSocket.OPEN) c.ws.close(1000);
    await Promise.all(list.map((c) => c.closed));
  }
  sockets.clear();
}

let ffmpegPeak = 0;

try {
  for (let start = 0; start < TOTAL; start += WAVE) {
    const lastWave = start + WAVE >= TOTAL;
    const wave: { sid: string; project: string; fate: string }[] = [];
    const plan = Array.from({ length: Math.min(WAVE, TOTAL - start) }, (_, k) => {
      const i = start + k;
      const fate = FATES[i % FATES.length];
      return { i, fate: fate === "last" ? (lastWave ? "service_shutdown" : "engine_ended") : fate };
    });
    const create = async ({ i, fate }: { i: number; fate: string }) => {
      const project = PROJECTS[i % PROJECTS.length];
      const t = performance.now();
      const res = await api(project, "POST", "/v1/sessions", {
        provider_type: "external_engine",
        provider_config: {
          external_engine: {
            url: fate === "engine_ended" ? endingEngine.url : engine.url,
            auth_headers: { Authorization: "Bearer soak-engine" },
          },
        },
        webhook_url: receiver.url,
      });
      createMs.push(performance.now() - t);
      if (res.status !== 200) {
        refused++;
        return;
      }
      wave.push({ sid: res.body.session_id, project, fate });
      connects.set(res.body.session_id, {
        mediaUrl: res.body.stream_metadata.media_url,
        clientToken: res.body.client_token,
      });
    };
    await pool(plan.filter((p) => p.fate !== "service_shutdown"), 25, create);
    created.push(...wave);
    if (REAL_MEDIA) ffmpegPeak = Math.max(ffmpegPeak, await ffmpegProcesses());
    // fates that need no clock
    await pool(wave, 25, async (s) => {
      if (s.fate === "idle_timeout") {
        await setClients(s.sid, 1);
        await setClients(s.sid, 0);
      }
      if (s.fate === "max_duration" || s.fate === "engine_ended" || s.fate.startsWith("ended_by_api")) {
        await setClients(s.sid, 1);
      }
      if (s.fate === "render_failed") failMedia(s.sid);
    });
    endingEngine.closeAll(1000, true); // the engine ends the engine_ended share
    await pool(wave.filter((s) => s.fate.startsWith("ended_by_api")), 25, async (s) => {
      const force = s.fate === "ended_by_api_forced" ? "?force=true" : "";
      const res = await api(s.project, "POST", `/v1/sessions/${s.sid}/end${force}`);
      if (res.status !== 200) throw new Error(`end answered ${res.status}`);
    });
    // Deliveries hold claims leased in clock time: let them finish before the clock jumps, or a jump past
    // the lease would (rightly) let another attempt claim an event still in flight.
    await until(async () => (await countPendingEvents(kv)) === 0, "webhook outbox drained");
    clock.advance(121_000); // past the join window and the idle timeout
    await until(
      () => wave.every((s) => !/no_client|idle/.test(s.fate) || !service.runtime!.has(s.sid)),
      "join window and idle ends",
    );
    await until(async () => (await countPendingEvents(kv)) === 0, "webhook outbox drained");
    clock.advance(3_600_000); // past the maximum duration
    await until(
      () => wave.every((s) => s.fate !== "max_duration" || !service.runtime!.has(s.sid)),
      "max ends",
    );
    await until(() => service.runtime!.size === 0, "every session of the wave ended");
    await closeSockets();
    fdsAfterWave.push(openFds());
    if (lastWave) {
      // the service_shutdown share: live (with a client) when the service is closed
      const before = wave.length;
      await pool(plan.filter((p) => p.fate === "service_shutdown"), 25, create);
      for (const s of wave.slice(before)) await setClients(s.sid, 1);
      created.push(...wave.slice(before));
    }
  }
  const left = service.runtime!.size;
  await until(async () => (await countPendingEvents(kv)) === 0, "webhook outbox drained before shutdown");
  const fdsBeforeShutdown = openFds();
  await service.close(); // ends the service_shutdown share and delivers its events
  await closeSockets();
  const wallS = (performance.now() - t0) / 1000;
  const fdsAfterShutdown = openFds();

  // checks
  const liveRecords: string[] = [];
  const reasons: Record<string, number> = {};
  const terminalInKv = new Map<string, number>();
  for (const p of PROJECTS) {
    for await (const e of kv.list<SessionRecord>({ prefix: ["project", p, "session"] })) {
      if (LIVE_STATUSES.includes(e.value.status)) liveRecords.push(e.value.session_id);
      reasons[e.value.end_reason ?? "none"] = (reasons[e.value.end_reason ?? "none"] ?? 0) + 1;
    }
    for (const ev of await listEvents(kv, p)) {
      if (ev.type !== "session.started") {
        terminalInKv.set(ev.session_id, (terminalInKv.get(ev.session_id) ?? 0) + 1);
      }
    }
  }
  const counters = await Promise.all(
    PROJECTS.map(async (p) => (await kv.get<number>(["project", p, "live_sessions"])).value ?? 0),
  );
  const receivedEnd = new Map<string, number>();
  const receivedIds = new Map<string, number>();
  for (const r of receiver.accepted()) {
    receivedIds.set(r.id, (receivedIds.get(r.id) ?? 0) + 1);
    const body = JSON.parse(r.body);
    if (body.type !== "session.started") {
      receivedEnd.set(body.data.session_id, (receivedEnd.get(body.data.session_id) ?? 0) + 1);
    }
  }
  let reasonMismatch = 0;
  for (const s of created) {
    const rec = (await kv.get<SessionRecord>(["project", s.project, "session", s.sid])).value!;
    if (rec.end_reason !== s.fate) reasonMismatch++;
  }
  const figures = {
    command: `deno task soak --sessions ${TOTAL} --wave ${WAVE} --media ${values.media}`,
    media_plane: REAL_MEDIA ? "real (ffmpeg encoders, media WebSocket clients)" : "test stand-in",
    ffmpeg_processes_peak_sampled: REAL_MEDIA ? ffmpegPeak : null,
    sessions_created: created.length,
    creates_refused: refused,
    wall_s: Math.round(wallS * 10) / 10,
    create_ms_p50: pct(createMs, 0.5),
    create_ms_p95: pct(createMs, 0.95),
    end_reasons: reasons,
    sessions_with_unexpected_end_reason: reasonMismatch,
    live_at_shutdown_start: left,
    live_records_after: liveRecords.length,
    live_counters_after: counters.reduce((a, b) => a + b, 0),
    runtime_sessions_after: service.runtime!.size,
    engine_sockets_after: enginePorts.reduce((n, port) => n + tcpConnections(port), 0),
    ffmpeg_processes_after: await ffmpegProcesses(),
    fds_baseline: fdsBaseline,
    fds_after_each_wave: fdsAfterWave,
    fds_before_shutdown: fdsBeforeShutdown,
    fds_after_shutdown: fdsAfterShutdown,
    sessions_without_exactly_one_terminal_event_in_kv: created.filter((s) =>
      terminalInKv.get(s.sid) !== 1
    ).length,
    sessions_without_exactly_one_terminal_delivery: created.filter((s) =>
      receivedEnd.get(s.sid) !== 1
    ).length,
    deliveries_accepted: receiver.accepted().length,
    event_ids_delivered_more_than_once: [...receivedIds.values()].filter((n) => n > 1).length,
    warning_log_lines: warnings.length,
  };
  console.log(JSON.stringify(figures, null, 2));
  const dup = [...receivedIds.entries()].filter(([, n]) => n > 1).map(([id]) => id);
  if (dup.length && Deno.env.get("SOAK_DEBUG")) {
    for (const r of receiver.received.filter((r) => dup.includes(r.id))) {
      console.error("duplicate", r.id, r.status, r.timestamp, JSON.parse(r.body).data.end_reason);
    }
  }
  const failed = [
    figures.creates_refused === 0,
    figures.sessions_with_unexpected_end_reason === 0,
    figures.live_records_after === 0,
    figures.live_counters_after === 0,
    figures.runtime_sessions_after === 0,
    figures.engine_sockets_after === 0,
    figures.ffmpeg_processes_after === 0,
    // pooled keep-alive connections (API client, webhook client, both ends in this process) plateau after
    // the first wave; a per-session leak would grow with every wave
    fdsAfterWave[fdsAfterWave.length - 1] <= fdsAfterWave[0] + 10,
    figures.sessions_without_exactly_one_terminal_event_in_kv === 0,
    figures.sessions_without_exactly_one_terminal_delivery === 0,
  ].some((ok) => !ok);
  if (failed) {
    console.error("soak: a check failed");
    for (const w of warnings.slice(0, 10)) console.error(w);
    Deno.exitCode = 1;
  } else console.error(`soak: ok (${created.length} sessions)`);
} finally {
  await service.close();
  kv.close();
  await engine.close();
  await endingEngine.close();
  await receiver.close();
  await Deno.remove(dir, { recursive: true });
}
