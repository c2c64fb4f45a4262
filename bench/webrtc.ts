/**
 * `webrtc_sfu` beside `websocket_fmp4`, measured in Debian's Chromium through a real Janus on loopback
 * (step 4 of `deno task bench`, or alone: `deno run -A bench/webrtc.ts [--quick] [--core N]`):
 *
 * 1. **Client connect → first frame**: the SDK player's `ttffMs` (from `createPlayer` to the first presented
 *    frame), each connect in a fresh browser context. Target (webrtc_sfu): p50 ≤ 500 ms.
 * 2. **Engine audio chunk → audio out of the browser's receiver**: the bench engine speaks tone bursts in
 *    real time; an AudioWorklet in the page (fed by the player's element or its received stream) reports
 *    each burst's onset; latency = onset − the send of the burst's first chunk.
 * 3. **Glass-to-glass frame latency**: the service renders with the wall clock stamped into each frame
 *    (`bench/stamp.ts`); the page decodes the stamp of every presented frame (`requestVideoFrameCallback`)
 *    and subtracts it from its clock (same machine). The first 2 s after the first frame are left out (the
 *    first picture may be a cached keyframe). Target (webrtc_sfu): p50 ≤ 80 ms.
 * 4. **Sessions per core** (webrtc_sfu): the service, its ffmpeg children **and Janus** pinned to one core
 *    with `taskset`; N sessions, each watched by one WebRTC subscriber (bare PeerConnections in one page on
 *    the other cores) and talking half of the time; N grows until a subscriber receives fewer than 98 % of the
 *    frames, loses packets, or the core is full. CPU per session, Janus's share apart.
 *
 * The service runs as its own process (`bench/service.ts --stamp`), like the media bench's.
 *
 * @module
 */
import { parseArgs } from "node:util";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { generateEngineTls } from "../engine/mod.ts";
import { launchChromium } from "../testing/browser.ts";
import { type JanusProcess, startJanus } from "../testing/janus.ts";
import { type BenchEngine, startBenchEngine, wallNow } from "./engine.ts";
import { type Service, startServiceProcess, treeUsage } from "./service_child.ts";

/** Latency figures of one measure, ms. */
export interface Figures {
  samples: number;
  p50: number;
  p90: number;
  p99: number;
}

/** Results of one transport. */
export interface TransportResults {
  connect_to_first_frame_ms: Figures;
  audio_chunk_to_browser_audio_ms: Figures & { bursts: number };
  glass_to_glass_frame_ms: Figures;
}

/** Everything the WebRTC bench reports. */
export interface WebRtcBenchResults {
  websocket_fmp4: TransportResults;
  webrtc_sfu: TransportResults;
  capacity_one_core_webrtc_sfu: {
    sustained_sessions: number;
    /** Whether a limit was found (false: every step of the ramp passed, the capacity is higher). */
    limit_reached: boolean;
    steps: Record<string, number>[];
  };
}

/** What the WebRTC bench takes. */
export interface WebRtcBenchOptions {
  /** TLS material of the bench engine (its CA is written to `dir`). */
  tls: { certPem: string; keyPem: string; caPem: string };
  /** A scratch directory. */
  dir: string;
  quick?: boolean;
  /** The core the service, its encoders and Janus are pinned to (the bench uses the others). */
  core: number;
  /** Capacity ramp: largest N, step, seconds measured per step. */
  max?: number;
  step?: number;
  seconds?: number;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const r1 = (n: number) => Math.round(n * 10) / 10;

function pct(values: number[], p: number): number {
  if (!values.length) return NaN;
  const s = [...values].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))];
}

function figures(values: number[]): Figures {
  return {
    samples: values.length,
    p50: r1(pct(values, 50)),
    p90: r1(pct(values, 90)),
    p99: r1(pct(values, 99)),
  };
}

async function run(cmd: string, args: string[]): Promise<void> {
  await new Deno.Command(cmd, { args, stdout: "null", stderr: "null" }).output().catch(() => {});
}

