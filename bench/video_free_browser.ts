/**
 * The video-free player in Chromium (`deno run -A bench/video_free_browser.ts`, and step 3c of
 * `deno task bench`): the two browser-side targets of the video-free mode, measured from outside the SDK
 * player (`createPlayer({ canvas })`, drawing with `sdk/avatar_canvas.js`) in Debian's headless Chromium,
 * on a live session of the service (pinned to one core with `taskset`, as the media bench runs it) driven by
 * the V0 bench engine (`bench/engine.ts`).
 *
 * 1. **What drawing the avatar costs.** The CPU time of Chromium's whole process tree (browser, renderer,
 *    GPU/compositor, audio and other utility processes; `utime + stime` of every process and thread from
 *    `/proc`), in pages of the same origin, each in a fresh context with a 512×512 canvas shown at 512 CSS
 *    px (the demo page's canvas):
 *    - `idle`: the page, no player, for `--seconds`;
 *    - the player on a session that talks half the time (running speech, 1.2 s on, 1.2 s off), its drawing
 *      switched on and off in alternating 4.8 s slices (`--seconds` of each): `player` — it draws on the
 *      canvas; `player_no_draw` — it draws through a context that drops the calls (it decodes and plays the
 *      sound, receives the animation track and runs its drawing logic; no pixels, nothing to composite).
 *    `player − idle` is the player's cost; `player − player_no_draw` the drawing (rasterising the layers,
 *    compositing and presenting the canvas), reported as measured (the measure: drawing on minus off
 *    on a 25 fps session, the player drawing only the frames whose face changed), per pair of slices, and
 *    per 25 frames drawn a second (as if the face changed in every frame); the page also times the drawing
 *    calls on its main thread (first `clearRect` → last `restore` of a frame). `--reps N` pages of each
 *    (default 2).
 * 2. **Mouth vs sound.** The page taps the player's sound (the player plays into the page's own
 *    `AudioContext` through `audioOutput`) and detects each burst's onset (−40 dBFS after 150 ms of quiet)
 *    in an AudioWorklet, timed when it is heard (`getOutputTimestamp()`), as `bench:player` does for video;
 *    after each of the player's draws (a `requestAnimationFrame` callback registered after the player's)
 *    it reads the mouth's box of the canvas (`getImageData`: dark cavity pixels). When that frame was
 *    **presented** comes from Chromium's own frame reporting: a trace of the run (`benchmark` category)
 *    holds a `PipelineReporter` per compositor frame, from its BeginFrame time (the rAF timestamp of the
 *    main-thread frame it carries) to its presentation; the page's clock is placed on the trace's with a
 *    `performance.mark`. The engine speaks vowel bursts ("ah", 400 ms on, 600 ms off). Per burst: the first
 *    presented frame with the mouth open − the burst's onset heard ("open": the box's mean darkness past
 *    halfway between closed and open, linear through the drawer's cross-fade; also by dark cavity pixels, as
 *    `bench:player` counts them). Also: engine chunk → sound heard; the canvas's draw → presentation delay
 *    (which the player estimates as one refresh); and the service's side — each burst's first non-silent
 *    viseme stamp against where its sound starts on the timeline (the page's audio units, decoded here).
 *    `BENCH_VFB_DUMP=file.json` writes the raw reads, onsets, visemes and frame reports.
 *
 * Figures depend on the machine's load (recorded with them). Options: `--quick`, `--seconds S` (CPU window,
 * default 20), `--reps N` (default 2), `--bursts N` (default 30), `--core N` (the service's core, default the
 * last), `--skip cpu|sync`, `--realtime-engine` (the mouth-vs-sound run made again on the strictly real-time
 * engine of `testing/realtime_engine.ts`, right after the bench engine's). Writes `bench/results/video-free-browser-<time>.json`.
 *
 * @module
 */
import { parseArgs } from "node:util";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { OpusDecoder } from "opus-decoder";
import { generateEngineTls } from "../engine/mod.ts";
import { loadArtBank } from "../src/media/art_bank.ts";
import { CATALOG } from "../src/media/catalog.ts";
import { launchChromium } from "../testing/browser.ts";
import { type BenchEngine, startBenchEngine, startRealtimeBenchEngine } from "./engine.ts";
import { ONSET_TAP } from "./onset_tap.ts";
import {
  createSession as createServiceSession,
  endSession,
  type Service,
  startServiceProcess,
} from "./service_child.ts";

/** The demo page's canvas (px, square). */
export const CANVAS_SIZE = 512;
const CLK_TCK = 100;
/**
 * A little more than a refresh of headless Chromium's 60 Hz display (16.7 ms): a frame drawn this long after
 * another means the other was still shown at the refresh after it.
 */
const REFRESH_MS = 20;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const r1 = (n: number) => Math.round(n * 10) / 10;
const r2 = (n: number) => Math.round(n * 100) / 100;
const loadavg = () => Deno.readTextFileSync("/proc/loadavg").split(" ").slice(0, 3).join(" ");

function pct(values: number[], p: number): number | null {
  if (!values.length) return null;
  const s = [...values].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))];
}

