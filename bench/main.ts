/**
 * `deno task bench`: measures the media plane on loopback, in one run.
 *
 * 1. Time to first decodable frame: from opening the media WebSocket to receiving the init segment and a
 *    keyframe (a player can show a picture from then on).
 * 2. Engine audio chunk → the fragment carrying it: a V0 engine sends 20 ms chunks in real time; the
 *    client's received audio is decoded with ffmpeg to find each chunk on the timeline, and each chunk is
 *    timed from the engine's send to the client's receipt of the fragment holding its last sample
 *    ("complete") and its first sample ("onset").
 * 2b. The same for each vendor bridge against its protocol-faithful fake, beside the external engine
 *    (`bench/vendors.ts`).
 * 3. Capacity: how many concurrent sessions (default 512×512 at 25 fps, each watched by a client and
 *    talking half of the time) the service sustains on one core, pinned with `taskset` together with its
 *    ffmpeg children, with no dropped frame; CPU and memory per session.
 * 3b. The same capacity with video-free clients (`video=0`: audio and the animation track, no encoder;
 *    `video_free.ts`): CPU and RSS per session, audio underruns and late animation messages at the clients.
 * 3c. The video-free player in Chromium (`video_free_browser.ts`): what drawing the avatar costs Chromium's
 *    processes (512×512 canvas), and mouth vs sound measured from outside the player.
 * 4. `webrtc_sfu` beside `websocket_fmp4` in Chromium through a real Janus (`bench/webrtc.ts`): connect →
 *    first frame, engine chunk → browser audio, glass-to-glass frame latency, sessions per core with Janus.
 *
 * The service runs as a child process (`bench/service.ts`) on one core; the bench (engine and clients)
 * runs on the others. Prints a table and writes `bench/results/bench-<time>.json` (git-ignored).
 *
 * Options: `--core N` (default: the last core), `--max N` sessions (default 40), `--step N` (default 5),
 * `--seconds S` measured per capacity step (default 10), `--quick` (shorter run).
 *
 * @module
 */
import { parseArgs } from "node:util";
import { generateEngineTls } from "../engine/mod.ts";
import { startBenchEngine, wallNow } from "./engine.ts";
import { readSegment } from "../testing/media.ts";
import { benchVendors, vendorTable } from "./vendors.ts";
import { benchWebRtc, webrtcTable } from "./webrtc.ts";
import { coreTicks, createSession, endSession, startServiceProcess, treeUsage } from "./service_child.ts";
import { benchVideoFree, videoFreeTable } from "./video_free.ts";
import { benchVideoFreeBrowser, videoFreeBrowserTable } from "./video_free_browser.ts";
import { avatarTables, benchAvatarApi, benchAvatarArt } from "./avatars.ts";

const args = parseArgs({
  args: Deno.args,
  options: {
    core: { type: "string" },
    max: { type: "string", default: "40" },
    step: { type: "string", default: "5" },
    seconds: { type: "string", default: "10" },
    quick: { type: "boolean", default: false },
  },
}).values;

const nproc = navigator.hardwareConcurrency;
const core = Number(args.core ?? nproc - 1);
const quick = args.quick!;

// ---------- helpers ----------

function pct(values: number[], p: number): number {
  if (!values.length) return NaN;
  const s = [...values].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))];
}
const r1 = (n: number) => Math.round(n * 10) / 10;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function run(cmd: string, cmdArgs: string[]): Promise<string> {
  try {
    const out = await new Deno.Command(cmd, { args: cmdArgs, stdout: "piped", stderr: "null" }).output();
    return new TextDecoder().decode(out.stdout).trim();
  } catch {
    return "";
  }
}

/** A received media fragment: what `readSegment` reads, with its arrival time and summed duration. */
interface Seg {
  track: number;
  base: number;
  dur: number;
  key: boolean;
  at: number;
}

function readSeg(buf: Uint8Array, at: number): Seg | null {
  const r = readSegment(buf);
  return r &&
    { track: r.track, base: r.baseTime, dur: r.durations.reduce((t, d) => t + d, 0), key: r.key, at };
}

/** A media client that records what it receives (optionally keeping the bytes). */
class Client {
  readonly ws: WebSocket;
  readonly openedAt = wallNow();
  firstDecodableAt: number | null = null;
  initAt: number | null = null;
  readonly segs: Seg[] = [];
  readonly bytes: Uint8Array[] = [];
  readonly closed: Promise<void>;