/** The service child for this bench: the SFU configured, frames stamped (`bench/service.ts --stamp`). */
function startService(o: WebRtcBenchOptions, janus: JanusProcess, caFile: string): Promise<Service> {
  return startServiceProcess(caFile, o.dir, o.core, {
    SVC_KV: `${o.dir}/webrtc.kv`,
    SVC_SFU_JANUS_URL: janus.url,
    SVC_SFU_ADMIN_SECRET: janus.secret,
  }, ["--stamp"]);
}

type Transport = "websocket_fmp4" | "webrtc_sfu";

interface Session {
  id: string;
  clientToken: string;
  meta: Record<string, unknown>;
}

async function api(svc: Service, method: string, path: string, body?: unknown) {
  const res = await fetch(`${svc.url}${path}`, {
    method,
    headers: {
      authorization: `Bearer ${svc.apiKey}`,
      ...(body === undefined ? {} : { "content-type": "application/json" }),
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const json = await res.json();
  if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${JSON.stringify(json)}`);
  return json;
}

async function createSession(svc: Service, engine: BenchEngine, transport: Transport): Promise<Session> {
  const body = await api(svc, "POST", "/v1/sessions", {
    provider_type: "external_engine",
    provider_config: {
      external_engine: { url: engine.url, auth_headers: { Authorization: "Bearer bench" } },
    },
    transport,
  });
  return { id: body.session_id, clientToken: body.client_token, meta: body.stream_metadata };
}

/** Fresh tokens and stream metadata of a session. */
async function refresh(svc: Service, s: Session): Promise<Session> {
  const body = await api(svc, "POST", `/v1/sessions/${s.id}/client-token`);
  return { ...s, clientToken: body.client_token, meta: body.stream_metadata };
}

async function endSession(svc: Service, id: string): Promise<void> {
  await fetch(`${svc.url}/v1/sessions/${id}/end?force=true`, {
    method: "POST",
    headers: { authorization: `Bearer ${svc.apiKey}` },
  }).then((r) => r.body?.cancel());
}

/**
 * The page's probes: the SDK player, a stamp decoder on every presented frame, and an AudioWorklet that
 * reports tone onsets (after ≥ 200 ms of quiet).
 */
const PROBE = `
globalThis.startProbe = async ({ meta, clientToken, width }) => {
  const g = globalThis;
  const { createPlayer } = await import("/sdk/player.js");
  const video = document.createElement("video");
  document.body.append(video);
  g.stamps = []; g.onsets = [];
  const actx = new AudioContext();
  // The WebCodecs player (fMP4) plays its sound into this node of the page's graph: the probe taps it there.
  const tap = actx.createGain();
  tap.connect(actx.destination);
  g.player = createPlayer({ video, streamMetadata: meta, clientToken, microphone: false, audioContext: actx, audioOutput: tap });
  const canvas = document.createElement("canvas");
  canvas.width = width; canvas.height = 32;
  const ctx = canvas.getContext("2d", { willReadFrequently: true });
  const onFrame = () => {
    if (video.videoWidth === width) {
      const now = Date.now();
      ctx.drawImage(video, 0, 0, width, 32, 0, 0, width, 32);
      const d = ctx.getImageData(0, 0, width, 32).data;
      let v = 0;
      for (let i = 0; i < 32; i++) {
        const x = Math.floor((i + 0.5) * width / 32);
        v = (v * 2) + (d[(16 * width + x) * 4] > 128 ? 1 : 0);
      }
      let lat = (now >>> 0) - v;
      if (lat < -2147483648) lat += 4294967296;
      g.stamps.push({ t: now, lat });
    }
    video.requestVideoFrameCallback(onFrame);
  };
  video.requestVideoFrameCallback(onFrame);
  const code = "class Onset extends AudioWorkletProcessor { constructor() { super(); this.quiet = 0; }" +
    " process(inputs) { const x = inputs[0] && inputs[0][0]; if (!x) return true; let s = 0;" +
    " for (let i = 0; i < x.length; i++) s += x[i] * x[i]; const loud = Math.sqrt(s / x.length) > 0.05;" +
    " if (loud && this.quiet >= sampleRate * 0.2) this.port.postMessage(currentTime);" +
    " this.quiet = loud ? 0 : this.quiet + x.length; return true; } } registerProcessor('onset', Onset);";
  await actx.audioWorklet.addModule(URL.createObjectURL(new Blob([code], { type: "text/javascript" })));
  const node = new AudioWorkletNode(actx, "onset");
  node.port.onmessage = () => g.onsets.push(Date.now());
  const sink = actx.createGain();
  sink.gain.value = 0;
  node.connect(sink).connect(actx.destination);
  tap.connect(node);
  let wired = false;
  const wire = () => {
    if (wired) return;
    if (g.player.stats().playback === "webcodecs") {
      wired = true; // its sound already reaches the probe (audioOutput)
      return;
    }
    if (video.srcObject instanceof MediaStream && video.srcObject.getAudioTracks().length) {
      actx.createMediaStreamSource(video.srcObject).connect(node);
      wired = true;
    } else if (meta.media_url && video.src) {
      actx.createMediaElementSource(video).connect(tap);
      wired = true;
    }
  };
  const timer = setInterval(() => { wire(); if (wired) clearInterval(timer); }, 20);
};
`;

/** A minimal WebRTC subscriber per session, for the capacity ramp (no media element). */
const VIEWERS = `
globalThis.viewers = [];
globalThis.view = (meta) => {
  const v = { pc: null, ws: null };
  const ws = new WebSocket(meta.sfu_endpoint, ["avatar-sfu.v0", "bearer." + meta.session_token]);
  v.ws = ws;
  ws.onmessage = async (e) => {
    const m = JSON.parse(e.data);
    if (m.type !== "offer") return;
    v.pc?.close();
    const pc = new RTCPeerConnection({ iceServers: meta.ice_servers });
    v.pc = pc;
    await pc.setRemoteDescription({ type: "offer", sdp: m.sdp });
    await pc.setLocalDescription(await pc.createAnswer());
    await new Promise((r) => {
      if (pc.iceGatheringState === "complete") return r();
      pc.onicegatheringstatechange = () => pc.iceGatheringState === "complete" && r();
      setTimeout(r, 2000);
    });
    ws.send(JSON.stringify({ type: "answer", sdp: pc.localDescription.sdp }));
  };
  globalThis.viewers.push(v);
};
globalThis.viewStats = async () => {
  const out = [];
  for (const v of globalThis.viewers) {
    let frames = 0, lost = 0;
    if (v.pc) for (const s of (await v.pc.getStats()).values()) {
      if (s.type === "inbound-rtp") { lost += s.packetsLost ?? 0; if (s.kind === "video") frames += s.framesReceived ?? 0; }
    }
    out.push({ frames, lost });
  }
  return out;
};
globalThis.closeViewers = () => { for (const v of globalThis.viewers) { v.ws.close(); v.pc?.close(); } globalThis.viewers = []; };
`;

/**
 * Waits (at most 15 s) for the player's first frame, polled in the page by a timer (`page.waitForFunction`
 * would load Playwright's injected script into the page, 20-30 ms of its main thread, during the connect).
 */
async function untilFirstFrame(page: Page): Promise<void> {
  await page.evaluate(`new Promise((resolve, reject) => {
    const end = Date.now() + 15000;
    const t = setInterval(() => {
      if (globalThis.player.state().ttffMs !== null) { clearInterval(t); resolve(); }
      else if (Date.now() > end) { clearInterval(t); reject(new Error("no first frame in 15 s")); }
    }, 5);
  })`);
}

async function newPage(browser: Browser, svc: Service): Promise<{ context: BrowserContext; page: Page }> {
  const context = await browser.newContext();
  const page = await context.newPage();
  await page.goto(`${svc.url}/docs/errors`); // any page of the service: same origin as /sdk/player.js
  await page.evaluate(PROBE);
  return { context, page };
}

/** Connect → first frame, audio and glass-to-glass latency of one transport. */
async function measureTransport(
  transport: Transport,
  svc: Service,
  engine: BenchEngine,
  browser: Browser,
  quick: boolean,
): Promise<TransportResults> {
  // 1. connect → first frame, in fresh contexts, landing anywhere in the GOP.
  const sessions = [await createSession(svc, engine, transport), await createSession(svc, engine, transport)];
  const ttff: number[] = [];
  const connects = quick ? 6 : 20;
  for (let i = 0; i < connects; i++) {
    const s = await refresh(svc, sessions[i % sessions.length]);
    await sleep(100 + Math.random() * 600);
    const { context, page } = await newPage(browser, svc);
    try {
      await page.evaluate(
        `startProbe(${JSON.stringify({ meta: s.meta, clientToken: s.clientToken, width: 512 })})`,
      );
      await untilFirstFrame(page);
      ttff.push(await page.evaluate(`globalThis.player.state().ttffMs`) as number);
    } catch (err) {
      console.error(`bench webrtc: ${transport} connect ${i} failed: ${err}`);
    } finally {
      await context.close();
    }
  }
  for (const s of sessions) await endSession(svc, s.id);

  // 2 and 3. one watched session: bursts of speech, stamped frames.
  const s = await createSession(svc, engine, transport);
  const { context, page } = await newPage(browser, svc);
  const audio: number[] = [];
  let stamps: number[] = [];
  let burstsSent = 0;
  try {
    await page.evaluate(
      `startProbe(${JSON.stringify({ meta: s.meta, clientToken: s.clientToken, width: 512 })})`,
    );
    await untilFirstFrame(page);
    const firstAt = Date.now();
    await sleep(2000);
    const bursts = quick ? 5 : 12;
    await engine.talk(s.id, { burstMs: 400, gapMs: 600, bursts });
    await sleep(1000);
    const onsets = await page.evaluate(`globalThis.onsets`) as number[];
    const sent = engine.sessions.get(s.id)!.sent.filter((c) => c.index === 0);
    burstsSent = sent.length;
    for (const c of sent) {
      const hit = onsets.find((t) => t >= c.sentAt - 5 && t < c.sentAt + 900);
      if (hit !== undefined) audio.push(hit - c.sentAt);
    }
    const all = await page.evaluate(`globalThis.stamps`) as { t: number; lat: number }[];
    stamps = all.filter((x) => x.t > firstAt + 2000 && x.lat >= 0 && x.lat < 10_000).map((x) => x.lat);
  } finally {
    await context.close();
    await endSession(svc, s.id);
  }
  return {
    connect_to_first_frame_ms: figures(ttff),
    audio_chunk_to_browser_audio_ms: { ...figures(audio), bursts: burstsSent },
    glass_to_glass_frame_ms: figures(stamps),
  };
}

/** Sessions per core with Janus: the ramp. */
async function measureCapacity(
  svc: Service,
  janus: JanusProcess,
  engine: BenchEngine,
  browser: Browser,
  o: WebRtcBenchOptions,
): Promise<WebRtcBenchResults["capacity_one_core_webrtc_sfu"]> {
  const seconds = o.quick ? 4 : (o.seconds ?? 8);
  const max = o.max ?? (o.quick ? 10 : 40);
  const step = o.step ?? 5;
  const steps: Record<string, number>[] = [];
  let sustained = 0;
  let limited = false;
  const context = await browser.newContext();
  const page = await context.newPage();
  await page.goto(`${svc.url}/docs/errors`);
  await page.evaluate(VIEWERS);
  try {
    for (let n = step; n <= max; n += step) {
      const sessions: Session[] = [];
      for (let i = 0; i < n; i++) sessions.push(await createSession(svc, engine, "webrtc_sfu"));
      for (const s of sessions) await page.evaluate(`view(${JSON.stringify(s.meta)})`);
      const talking = sessions.map((s) =>
        engine.talk(s.id, { burstMs: 1200, gapMs: 1200, bursts: Math.ceil((seconds + 6) / 2.4) })
      );
      await sleep(4000); // subscribers up, caches warm
      const v0 = await page.evaluate(`viewStats()`) as { frames: number; lost: number }[];
      const c0 = treeUsage(svc.pid).cpuS;
      const j0 = janus.cpuSeconds();
      const t0 = wallNow();
      await sleep(seconds * 1000);
      const v1 = await page.evaluate(`viewStats()`) as { frames: number; lost: number }[];
      const c1 = treeUsage(svc.pid).cpuS;
      const j1 = janus.cpuSeconds();
      const t1 = wallNow();
      const elapsed = (t1 - t0) / 1000;
      const expected = 25 * elapsed;
      const received = v1.map((v, i) => v.frames - (v0[i]?.frames ?? 0));
      const lost = v1.reduce((a, v, i) => a + v.lost - (v0[i]?.lost ?? 0), 0);
      const worst = Math.min(...received) / expected;
      const service = (c1 - c0) / elapsed;
      const sfu = (j1 - j0) / elapsed;
      const row = {
        sessions: n,
        worst_subscriber_frame_share: Math.round(worst * 1000) / 1000,
        packets_lost: lost,
        cpu_core_share_service: Math.round(service * 1000) / 1000,
        cpu_core_share_janus: Math.round(sfu * 1000) / 1000,
        cpu_per_session_pct: r1((service + sfu) / n * 100),
        janus_per_session_pct: r1(sfu / n * 100),
      };
      steps.push(row);
      console.log(
        `bench webrtc: ${n} sessions: worst subscriber ${
          r1(worst * 100)
        }% of frames, ${lost} packets lost, cpu ${r1((service + sfu) * 100)}% of a core (Janus ${
          r1(sfu * 100)
        }%)`,
      );
      await page.evaluate(`closeViewers()`);
      await Promise.all(sessions.map((s) => endSession(svc, s.id)));
      await Promise.all(talking);
      const ok = worst >= 0.98 && lost === 0 && service + sfu < 0.97;
      if (ok) sustained = n;
      if (!ok) {
        limited = true;
        break;
      }
      await sleep(1500);
    }
  } finally {
    await context.close();
  }
  return { sustained_sessions: sustained, limit_reached: limited, steps };
}

/** Runs the WebRTC bench (Janus, the service process, the bench engine and Chromium); stops them all. */
export async function benchWebRtc(o: WebRtcBenchOptions): Promise<WebRtcBenchResults> {
  const caFile = `${o.dir}/webrtc-engine-ca.pem`;
  await Deno.writeTextFile(caFile, o.tls.caPem);
  const janus = await startJanus({ icePorts: 200, ingestPorts: 200 });
  let svc: Service | null = null;
  const engine = startBenchEngine(o.tls);
  let browser: Browser | null = null;
  try {
    await run("taskset", ["-a", "-p", "-c", String(o.core), String(janus.pid)]);
    svc = await startService(o, janus, caFile);
    browser = await launchChromium({ media: true, webrtc: true });
    const fmp4 = await measureTransport("websocket_fmp4", svc, engine, browser, o.quick ?? false);
    console.log(`bench webrtc: websocket_fmp4 ${JSON.stringify(fmp4)}`);
    const sfu = await measureTransport("webrtc_sfu", svc, engine, browser, o.quick ?? false);
    console.log(`bench webrtc: webrtc_sfu ${JSON.stringify(sfu)}`);
    const capacity = await measureCapacity(svc, janus, engine, browser, o);
    return { websocket_fmp4: fmp4, webrtc_sfu: sfu, capacity_one_core_webrtc_sfu: capacity };
  } finally {
    await browser?.close();
    if (svc) {
      await svc.child.stdin.close().catch(() => {});
      const exited = await Promise.race([svc.child.status.then(() => true), sleep(15000).then(() => false)]);
      if (!exited) svc.child.kill("SIGKILL");
    }
    await engine.close();
    await janus.stop();
  }
}

/** The results as Markdown tables. */
export function webrtcTable(r: WebRtcBenchResults): string {
  const f = (x: Figures) => `${x.p50} / ${x.p90} / ${x.p99} ms (${x.samples})`;
  const lines = [
    "| measure (p50 / p90 / p99, samples) | websocket_fmp4 | webrtc_sfu | target (webrtc_sfu) |",
    "| --- | --- | --- | --- |",
    `| client connect → first frame | ${f(r.websocket_fmp4.connect_to_first_frame_ms)} | ${
      f(r.webrtc_sfu.connect_to_first_frame_ms)
    } | p50 ≤ 500 ms |`,
    `| engine audio chunk → audio out of the browser's receiver | ${
      f(r.websocket_fmp4.audio_chunk_to_browser_audio_ms)
    } | ${f(r.webrtc_sfu.audio_chunk_to_browser_audio_ms)} | |`,
    `| glass-to-glass frame latency | ${f(r.websocket_fmp4.glass_to_glass_frame_ms)} | ${
      f(r.webrtc_sfu.glass_to_glass_frame_ms)
    } | p50 ≤ 80 ms |`,
    "",
    "| webrtc_sfu sessions | worst subscriber frames | packets lost | CPU service | CPU Janus | CPU/session (with Janus) |",
    "| --- | --- | --- | --- | --- | --- |",
    ...r.capacity_one_core_webrtc_sfu.steps.map((s) =>
      `| ${s.sessions} | ${r1(s.worst_subscriber_frame_share * 100)}% | ${s.packets_lost} | ${
        r1(s.cpu_core_share_service * 100)
      }% | ${r1(s.cpu_core_share_janus * 100)}% | ${s.cpu_per_session_pct}% |`
    ),
    "",
    `sustained on one core (service, encoders and Janus): ${
      r.capacity_one_core_webrtc_sfu.limit_reached ? "" : "at least "
    }${r.capacity_one_core_webrtc_sfu.sustained_sessions} sessions${
      r.capacity_one_core_webrtc_sfu.limit_reached ? "" : " (every step of the ramp passed: raise --max)"
    }`,
  ];
  return lines.join("\n");
}

if (import.meta.main) {
  const args = parseArgs({
    args: Deno.args,
    options: {
      core: { type: "string" },
      quick: { type: "boolean", default: false },
      max: { type: "string" },
      step: { type: "string" },
      seconds: { type: "string" },
    },
  }).values;
  const nproc = navigator.hardwareConcurrency;
  const core = Number(args.core ?? nproc - 1);
  if (nproc > 1) {
    const others = [...Array(nproc).keys()].filter((c) => c !== core).join(",");
    await run("taskset", ["-a", "-p", "-c", others, String(Deno.pid)]);
  }
  const dir = await Deno.makeTempDir({ prefix: "svc-bench-webrtc-" });
  try {
    const results = await benchWebRtc({
      tls: await generateEngineTls(),
      dir,
      quick: args.quick,
      core,
      max: args.max ? Number(args.max) : undefined,
      step: args.step ? Number(args.step) : undefined,
      seconds: args.seconds ? Number(args.seconds) : undefined,
    });
    console.log(`\n${webrtcTable(results)}`);
    const outDir = new URL("./results/", import.meta.url);
    await Deno.mkdir(outDir, { recursive: true });
    const file = new URL(`webrtc-${new Date().toISOString().replace(/[:.]/g, "-")}.json`, outDir);
    await Deno.writeTextFile(file, JSON.stringify(results, null, 2) + "\n");
    console.log(`results: ${file.pathname}`);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}