/** p50 / p95 / p99 / max of a measure. */
export interface Figures {
  samples: number;
  p50: number | null;
  p95: number | null;
  p99: number | null;
  max: number | null;
}

function figures(values: number[]): Figures {
  const f = (p: number) => {
    const v = pct(values, p);
    return v === null ? null : r1(v);
  };
  return { samples: values.length, p50: f(50), p95: f(95), p99: f(99), max: f(100) };
}

// ---------------------------------------------------------------- Chromium's processes

export interface ProcTicks {
  kind: string;
  ticks: number;
  threads: Map<number, { name: string; ticks: number }>;
}

/** utime + stime (ticks) and the name of a `/proc/.../stat` line. */
function readStat(path: string): { name: string; ticks: number; ppid: number } | null {
  try {
    const stat = Deno.readTextFileSync(path);
    const name = stat.slice(stat.indexOf("(") + 1, stat.lastIndexOf(")"));
    const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return { name, ticks: Number(f[11]) + Number(f[12]), ppid: Number(f[1]) };
  } catch {
    return null;
  }
}

/** What a Chromium process is, from its command line (`--type=…`, the utility's sub-type). */
function chromiumKind(cmdline: string[]): string {
  const arg = (k: string) => cmdline.find((a) => a.startsWith(`--${k}=`))?.slice(k.length + 3);
  if (/crashpad_handler$/.test(cmdline[0] ?? "")) return "crashpad";
  const type = arg("type");
  if (!type) return "browser";
  if (type === "gpu-process") return "gpu";
  if (type === "utility") {
    const sub = arg("utility-sub-type") ?? "";
    return `utility:${sub.replace(/\.mojom\..*$/, "").split(".").pop() || "?"}`;
  }
  return type;
}

/** The Chromium processes started by this process (the browser Playwright launched and its tree). */
export function chromiumTree(): Map<number, ProcTicks> {
  const children = new Map<number, number[]>();
  for (const e of Deno.readDirSync("/proc")) {
    if (!/^\d+$/.test(e.name)) continue;
    const s = readStat(`/proc/${e.name}/stat`);
    if (!s) continue;
    const list = children.get(s.ppid) ?? [];
    list.push(Number(e.name));
    children.set(s.ppid, list);
  }
  const out = new Map<number, ProcTicks>();
  const walk = (pid: number, inChromium: boolean) => {
    for (const c of children.get(pid) ?? []) {
      let cmd: string[] = [];
      try {
        // (Chromium rewrites its processes' titles: one string, arguments separated by spaces)
        cmd = Deno.readTextFileSync(`/proc/${c}/cmdline`).split(/[\0 ]/).filter(Boolean);
      } catch { /* gone */ }
      const isChromium = inChromium || /chrom/.test(cmd[0] ?? "");
      if (isChromium) {
        const threads = new Map<number, { name: string; ticks: number }>();
        let ticks = 0;
        try {
          for (const t of Deno.readDirSync(`/proc/${c}/task`)) {
            const s = readStat(`/proc/${c}/task/${t.name}/stat`);
            if (s) threads.set(Number(t.name), { name: s.name, ticks: s.ticks });
          }
          ticks = readStat(`/proc/${c}/stat`)?.ticks ?? 0;
        } catch { /* gone */ }
        out.set(c, { kind: chromiumKind(cmd), ticks, threads });
      }
      walk(c, isChromium);
    }
  };
  walk(Deno.pid, false);
  return out;
}

/** CPU of one window: seconds of CPU by process kind and by (kind, thread name). */
export interface TreeDelta {
  cpuS: number;
  byKind: Record<string, number>;
  byThread: Record<string, number>;
  /** Processes that exited during the window (their time is lost). */
  exited: number;
}

export function treeDelta(a: Map<number, ProcTicks>, b: Map<number, ProcTicks>): TreeDelta {
  const byKind: Record<string, number> = {};
  const byThread: Record<string, number> = {};
  let total = 0;
  for (const [pid, p] of b) {
    const before = a.get(pid);
    // Threads: per-thread deltas (exited threads' time is in the process total, not here).
    for (const [tid, t] of p.threads) {
      const d = t.ticks - (before?.threads.get(tid)?.ticks ?? 0);
      if (d <= 0) continue;
      const key = `${p.kind}/${t.name.replace(/\d+$/, "#")}`;
      byThread[key] = (byThread[key] ?? 0) + d / CLK_TCK;
    }
    const d = p.ticks - (before?.ticks ?? 0);
    byKind[p.kind] = (byKind[p.kind] ?? 0) + d / CLK_TCK;
    total += d;
  }
  let exited = 0;
  for (const pid of a.keys()) if (!b.has(pid)) exited++;
  return { cpuS: total / CLK_TCK, byKind, byThread, exited };
}

// ---------------------------------------------------------------- the service and sessions

interface Session {
  id: string;
  clientToken: string;
  meta: Record<string, unknown>;
}

async function createSession(svc: Service, engine: BenchEngine): Promise<Session> {
  const s = await createServiceSession(svc, engine, "websocket_fmp4");
  return { id: s.id, clientToken: s.token, meta: s.meta };
}

// ---------------------------------------------------------------- the page