  constructor(url: string, token: string, readonly keep: boolean) {
    this.ws = new WebSocket(url, ["avatar-media.v0", `bearer.${token}`]);
    this.ws.binaryType = "arraybuffer";
    this.closed = new Promise((r) => this.ws.addEventListener("close", () => r(), { once: true }));
    this.ws.addEventListener("error", () => {});
    this.ws.addEventListener("message", (e) => {
      if (typeof e.data === "string") return;
      const at = wallNow();
      const buf = new Uint8Array(e.data as ArrayBuffer);
      if (this.keep) this.bytes.push(buf);
      const seg = readSeg(buf, at);
      if (!seg) {
        this.initAt ??= at;
        return;
      }
      this.segs.push(seg);
      if (this.firstDecodableAt === null && this.initAt !== null && seg.track === 1 && seg.key) {
        this.firstDecodableAt = at;
      }
    });
  }

  async close(): Promise<void> {
    if (this.ws.readyState <= WebSocket.OPEN) this.ws.close();
    await this.closed;
  }
}

async function decodeAudio(bytes: Uint8Array[], dir: string): Promise<Int16Array> {
  const total = bytes.reduce((n, b) => n + b.length, 0);
  const all = new Uint8Array(total);
  let o = 0;
  for (const b of bytes) {
    all.set(b, o);
    o += b.length;
  }
  const file = `${dir}/audio-${crypto.randomUUID()}.mp4`;
  await Deno.writeFile(file, all);
  const out = await new Deno.Command("ffmpeg", {
    args: ["-hide_banner", "-v", "error", "-i", file, "-vn", "-f", "s16le", "-ac", "1", "-ar", "48000", "-"],
    stdout: "piped",
    stderr: "null",
  }).output();
  await Deno.remove(file);
  return new Int16Array(out.stdout.buffer, 0, out.stdout.length >> 1);
}

/** Sample indices where tone bursts start (after ≥ 200 ms of quiet). */
function onsets(pcm: Int16Array): number[] {
  const found: number[] = [];
  let quiet = 0;
  for (let i = 0; i + 480 <= pcm.length; i += 480) {
    let sum = 0;
    for (let j = i; j < i + 480; j++) sum += pcm[j] * pcm[j];
    const loud = Math.sqrt(sum / 480) > 2000;
    if (loud && quiet >= 20) {
      let k = i;
      while (k < i + 480 && Math.abs(pcm[k]) < 1500) k++;
      found.push(k);
    }
    quiet = loud ? 0 : quiet + 1;
  }
  return found;
}

// ---------- the run ----------

const started = new Date();
const dir = await Deno.makeTempDir({ prefix: "svc-bench-" });
const tls = await generateEngineTls();
const caFile = `${dir}/engine-ca.pem`;
await Deno.writeTextFile(caFile, tls.caPem);
if (nproc > 1) {
  // The bench (engine and clients) stays off the service's core.
  const others = [...Array(nproc).keys()].filter((c) => c !== core).join(",");
  await run("taskset", ["-a", "-p", "-c", others, String(Deno.pid)]);
}
const engine = startBenchEngine(tls);
const svc = await startServiceProcess(caFile, dir, core);
const facts = {
  command: `deno task bench ${Deno.args.join(" ")}`.trim(),
  started_at: started.toISOString(),
  cpu_model: (await run("sh", ["-c", "grep -m1 'model name' /proc/cpuinfo | cut -d: -f2"])).trim(),
  cores: nproc,
  service_core: core,
  load_average_before: (await Deno.readTextFile("/proc/loadavg")).split(" ").slice(0, 3).join(" "),
  deno: Deno.version.deno,
  ffmpeg: (await run("ffmpeg", ["-hide_banner", "-version"])).split("\n")[0],
  format: "512x512 @ 25 fps, H.264 (x264 ultrafast, zerolatency, 1 thread) + Opus 24 kb/s (in process), fMP4",
};
console.log(`bench: service pid ${svc.pid} pinned to core ${core}; bench on the other cores`);