/** The mouth's box on a `size`×`size` canvas (every pose of the default avatar's mouth, head motion included). */
async function mouthBox(size: number): Promise<{ x: number; y: number; w: number; h: number }> {
  const art = await loadArtBank(CATALOG, size, size);
  const b = art.avatars.get(CATALOG.defaultAvatarId)!.mouthBox;
  return { x: b.x, y: b.y, w: b.width, h: b.height };
}

/** A page mode: no player; the player (its drawing switched on and off); the player drawing + probes. */
type Mode = "idle" | "player" | "sync";

/**
 * The page's side. `setup(...)` builds the page: a `size`×`size` canvas at `size` CSS px; with a player,
 * `g.draws` / `g.drawMs` count the frames drawn and the main-thread time of their calls. `sync` adds the
 * sound tap (`g.onsets`: epoch ms heard) and the mouth read after each frame the player drew (`g.reads`:
 * [rAF time (page ms), dark cavity pixels in the mouth's box, the box's mean darkness (255 − mean RGB)]).
 */
const PAGE = `${ONSET_TAP}
globalThis.setup = async ({ mode, meta, clientToken, size, box }) => {
  const g = globalThis;
  document.body.innerHTML = "";
  document.body.style.margin = "0";
  document.body.style.background = "#20242b";
  const canvas = document.createElement("canvas");
  canvas.width = size; canvas.height = size;
  canvas.style.cssText = "display:block;width:" + size + "px;height:" + size + "px";
  document.body.append(canvas);
  g.draws = 0; g.drawMs = 0; g.onsets = []; g.reads = [];
  if (mode === "idle") return;
  // Counts the frames drawn (clearRect opens one, restore closes it) and times their calls.
  let t0 = 0;
  const count = (ctx) => {
    const clear = ctx.clearRect, restore = ctx.restore;
    ctx.clearRect = function (...a) { g.draws++; t0 = performance.now(); return clear.apply(this, a); };
    ctx.restore = function (...a) { const r = restore.apply(this, a); g.drawMs += performance.now() - t0; return r; };
    return ctx;
  };
  let target = canvas;
  if (mode === "player") {
    // The player draws through a context that passes its calls on to the canvas's while g.drawOn, and
    // drops them otherwise (the drawer's logic runs either way; no pixels, nothing to composite).
    g.drawOn = true;
    const real = canvas.getContext("2d");
    const ctx = {};
    for (const m of ["clearRect", "drawImage", "save", "restore", "translate", "beginPath", "rect", "clip"]) {
      ctx[m] = (...a) => { if (g.drawOn) real[m](...a); };
    }
    Object.defineProperty(ctx, "globalAlpha", {
      get: () => real.globalAlpha,
      set: (v) => { if (g.drawOn) real.globalAlpha = v; },
    });
    count(ctx);
    target = { width: size, height: size, getContext: () => ctx };
  } else count(canvas.getContext("2d"));
  const { createPlayer } = await import("/sdk/player.js");
  const options = { canvas: target, streamMetadata: meta, clientToken, microphone: false };
  if (mode === "sync") {
    const { actx, tap } = await g.onsetTap(g.onsets);
    Object.assign(options, { audioContext: actx, audioOutput: tap });
  }
  if (mode === "sync") {
    // What the socket carries (for the figures' breakdown): viseme messages and audio units [pts ms, Opus].
    g.visemes = []; g.units = [];
    const WS = globalThis.WebSocket;
    globalThis.WebSocket = class extends WS {
      constructor(...a) {
        super(...a);
        this.addEventListener("message", (e) => {
          if (typeof e.data === "string") {
            if (e.data.includes('"viseme"')) { const m = JSON.parse(e.data); g.visemes.push([m.t_ms, m.viseme]); }
          } else if (new Uint8Array(e.data)[0] === 2) {
            g.units.push([Number(new DataView(e.data).getBigInt64(4)) / 1000, Array.from(new Uint8Array(e.data, 16))]);
          }
        });
      }
    };
  }
  g.player = createPlayer(options);
  if (mode === "sync") {
    // Registered after the player's own requestAnimationFrame loop: runs right after each of its draws.
    const ctx = canvas.getContext("2d");
    let drawn = 0;
    const read = (now) => {
      requestAnimationFrame(read);
      if (g.draws === drawn) return; // the player did not draw in this frame: the canvas shows what it did
      drawn = g.draws;
      const d = ctx.getImageData(box.x, box.y, box.w, box.h).data;
      let dark = 0, sum = 0;
      for (let i = 0; i < d.length; i += 4) {
        const r = d[i], gg = d[i + 1], b = d[i + 2];
        if (r < 110 && gg < 60 && b < 70 && r > gg + 15) dark++;
        sum += r + gg + b;
      }
      g.reads.push([now, dark, 255 - sum / (d.length / 4) / 3]);
    };
    requestAnimationFrame(read);
  }
};
`;

async function newPage(browser: Browser, base: string): Promise<{ context: BrowserContext; page: Page }> {
  const context = await browser.newContext({ viewport: { width: 800, height: 600 } });
  const page = await context.newPage();
  page.on("pageerror", (e) => console.error(`bench video-free browser: page error: ${e}`));
  if (Deno.env.get("BENCH_DEBUG")) page.on("console", (m) => console.log(`page: ${m.text()}`));
  await page.goto(`${base}/docs/errors`); // a page of the service: same origin as /sdk/player.js
  await page.evaluate(PAGE);
  return { context, page };
}

async function setup(page: Page, mode: Mode, s: Session | null, box: unknown) {
  await page.evaluate(
    `setup(${JSON.stringify({ mode, meta: s?.meta, clientToken: s?.clientToken, size: CANVAS_SIZE, box })})`,
  );
  if (mode === "idle") return;
  await page.waitForFunction(
    `globalThis.player.state().state === "playing" && globalThis.player.stats().audioDecodedMs > 0`,
    undefined,
    { timeout: 30_000 },
  );
}

// ---------------------------------------------------------------- 1. CPU

/** CPU over one page's windows of one state. */
export interface CpuWindow {
  mode: "idle" | "player_no_draw" | "player";
  rep: number;
  seconds: number;
  /** Chromium's process tree, % of one core. */
  cpu_pct: number;
  by_kind_pct: Record<string, number>;
  /** The busiest threads (process kind / thread name), % of one core. */
  top_threads_pct: Record<string, number>;
  exited_processes: number;
  draws_per_s: number;
  /** Main-thread time of the drawing calls, % of one core. */
  draw_calls_pct: number;
  audio_underrun_ms: number | null;
  load_average: string;
}

/** The CPU figures: the mean of each state's windows, and the differences. */
export interface CpuSummary {
  /** Drawing (player − player_no_draw) of each pair of consecutive slices of one page, % of a core. */
  drawing_pairs_pct: number[];
  idle_pct: number;
  player_no_draw_pct: number;
  player_pct: number;
  /** player − idle: decoding, playing, receiving, drawing. */
  player_cost_pct: number;
  /** player − player_no_draw: rasterising, compositing, presenting the canvas. */
  drawing_pct: number;
  /** The drawing per 25 frames drawn a second (drawing_pct × 25 / draws_per_s). */
  drawing_per_25fps_pct: number;
  draws_per_s: number;
  draw_calls_pct: number;
}

/** Samples Chromium's tree and the page's draw counters. */
async function sample(page: Page) {
  const d = await page.evaluate(`[globalThis.draws, globalThis.drawMs]`) as [number, number];
  return { tree: chromiumTree(), at: performance.now(), draws: d[0], drawMs: d[1] };
}

/** Accumulates windows of one state. */
class Acc {
  seconds = 0;
  cpuS = 0;
  draws = 0;
  drawMs = 0;
  exited = 0;
  byKind: Record<string, number> = {};
  byThread: Record<string, number> = {};
  add(a: Awaited<ReturnType<typeof sample>>, b: Awaited<ReturnType<typeof sample>>): number {
    const d = treeDelta(a.tree, b.tree);
    const s = (b.at - a.at) / 1000;
    this.seconds += s;
    this.cpuS += d.cpuS;
    this.draws += b.draws - a.draws;
    this.drawMs += b.drawMs - a.drawMs;
    this.exited += d.exited;
    for (const [k, v] of Object.entries(d.byKind)) this.byKind[k] = (this.byKind[k] ?? 0) + v;
    for (const [k, v] of Object.entries(d.byThread)) this.byThread[k] = (this.byThread[k] ?? 0) + v;
    return d.cpuS / s * 100;
  }
  window(mode: CpuWindow["mode"], rep: number, underrun: number | null): CpuWindow {
    const share = (x: number) => r2(x / this.seconds * 100);
    const top = Object.entries(this.byThread).sort((x, y) => y[1] - x[1]).slice(0, 8);
    return {
      mode,
      rep,
      seconds: r1(this.seconds),
      cpu_pct: share(this.cpuS),
      by_kind_pct: Object.fromEntries(Object.entries(this.byKind).map(([k, v]) => [k, share(v)])),
      top_threads_pct: Object.fromEntries(top.map(([k, v]) => [k, share(v)])),
      exited_processes: this.exited,
      draws_per_s: r1(this.draws / this.seconds),
      draw_calls_pct: r2(this.drawMs / 1000 / this.seconds * 100),
      audio_underrun_ms: underrun,
      load_average: loadavg(),
    };
  }
}

/** Slices of the player page, drawing on and off in turn (two periods of the talk pattern each). */
const SLICE_MS = 4800;

/**
 * One page: `idle` — one window of `seconds`; `player` — `seconds` with the drawing on and as many with it
 * off, in alternating slices of {@link SLICE_MS} (the same session, page and moment for both states).
 */