const results: Record<string, unknown> = { facts };
try {
  // ---- 1. time to first decodable frame ----
  const ttff: number[] = [];
  const createMs: number[] = [];
  {
    const sessions = [];
    for (let i = 0; i < 3; i++) {
      const s = await createSession(svc, engine);
      createMs.push(s.createMs);
      sessions.push(s);
    }
    const connects = quick ? 10 : 30;
    for (let i = 0; i < connects; i++) {
      const s = sessions[i % sessions.length];
      await sleep(50 + Math.random() * 400); // land anywhere in the GOP
      const c = new Client(s.wsUrl, s.token, false);
      const deadline = Date.now() + 5000;
      while (c.firstDecodableAt === null && Date.now() < deadline) await sleep(2);
      if (c.firstDecodableAt !== null) ttff.push(c.firstDecodableAt - c.openedAt);
      await c.close();
    }
    for (const s of sessions) await endSession(svc, s.id);
  }
  results.time_to_first_frame_ms = {
    samples: ttff.length,
    p50: r1(pct(ttff, 50)),
    p99: r1(pct(ttff, 99)),
    max: r1(Math.max(...ttff)),
  };
  results.session_create_ms = {
    samples: createMs.length,
    p50: r1(pct(createMs, 50)),
    max: r1(Math.max(...createMs)),
  };
  console.log(`bench: time to first frame p50 ${r1(pct(ttff, 50))} ms over ${ttff.length} connects`);

  // ---- 1b. project avatars against a stock one: frame cost, art document, API, session starts ----
  {
    const frames = quick ? 150 : 600;
    const art = await benchAvatarArt(frames);
    const api = await benchAvatarApi(svc.url, svc.apiKey, quick ? 10 : 30);
    const avatars: Record<string, string> = { stock: "ada", style: api.styleId, svg: api.svgId };
    const starts: Record<string, { create: number[]; connect: number[] }> = {};
    for (const name of Object.keys(avatars)) starts[name] = { create: [], connect: [] };
    // Alternating: one session of each avatar per round; create → first frame is the create answer plus
    // the first connect's wait for a decodable frame; then a second connect (the worker has the avatar).
    for (let round = 0; round < (quick ? 3 : 8); round++) {
      for (const [name, id] of Object.entries(avatars)) {
        const s = await createSession(svc, engine, undefined, id);
        for (const [i, c] of [0, 1].map((i) => [i, new Client(s.wsUrl, s.token, false)] as const)) {
          const deadline = Date.now() + 5000;
          while (c.firstDecodableAt === null && Date.now() < deadline) await sleep(2);
          if (c.firstDecodableAt !== null) {
            const wait = c.firstDecodableAt - c.openedAt;
            if (i === 0) starts[name].create.push(s.createMs + wait);
            else starts[name].connect.push(wait);
          }
          await c.close();
        }
        await endSession(svc, s.id);
      }
    }
    results.avatars = {
      video: art.video,
      video_free_art_document: art.doc,
      api_ms: {
        create_style: { p50: r1(pct(api.createStyle, 50)), p95: r1(pct(api.createStyle, 95)) },
        create_svg: { p50: r1(pct(api.createSvg, 50)), p95: r1(pct(api.createSvg, 95)) },
        preview: { p50: r1(pct(api.preview, 50)), p95: r1(pct(api.preview, 95)) },
      },
      session_starts_ms: Object.fromEntries(
        Object.entries(starts).map(([k, v]) => [k, {
          create_to_first_frame_p50: r1(pct(v.create, 50)),
          connect_to_first_frame_p50: r1(pct(v.connect, 50)),
          samples: v.create.length,
        }]),
      ),
    };
    results.avatars_table = avatarTables(art, api, frames) +
      "\n\nsessions (alternating, one of each a round; the second connect of each session):\n" +
      "| avatar | create → first frame p50 | connect → first frame p50 | sessions |\n|---|---|---|---|\n" +
      Object.entries(starts).map(([k, v]) =>
        `| ${k} (${avatars[k]}) | ${r1(pct(v.create, 50))} ms | ${
          r1(pct(v.connect, 50))
        } ms | ${v.create.length} |`
      ).join("\n");
    console.log("bench: project avatars measured");
  }

  // ---- 2. engine audio chunk → fragment ----
  const complete: number[] = [];
  const onset: number[] = [];
  let unmatched = 0;
  {
    const n = 3;
    const sessions = [];
    for (let i = 0; i < n; i++) sessions.push(await createSession(svc, engine));
    const clients = sessions.map((s) => new Client(s.wsUrl, s.token, true));
    await sleep(800);
    const pattern = { burstMs: 500, gapMs: 500, bursts: quick ? 4 : 10 };
    await Promise.all(sessions.map((s) => engine.talk(s.id, pattern)));
    await sleep(600);
    for (const [i, s] of sessions.entries()) {
      const c = clients[i];
      await c.close();
      const audio = c.segs.filter((x) => x.track === 2).sort((a, b) => a.base - b.base);
      const pcm = await decodeAudio(c.bytes, dir);
      const totalDur = audio.reduce((t, x) => t + x.dur, 0);
      const trim = totalDur - pcm.length; // samples ffmpeg trimmed at the start (Opus pre-skip)
      const base0 = audio[0].base;
      const carrying = (decodedIndex: number) => {
        const pos = base0 + trim + decodedIndex;
        return audio.find((x) => pos >= x.base && pos < x.base + x.dur);
      };
      const found = onsets(pcm);
      const sent = engine.sessions.get(s.id)!.sent;
      const chunks = pattern.burstMs / 20;
      for (let b = 0; b < pattern.bursts; b++) {
        const start = found[b];
        for (let k = 0; k < chunks; k++) {
          const chunk = sent.find((x) => x.responseId === `r_${b}` && x.index === k);
          if (start === undefined || !chunk) {
            unmatched++;
            continue;
          }
          const last = carrying(start + (k + 1) * 960 - 1);
          const first = carrying(start + k * 960);
          if (!last || !first) {
            unmatched++;
            continue;
          }
          complete.push(last.at - chunk.sentAt);
          onset.push(first.at - chunk.sentAt);
        }
      }
      await endSession(svc, s.id);
    }
  }
  results.audio_chunk_to_fragment_ms = {
    chunks: complete.length,
    unmatched,
    complete: { p50: r1(pct(complete, 50)), p99: r1(pct(complete, 99)), max: r1(Math.max(...complete)) },
    onset: { p50: r1(pct(onset, 50)), p99: r1(pct(onset, 99)) },
  };
  console.log(
    `bench: audio chunk → fragment p50 ${r1(pct(complete, 50))} ms, p99 ${r1(pct(complete, 99))} ms`,
  );

  // ---- 2b. the same measure for each vendor bridge against its fake, beside the external engine ----
  const vendors = await benchVendors({ tls, dir, quick, core });
  results.vendor_audio_chunk_to_fragment_ms = vendors;
  console.log(`bench: vendor bridges (chunk → fragment)\n${vendorTable(vendors)}`);

  // ---- 3. capacity on one core ----
  const steps: Record<string, unknown>[] = [];
  const seconds = quick ? 5 : Number(args.seconds);
  const maxN = Number(args.max);
  const step = Number(args.step);
  let sustained = 0;
  await sleep(1000);
  const idle = treeUsage(svc.pid);
  await sleep(2000);
  const idle2 = treeUsage(svc.pid);
  const idleCpu = (idle2.cpuS - idle.cpuS) / 2;
  for (let n = step; n <= maxN; n += step) {
    const sessions = [];
    for (let i = 0; i < n; i++) sessions.push(await createSession(svc, engine));
    const clients = sessions.map((s) => new Client(s.wsUrl, s.token, false));
    const talking = sessions.map((s) =>
      engine.talk(s.id, { burstMs: 1200, gapMs: 1200, bursts: Math.ceil((seconds + 6) / 2.4) })
    );
    await sleep(3000); // warm-up: joins, caches, encoders settled
    const from = wallNow();
    const u0 = treeUsage(svc.pid);
    const k0 = coreTicks(core);
    await sleep(seconds * 1000);
    const u1 = treeUsage(svc.pid);
    const k1 = coreTicks(core);
    const to = wallNow();
    let drops = 0, frames = 0;
    const lags: number[] = [];
    for (const c of clients) {
      const video = c.segs.filter((x) => x.track === 1 && x.at >= from && x.at < to);
      frames += video.length;
      for (let i = 1; i < video.length; i++) {
        drops += Math.max(0, Math.round((video[i].base - video[i - 1].base) / 3600) - 1);
      }
      // lag: how late each frame arrives relative to the session's own frame clock (best frame = 0)
      const offsets = video.map((v) => v.at - (v.base / 90));
      const best = Math.min(...offsets);
      for (const o of offsets) lags.push(o - best);
    }
    const expected = n * seconds * 25;
    const cpu = (u1.cpuS - u0.cpuS) / ((to - from) / 1000);
    const row = {
      sessions: n,
      frames_received: frames,
      frames_expected: Math.round(expected),
      dropped_frames: drops,
      frame_lag_p99_ms: r1(pct(lags, 99)),
      cpu_core_share: Math.round(cpu * 1000) / 1000,
      cpu_per_session_pct: r1((cpu - idleCpu) / n * 100),
      rss_mb: Math.round(u1.rssKb / 1024),
      rss_per_session_mb: r1(u1.rssKb / 1024 / n),
      processes: u1.procs,
      core_busy_share: Math.round((k1.busy - k0.busy) / Math.max(1, k1.total - k0.total) * 1000) / 1000,
      cpu_breakdown_core_share: Object.fromEntries(
        Object.keys(u1.byKind).map((
          k,
        ) => [k, Math.round((u1.byKind[k] - u0.byKind[k]) / ((to - from) / 1000) * 1000) / 1000]),
      ),
    };
    steps.push(row);
    console.log(
      `bench: ${n} sessions: ${drops} dropped, cpu ${r1(cpu * 100)}% of a core (core busy ${
        r1(row.core_busy_share * 100)
      }% with other processes) ${
        JSON.stringify(row.cpu_breakdown_core_share)
      }, lag p99 ${row.frame_lag_p99_ms} ms`,
    );
    await Promise.all(sessions.map((s) => endSession(svc, s.id)));
    await Promise.all(clients.map((c) => c.close()));
    await Promise.all(talking);
    const ok = drops === 0 && frames >= expected * 0.98 && row.frame_lag_p99_ms < 200;
    if (ok) sustained = n;
    if (!ok || cpu > 0.97) break;
    await sleep(1500);
  }
  results.capacity_one_core = {
    sustained_sessions: sustained,
    idle_cpu_core_share: r1(idleCpu * 1000) / 1000,
    steps,
  };

  // ---- 3b. capacity on one core, video-free clients (its own service process, same core) ----
  results.capacity_one_core_video_free = await benchVideoFree({ caFile, dir, core, engine, quick });

  // ---- 3c. the video-free player in Chromium: drawing's CPU, mouth vs sound (its own service process) ----
  results.video_free_browser = await benchVideoFreeBrowser({ caFile, dir, core, engine, quick });

  // ---- 4. webrtc_sfu beside websocket_fmp4 (its own service process and Janus, same core) ----
  results.webrtc = await benchWebRtc({ tls, dir, quick, core });

  // ---- report ----
  const t = results.time_to_first_frame_ms as Record<string, number>;
  const a = results.audio_chunk_to_fragment_ms as {
    complete: Record<string, number>;
    onset: Record<string, number>;
  };
  console.log("\n| measure | p50 | p99 | target |\n| --- | --- | --- | --- |");
  console.log(`| client connect → first decodable frame | ${t.p50} ms | ${t.p99} ms | p50 ≤ 300 ms |`);
  console.log(
    `| engine chunk → fragment carrying it (complete) | ${a.complete.p50} ms | ${a.complete.p99} ms | p50 ≤ 60, p99 ≤ 150 ms |`,
  );
  console.log(`| engine chunk → fragment carrying its onset | ${a.onset.p50} ms | ${a.onset.p99} ms | |`);
  console.log(
    "\n| sessions | dropped | frames recv/expected | lag p99 | CPU (ours, core share) | core busy (all processes) | CPU/session | RSS | RSS/session |",
  );
  console.log("| --- | --- | --- | --- | --- | --- | --- | --- | --- |");
  for (const s of steps as Record<string, number>[]) {
    console.log(
      `| ${s.sessions} | ${s.dropped_frames} | ${s.frames_received}/${s.frames_expected} | ${s.frame_lag_p99_ms} ms | ${
        r1(s.cpu_core_share * 100)
      }% | ${
        r1(s.core_busy_share * 100)
      }% | ${s.cpu_per_session_pct}% | ${s.rss_mb} MB | ${s.rss_per_session_mb} MB |`,
    );
  }
  console.log(`\nsustained on one core with no dropped frame: ${sustained} sessions`);
  console.log(
    `\n${videoFreeTable(results.capacity_one_core_video_free as Awaited<ReturnType<typeof benchVideoFree>>)}`,
  );
  console.log(
    `\n${
      videoFreeBrowserTable(results.video_free_browser as Awaited<ReturnType<typeof benchVideoFreeBrowser>>)
    }`,
  );
  console.log(`\n${webrtcTable(results.webrtc as Awaited<ReturnType<typeof benchWebRtc>>)}`);
  console.log(`\nproject avatars against a stock one:\n${results.avatars_table}`);
} finally {
  (results.facts as Record<string, unknown>).load_average_after = (await Deno.readTextFile("/proc/loadavg"))
    .split(" ")
    .slice(0, 3).join(" ");
  await svc.child.stdin.close().catch(() => {});
  const exited = await Promise.race([svc.child.status.then(() => true), sleep(15000).then(() => false)]);
  if (!exited) svc.child.kill("SIGKILL");
  await engine.close();
  const outDir = new URL("./results/", import.meta.url);
  await Deno.mkdir(outDir, { recursive: true });
  const file = new URL(`bench-${started.toISOString().replace(/[:.]/g, "-")}.json`, outDir);
  await Deno.writeTextFile(file, JSON.stringify(results, null, 2) + "\n");
  console.log(`results: ${file.pathname}`);
  await Deno.remove(dir, { recursive: true });
}