async function cpuPage(
  mode: "idle" | "player",
  rep: number,
  seconds: number,
  svc: Service,
  engine: BenchEngine,
  browser: Browser,
  box: unknown,
): Promise<{ windows: CpuWindow[]; pairs: number[] }> {
  const s = mode === "idle" ? null : await createSession(svc, engine);
  const { context, page } = await newPage(browser, svc.url);
  let talking: Promise<void> | null = null;
  try {
    await setup(page, mode, s, box);
    const slices = mode === "idle" ? 1 : 2 * Math.max(1, Math.round(seconds * 1000 / SLICE_MS));
    if (s) {
      talking = engine.talk(s.id, {
        burstMs: 1200,
        gapMs: 1200,
        bursts: Math.ceil((slices * SLICE_MS / 1000 + 8) / 2.4),
        sound: "speech",
      });
    }
    await sleep(3000); // past the start-up (art loaded, anchor settled, the first burst under way)
    if (mode === "idle") {
      const acc = new Acc();
      const a = await sample(page);
      await sleep(seconds * 1000);
      acc.add(a, await sample(page));
      return { windows: [acc.window("idle", rep, null)], pairs: [] };
    }
    const on = new Acc(), off = new Acc();
    const pairs: number[] = [];
    let pending: number | null = null;
    for (let i = 0; i < slices; i++) {
      // on, off, on, off … on even pages; off, on … on odd ones
      const drawing = (i + rep) % 2 === 0;
      await page.evaluate(`globalThis.drawOn = ${drawing}`);
      await sleep(200); // the switch reaches the drawing
      const a = await sample(page);
      await sleep(SLICE_MS - 200);
      const pctNow = (drawing ? on : off).add(a, await sample(page));
      if (pending === null) pending = drawing ? pctNow : -pctNow;
      else {
        pairs.push(r2(pending + (drawing ? pctNow : -pctNow)));
        pending = null;
      }
    }
    const stats = await page.evaluate(`globalThis.player.stats()`) as Record<string, number>;
    const under = r1(stats.audioUnderrunMs);
    return { windows: [on.window("player", rep, under), off.window("player_no_draw", rep, under)], pairs };
  } finally {
    await context.close();
    if (s) await endSession(svc, s.id);
    await talking?.catch(() => {});
  }
}

function summarise(windows: CpuWindow[], pairs: number[]): CpuSummary {
  const mean = (mode: string, pick: (w: CpuWindow) => number) => {
    const ws = windows.filter((w) => w.mode === mode);
    return ws.reduce((x, w) => x + pick(w), 0) / Math.max(1, ws.length);
  };
  const idle = mean("idle", (w) => w.cpu_pct);
  const noDraw = mean("player_no_draw", (w) => w.cpu_pct);
  const full = mean("player", (w) => w.cpu_pct);
  const draws = mean("player", (w) => w.draws_per_s);
  const drawing = full - noDraw;
  return {
    drawing_pairs_pct: pairs,
    idle_pct: r2(idle),
    player_no_draw_pct: r2(noDraw),
    player_pct: r2(full),
    player_cost_pct: r2(full - idle),
    drawing_pct: r2(drawing),
    drawing_per_25fps_pct: draws > 0 ? r2(drawing * 25 / draws) : NaN,
    draws_per_s: r1(draws),
    draw_calls_pct: r2(mean("player", (w) => w.draw_calls_pct)),
  };
}

// ---------------------------------------------------------------- 2. mouth vs sound

/** What the sync run measured. */
export interface SyncResult {
  bursts: number;
  /**
   * The first presented frame with the mouth open (its box's mean darkness past halfway between closed and
   * open) − the burst's onset heard (ms).
   */
  mouth_vs_sound_ms: Figures & { abs_p95: number | null; mean: number | null };
  /** The same with "open" counted as `bench:player` does (dark cavity pixels past halfway). */
  mouth_vs_sound_cavity_pixels_ms: Figures & { abs_p95: number | null };
  engine_chunk_to_sound_ms: Figures;
  /**
   * The service's stamps: each burst's first non-silent viseme `t_ms` − where its sound starts on the media
   * timeline (found in the audio units the page received, decoded here).
   */
  first_viseme_vs_sound_start_ms: Figures;
  /** The canvas drawn (rAF time) → that frame presented (Chromium's PipelineReporter), ms. */
  draw_to_presented_ms: Figures;
  /** Frames read whose presentation was not found in the trace (counted as the next presented frame). */
  frames_unmatched: number;
  player_stats: Record<string, unknown> | null;
  load_average: string;
}

interface TraceEvent {
  name: string;
  ph: string;
  ts: number;
  pid: number;
  id2?: { local?: string };
  id?: string;
  args?: { frame_reporter?: { state?: string }; chrome_frame_reporter?: { state?: string } };
}

/** Presented compositor frames of the renderer `pid`: [BeginFrame time, presentation time] (trace ms). */
function presentedFrames(events: TraceEvent[], pid: number): [number, number][] {
  const open = new Map<string, TraceEvent>();
  const out: [number, number][] = [];
  for (const e of events) {
    if (e.name !== "PipelineReporter" || e.pid !== pid) continue;
    const key = e.id2?.local ?? e.id ?? "";
    if (e.ph === "b") open.set(key, e);
    else if (e.ph === "e") {
      const b = open.get(key);
      open.delete(key);
      const r = b?.args?.frame_reporter ?? b?.args?.chrome_frame_reporter;
      // The frames that carry the main thread's update (a compositor-only fork presents "PARTIAL").
      if (b && r?.state === "STATE_PRESENTED_ALL") out.push([b.ts / 1000, e.ts / 1000]);
    }
  }
  return out.sort((x, y) => x[0] - y[0]);
}

/** Where sounds start after a silence on the media timeline (ms), from the Opus units [pts ms, packet]. */
async function timelineOnsets(units: [number, number[]][]): Promise<number[]> {
  const dec = new OpusDecoder({ channels: 1, sampleRate: 48000, preSkip: 0 });
  await dec.ready;
  const out: number[] = [];
  let quiet = Infinity;
  try {
    for (const [pts, packet] of units) {
      const pcm = dec.decodeFrame(Uint8Array.from(packet)).channelData[0];
      for (let i = 0; i < pcm.length; i++) {
        const loud = Math.abs(pcm[i]) > 0.01;
        if (loud && quiet >= 48000 * 0.15) out.push(pts + i / 48);
        quiet = loud ? 0 : quiet + 1;
      }
    }
  } finally {
    dec.free();
  }
  return out;
}

async function syncRun(
  svc: Service,
  engine: BenchEngine,
  browser: Browser,
  bursts: number,
  box: unknown,
): Promise<SyncResult> {
  const s = await createSession(svc, engine);
  const { context, page } = await newPage(browser, svc.url);
  try {
    await setup(page, "sync", s, box);
    await sleep(3000);
    await browser.startTracing(page, { categories: ["benchmark", "blink.user_timing"] });
    const markAt = await page.evaluate(
      `performance.mark("video-free-bench-align").startTime`,
    ) as number;
    const timeOrigin = await page.evaluate(`performance.timeOrigin`) as number;
    const from = Date.now();
    await engine.talk(s.id, { burstMs: 400, gapMs: 600, bursts, sound: "vowel" });
    await sleep(1500);
    const trace = JSON.parse(new TextDecoder().decode(await browser.stopTracing()));
    const events: TraceEvent[] = trace.traceEvents ?? trace;
    const onsets = await page.evaluate(`globalThis.onsets`) as number[];
    const reads = await page.evaluate(`globalThis.reads`) as [number, number, number][];
    const stats = await page.evaluate(`globalThis.player.stats()`) as Record<string, unknown>;
    const visemes = await page.evaluate(`globalThis.visemes`) as [number, string][];
    const units = await page.evaluate(`globalThis.units`) as [number, number[]][];
    const mark = events.find((e) => e.name === "video-free-bench-align");
    if (!mark) throw new Error("the trace holds no alignment mark (blink.user_timing)");
    // trace ms = page ms + offset
    const offset = mark.ts / 1000 - markAt;
    const presented = presentedFrames(events, mark.pid);
    const delays: number[] = [];
    let unmatched = 0;
    /** [epoch ms presented, dark cavity pixels, mean darkness] of each frame drawn. */
    const frames: [number, number, number][] = [];
    let j = 0;
    for (const [t, dark, shade] of reads) {
      const tt = t + offset;
      if (tt < (presented[0]?.[0] ?? Infinity) - 1) continue; // before the trace
      while (j < presented.length && presented[j][0] < tt - 0.5) j++;
      if (j >= presented.length) break;
      if (Math.abs(presented[j][0] - tt) > 0.5) unmatched++;
      const shown = presented[j][1] - offset;
      delays.push(shown - t);
      frames.push([timeOrigin + shown, dark, shade]);
    }
    // Per burst: its onset heard, and the first presented frame with the mouth open (and the next too).
    const starts = engine.sessions.get(s.id)!.sent.filter((c) => c.index === 0 && c.sentAt >= from)
      .map((c) => c.sentAt);
    // "Open": past halfway between the most closed and the most open mouth seen, by a measure (1: dark
    // cavity pixels, as bench:player counts them in video frames; 2: the box's mean darkness, which grows
    // linearly through a cross-fade where the pixel count jumps near its end).
    const halfway = (m: 1 | 2) => {
      const v = frames.map((f) => f[m]);
      return v.length ? (Math.min(...v) + Math.max(...v)) / 2 : Infinity;
    };
    const open = { 1: halfway(1), 2: halfway(2) };
    const av: number[] = [];
    const avCount: number[] = [];
    const audio: number[] = [];
    for (const st of starts) {
      const onset = onsets.find((o) => o >= st && o < st + 900);
      if (onset === undefined) continue;
      audio.push(onset - st);
      // The first presented frame with the mouth open after the burst was sent, still open at the next
      // refresh (as bench:player reads every refresh): the next frame drawn open too, or drawn after it (a
      // canvas shows a frame until the next is drawn; the drawer draws a cross-fade's steps, not each refresh).
      for (const [m, out] of [[2, av], [1, avCount]] as const) {
        const i = frames.findIndex((f, k) =>
          f[0] >= st && f[0] < st + 900 && f[m] > open[m] &&
          (frames[k + 1] === undefined || frames[k + 1][m] > open[m] || frames[k + 1][0] - f[0] > REFRESH_MS)
        );
        if (i >= 0) out.push(frames[i][0] - onset);
      }
    }
    // The service's stamps against the sound they go with: each burst's first non-silent viseme − where its
    // sound starts on the timeline (the units the page received, decoded; −40 dBFS after 150 ms of quiet).
    const lag: number[] = [];
    for (const at of await timelineOnsets(units)) {
      const v = visemes.find(([t, name]) => t >= at - 60 && t < at + 300 && name !== "sil");
      if (v) lag.push(v[0] - at);
    }
    const abs = pct(av.map(Math.abs), 95);
    const absCount = pct(avCount.map(Math.abs), 95);
    const dump = Deno.env.get("BENCH_VFB_DUMP");
    if (dump) {
      await Deno.writeTextFile(
        dump,
        JSON.stringify({ starts, onsets, frames, open, offset, visemes, units, reads, presented }),
      );
    }
    return {
      bursts: starts.length,
      mouth_vs_sound_ms: {
        ...figures(av),
        abs_p95: abs === null ? null : r1(abs),
        mean: av.length ? r1(av.reduce((a, b) => a + b, 0) / av.length) : null,
      },
      mouth_vs_sound_cavity_pixels_ms: {
        ...figures(avCount),
        abs_p95: absCount === null ? null : r1(absCount),
      },
      engine_chunk_to_sound_ms: figures(audio),
      first_viseme_vs_sound_start_ms: figures(lag),
      draw_to_presented_ms: figures(delays),
      frames_unmatched: unmatched,
      player_stats: stats,
      load_average: loadavg(),
    };
  } finally {
    await context.close();
    await endSession(svc, s.id);
  }
}

// ---------------------------------------------------------------- the run

/** Everything the bench measured. */
export interface VideoFreeBrowserResult {
  canvas_px: number;
  cpu: { seconds: number; reps: number; windows: CpuWindow[]; summary: CpuSummary } | null;
  sync: SyncResult | null;
  /**
   * `--realtime-engine`: the same mouth-vs-sound run on the strictly real-time engine
   * (`testing/realtime_engine.ts`: each chunk sent once spoken, nothing announced early), right after the
   * bench engine's.
   */
  sync_realtime_engine?: SyncResult;
  load_average_before: string;
  load_average_after: string;
}

/** Runs both measures on a service of its own pinned to `core` (Chromium runs where this process may). */
export async function benchVideoFreeBrowser(options: {
  caFile: string;
  dir: string;
  core: number;
  engine: BenchEngine;
  /** Also measure mouth vs sound on this engine (the strictly real-time one), after `engine`'s run. */
  realtimeEngine?: BenchEngine;
  quick: boolean;
  seconds?: number;
  reps?: number;
  bursts?: number;
  skip?: ("cpu" | "sync")[];
}): Promise<VideoFreeBrowserResult> {
  const seconds = options.seconds ?? (options.quick ? 10 : 20);
  const reps = options.reps ?? (options.quick ? 1 : 2);
  const bursts = options.bursts ?? (options.quick ? 12 : 30);
  const loadBefore = loadavg();
  const svc = await startServiceProcess(options.caFile, options.dir, options.core);
  let browser: Browser | null = null;
  const result: VideoFreeBrowserResult = {
    canvas_px: CANVAS_SIZE,
    cpu: null,
    sync: null,
    load_average_before: loadBefore,
    load_average_after: "",
  };
  try {
    browser = await launchChromium({ media: true });
    const box = await mouthBox(CANVAS_SIZE);
    if (!options.skip?.includes("cpu")) {
      const windows: CpuWindow[] = [];
      const pairs: number[] = [];
      for (let rep = 0; rep < reps; rep++) {
        for (const mode of ["idle", "player"] as const) {
          const p = await cpuPage(mode, rep, seconds, svc, options.engine, browser, box);
          for (const w of p.windows) console.log(`bench video-free browser: cpu ${JSON.stringify(w)}`);
          windows.push(...p.windows);
          pairs.push(...p.pairs);
          await sleep(1000);
        }
      }
      result.cpu = { seconds, reps, windows, summary: summarise(windows, pairs) };
    }
    if (!options.skip?.includes("sync")) {
      result.sync = await syncRun(svc, options.engine, browser, bursts, box);
      console.log(`bench video-free browser: sync ${JSON.stringify(result.sync)}`);
      if (options.realtimeEngine) {
        result.sync_realtime_engine = await syncRun(svc, options.realtimeEngine, browser, bursts, box);
        console.log(
          `bench video-free browser: sync, real-time engine ${JSON.stringify(result.sync_realtime_engine)}`,
        );
      }
    }
  } finally {
    await browser?.close();
    await svc.child.stdin.close().catch(() => {});
    const exited = await Promise.race([svc.child.status.then(() => true), sleep(15000).then(() => false)]);
    if (!exited) svc.child.kill("SIGKILL");
  }
  result.load_average_after = loadavg();
  return result;
}

/** The results as Markdown tables. */
export function videoFreeBrowserTable(r: VideoFreeBrowserResult): string {
  const lines: string[] = [];
  if (r.cpu) {
    const s = r.cpu.summary;
    lines.push(
      `Video-free player in Chromium, ${r.canvas_px}×${r.canvas_px} canvas, Chromium's whole process tree ` +
        `(${r.cpu.reps} pages × ${r.cpu.seconds} s per state):`,
      "",
      "| page | CPU, % of a core | draws/s | drawing calls (main thread) |",
      "| --- | --- | --- | --- |",
      `| idle (no player) | ${s.idle_pct} | – | – |`,
      `| player, drawing into nothing | ${s.player_no_draw_pct} | – | – |`,
      `| player | ${s.player_pct} | ${s.draws_per_s} | ${s.draw_calls_pct} % |`,
      "",
      "| measure | figure | target |",
      "| --- | --- | --- |",
      `| the player's cost (player − idle) | ${s.player_cost_pct} % of a core | |`,
      `| drawing the avatar (player − drawing into nothing), as drawn | ${s.drawing_pct} % at ${s.draws_per_s} draws/s | ≤ 3 %, ≤ 25 draws/s |`,
      `| … per pair of ${SLICE_MS / 1000} s slices, min / median / max | ${pct(s.drawing_pairs_pct, 0)} / ${
        pct(s.drawing_pairs_pct, 50)
      } / ${pct(s.drawing_pairs_pct, 100)} % (${s.drawing_pairs_pct.length}) | |`,
      `| drawing the avatar, per 25 fps (a face changing in every frame) | ${s.drawing_per_25fps_pct} % of a core | |`,
    );
  }
  const syncRows = (sync: SyncResult, engine: string) => {
    const m = sync.mouth_vs_sound_ms;
    const c = sync.mouth_vs_sound_cavity_pixels_ms;
    const f = (x: Figures) => `${x.p50} / ${x.p95} (${x.samples})`;
    lines.push(
      "",
      `| measure (from outside the player), ${engine} | p50 / p95 | target |`,
      "| --- | --- | --- |",
      `| mouth vs sound, p50 ms; \\|offset\\| p95; mean | ${m.p50}; ${m.abs_p95}; ${m.mean} (${m.samples} of ${sync.bursts} bursts) | \\|p95\\| ≤ 20, \\|mean\\| ≤ 10 |`,
      `| … "open" by cavity pixels (as bench:player) | ${c.p50}; ${c.abs_p95} (${c.samples}) | |`,
      `| engine audio chunk → sound heard, ms | ${f(sync.engine_chunk_to_sound_ms)} | p50 ≤ 100 |`,
      `| canvas drawn → presented (Chromium's frame reporter), ms | ${f(sync.draw_to_presented_ms)} | |`,
      `| service: a burst's first viseme stamp − its sound's start on the timeline, ms | ${
        f(sync.first_viseme_vs_sound_start_ms)
      } | |`,
    );
  };
  if (r.sync) syncRows(r.sync, "bench engine (announces 60 ms ahead)");
  if (r.sync_realtime_engine) syncRows(r.sync_realtime_engine, "strictly real-time engine");
  lines.push("", `load average before ${r.load_average_before}, after ${r.load_average_after}`);
  return lines.join("\n");
}

if (import.meta.main) {
  const args = parseArgs({
    args: Deno.args,
    options: {
      quick: { type: "boolean", default: false },
      seconds: { type: "string" },
      reps: { type: "string" },
      bursts: { type: "string" },
      core: { type: "string" },
      skip: { type: "string", default: "" },
      "realtime-engine": { type: "boolean", default: false },
    },
  }).values;
  const nproc = navigator.hardwareConcurrency;
  const core = Number(args.core ?? nproc - 1);
  if (nproc > 1) {
    const others = [...Array(nproc).keys()].filter((c) => c !== core).join(",");
    await new Deno.Command("taskset", { args: ["-a", "-p", "-c", others, String(Deno.pid)], stdout: "null" })
      .output().catch(() => {});
  }
  const command = `deno run -A bench/video_free_browser.ts ${Deno.args.join(" ")}`.trim();
  console.log(`bench video-free browser: ${command} (load average ${loadavg()})`);
  const dir = await Deno.makeTempDir({ prefix: "svc-bench-vfb-" });
  const tls = await generateEngineTls();
  const caFile = `${dir}/engine-ca.pem`;
  await Deno.writeTextFile(caFile, tls.caPem);
  const engine = startBenchEngine(tls);
  const realtime = args["realtime-engine"] ? startRealtimeBenchEngine(tls) : undefined;
  let result: VideoFreeBrowserResult;
  try {
    result = await benchVideoFreeBrowser({
      caFile,
      dir,
      core,
      engine,
      realtimeEngine: realtime,
      quick: args.quick!,
      seconds: args.seconds ? Number(args.seconds) : undefined,
      reps: args.reps ? Number(args.reps) : undefined,
      bursts: args.bursts ? Number(args.bursts) : undefined,
      skip: args.skip!.split(",").filter(Boolean) as ("cpu" | "sync")[],
    });
  } finally {
    await engine.close();
    await realtime?.close();
    await Deno.remove(dir, { recursive: true });
  }
  console.log(`\n${videoFreeBrowserTable(result)}\n`);
  const outDir = new URL("./results/", import.meta.url);
  await Deno.mkdir(outDir, { recursive: true });
  const file = new URL(`video-free-browser-${new Date().toISOString().replace(/[:.]/g, "-")}.json`, outDir);
  await Deno.writeTextFile(file, JSON.stringify({ command, ...result }, null, 2) + "\n");
  console.log(JSON.stringify({ command, ...result }));
  console.log(`results: ${file.pathname}`);
}
