/**
 * `deno task bench:player`: the players measured from outside, side by side in one run — the WebCodecs
 * player (`websocket_fmp4`, the default), the Media Source Extensions fallback (`websocket_fmp4`,
 * `playback: "mse"`) and `webrtc_sfu` (through a real Janus) — in Debian's headless Chromium on loopback.
 *
 * The page sees only what the player puts out: it **taps the player's audio output** (WebCodecs: the
 * player's `audioOutput` is a node of the page's own graph; MSE: the element's sound routed through the
 * page's context; WebRTC: the received stream) and detects each burst's onset (−40 dBFS after 150 ms of
 * quiet) in an AudioWorklet, timed when it is heard (`getOutputTimestamp()`); and it **reads each presented
 * frame** (`requestVideoFrameCallback`, at its expected display time): the wall-clock stamp the service drew
 * into its top rows when it made it (`bench/service.ts --stamp`), and how open the mouth is (dark cavity
 * pixels in the mouth's box). A V0 engine (`bench/engine.ts`) speaks bursts of an open vowel ("ah": the lip
 * sync opens the mouth for it) at known times.
 *
 * Figures per path:
 * 1. engine audio chunk → that sound heard (a burst's first chunk sent → its onset heard);
 * 2. frame made → presented (stamp → expected display time);
 * 3. mouth vs sound (the first open-mouthed frame of a burst shown − the burst's onset heard); for MSE and
 *    WebRTC also corrected by the page's tap's measured output lag against the element's (`tap_corrected`:
 *    the page hears their sound through its own context, a path a user's sound does not take; see
 *    {@link TapCorrected});
 * 4. client connect → first frame (createPlayer → first frame's display time; fresh contexts, random GOP
 *    phase; for webrtc_sfu one of each session's connects is the first viewer, right after the create), and
 *    its stages' medians (the socket, the decoder, the element: `connect_stages_p50_ms`). The page awaits
 *    its first frame in a promise: `page.waitForFunction` loads Playwright's injected script into the page,
 *    which held its main thread 20-30 ms during the connect measured (until 5 Dec, every figure of this line
 *    carried that); and viewers joining the avatar while it talks (`--talking-joins N`, default 6): their
 *    first frame, their first sound heard, the speech skipped and played as silence as the player started
 *    ({@link TalkingJoins});
 * 5. a 2 s network stall (`websocket_fmp4` paths: the page connects through a TCP proxy that holds the
 *    service's bytes for 2 s): time from the end of the stall to the first frame back within 150 ms of the
 *    latency before it, whether any frame is shown later than that afterwards, and what `stats()` says.
 *
 * The bursts' gaps differ by 0–39 ms (a fixed sequence), so their starts fall at every phase of the 40 ms
 * frames and the page's refreshes: bursts exactly 1 s apart (25 frames) all start at one phase, and a run
 * measured that phase only (`--fixed-phase` brings that back, for comparison). `--detail` adds each burst's
 * onset and the frames shown around it to the results.
 *
 * `--drift-minutes N` adds a drift run on the WebCodecs path: N minutes of bursts (one every 5 s); the
 * mouth-vs-sound offset and the engine → sound latency of the first minute against the last. The issue's
 * run: `--drift-minutes 10`.
 *
 * The service (and its ffmpeg encoders) and Janus run on one core (`taskset`, `--core`, default the last),
 * Chromium, the engine and this script on the others. Load averages are recorded with the figures: the
 * machine may be shared.
 *
 * `--browser firefox`: the same in Debian's Firefox ESR (Puppeteer over WebDriver BiDi), its sound played to
 * a PulseAudio null sink (`pulseaudio`, started by the bench: a real-time audio clock, where Firefox's mock
 * device runs ~3 % slow), on the `websocket_fmp4` paths (WebCodecs, MSE; the WebCodecs player shows its
 * frames through a canvas stream there), the canvas player and `webrtc_sfu` — which Firefox receives without
 * its video: H.264 over WebRTC needs Cisco's OpenH264 plugin, which Firefox downloads when first run (not
 * here), so the player draws the avatar itself and shows the canvas's stream in the `<video>` (its mouth read
 * from the element as the canvas path reads the canvas; no frame latency). A step in a Firefox page that has
 * not ended in 60 s is Firefox's sound deadlocked ({@link BrowserHung}): the bench relaunches Firefox and measures that part again
 * (at most 4 times a run; `browser_relaunches` in the results).
 *
 * `--paths canvas` (Firefox's default, with webcodecs,mse): the canvas (video-free) player, its mouth read from
 * the canvas after each of its draws and counted as shown then (no presentation time outside Chromium's trace:
 * `video_free_browser.ts` times Chromium's from it, 2.7 ms after the draw); its frames carry no stamp, so no
 * frame latency, and its reported offset shares the draw-time assumption (no check of the report there).
 *
 * `--device`: the browser plays to a PulseAudio null sink and the bench records it (`device_tap.ts`):
 * each burst's sound is also timed when the sound server took it from the browser, outside the browser,
 * whatever path it took there (results' `device`; see {@link DeviceFigures}).
 *
 * In Firefox no page asks a context for its output latency (its first read can deadlock Firefox:
 * {@link BrowserHung}): the player assumes it (its default there), and the page's tap takes the latency the
 * sound server reports for Firefox's stream, measured at each launch ({@link firefoxOutputLatency}; results'
 * `firefox_output_latency_ms`). `--output-latency read|MS` gives the players `outputLatencyMs` (`read`: the
 * player asks, as before 7 Dec — and may deadlock Firefox, which the bench then relaunches).
 *
 * Options: `--browser chromium|firefox`, `--device`, `--output-latency read|MS`, `--quick` (fewer samples),
 * `--paths webcodecs,mse,webrtc_sfu,canvas`,
 * `--connects N`, `--talking-joins N`, `--bursts N`, `--core N`, `--drift-minutes N`, `--detail`, `--fixed-phase`,
 * `--realtime-engine` (each path's steady run is made twice, alternating in one run: with the bench engine,
 * which announces each turn 60 ms ahead and sends each chunk at the start of its audio, and with the strictly
 * real-time engine of `testing/realtime_engine.ts`, which sends each chunk once spoken and announces nothing
 * early; the latter's figures are under `realtime_engine`). Writes
 * `bench/results/player-<time>.json`.
 *
 * @module
 */
import { parseArgs } from "node:util";
import type { Browser as FirefoxBrowser } from "puppeteer-core";
import { generateEngineTls } from "../engine/mod.ts";
import { loadArtBank } from "../src/media/art_bank.ts";
import { CATALOG } from "../src/media/catalog.ts";
import { launchChromium } from "../testing/browser.ts";
import { closeFirefox, launchFirefox, type SoundServer, startSoundServer } from "../testing/firefox.ts";
import { type JanusProcess, startJanus } from "../testing/janus.ts";
import { type BenchEngine, startBenchEngine, startRealtimeBenchEngine } from "./engine.ts";
import { type DeviceTap, startDeviceTap } from "./device_tap.ts";
import { ONSET_TAP } from "./onset_tap.ts";

type PathName = "webcodecs" | "mse" | "webrtc_sfu" | "canvas";
const ALL_PATHS: PathName[] = ["webcodecs", "mse", "webrtc_sfu", "canvas"];
/** Chromium's paths by default (its canvas player has its own, trace-timed bench: video_free_browser.ts). */
const CHROMIUM_DEFAULT_PATHS: PathName[] = ["webcodecs", "mse", "webrtc_sfu"];

/** p50 / p95 / p99 of a measure. */
export interface Figures {
  samples: number;
  p50: number | null;
  p95: number | null;
  p99: number | null;
  max: number | null;
}

/** What one path measured. */
export interface PathResults {
  engine_chunk_to_sound_ms: Figures & { bursts: number };
  frame_made_to_presented_ms: Figures;
  mouth_vs_sound_ms: Figures & { abs_p95: number | null; mean: number | null };
  reported_vs_shown_ms: ReportedVsShown;
  connect_to_first_frame_ms: Figures;
  /**
   * The connects' stages (createPlayer → each the first time it happened, p50 ms, in order), as the page saw
   * them: the socket (created, open, first message), the decoder (created, configured, first keyframe in,
   * first decoded), the element (its stream set, first frame written). Those of the path's player only.
   */
  connect_stages_p50_ms: Record<string, number | null>;
  /**
   * `--realtime-engine`: the same steady run on the strictly real-time engine (`testing/realtime_engine.ts`:
   * each chunk sent once spoken, nothing announced early), right after the early engine's.
   */
  realtime_engine?: SteadyResults;
  /** webrtc_sfu: connects right after the create (the first viewer, from Janus's cached keyframe). */
  first_viewer_first_frame_ms?: Figures;
  /** Viewers joining an avatar that is talking (see {@link TalkingJoins}). */
  talking_joins?: TalkingJoins;
  stall?: StallResult | null;
  /** The player's own stats at the end of the steady run (what it reports to the service). */
  player_stats: Record<string, unknown> | null;
  /** The service's metrics of the steady run's session (`GET /v1/sessions/{id}/metrics`). */
  service_metrics: Record<string, unknown> | null;
  load_average: string;
  /** `--detail`: each burst of the steady run, its onset and the frames around it. */
  bursts_detail?: BurstDetail[];
  /** MSE and WebRTC: the steady run's figures corrected by the page's tap's output lag. */
  tap_corrected?: TapCorrected;
  /** WebRTC: the player's receivers over the steady run. */
  receiver?: ReceiverFigures;
  /** WebCodecs and canvas: the sound lost while the player started. */
  start_up_sound_lost_ms?: StartUpLoss;
  /** `--device`: the steady run's sound as the sound device took it (see {@link DeviceFigures}). */
  device?: DeviceFigures;
}

/**
 * `--device`: the browser plays to a PulseAudio null sink, and the bench records the sink (`device_tap.ts`):
 * each burst's onset timed when the sound server took it from the browser — outside the browser, whichever
 * path the sound took in it (the page's tap hears WebRTC's and MSE's sound through a path of its own, and
 * times every onset by the browser's own account of its output). A sound card's buffer after the server is
 * not counted.
 */
export interface DeviceFigures {
  engine_chunk_to_sound_ms: Figures;
  /** The first open-mouthed frame shown (the page's expected display time) − the burst's onset at the device. */
  mouth_vs_sound_ms: Figures & { abs_p95: number | null; mean: number | null };
  /** Per burst, the page tap's onset − the device's (p50 etc., ms): how much later the page says it is heard. */
  page_minus_device_ms: Figures;
}

/**
 * What the player reported of mouth vs sound (the service's `av_offset_ms` p50 of the steady run's session,
 * from the players' own samples) against what the page saw from outside (the p50 of `mouth_vs_sound_ms`).
 */
export interface ReportedVsShown {
  reported_p50: number | null;
  reported_count: number;
  shown_p50: number | null;
  /** reported − shown (ms); the bound: within 10. */
  difference: number | null;
}

/** The figures of one steady run. */
export interface SteadyResults {
  engine_chunk_to_sound_ms: Figures & { bursts: number };
  frame_made_to_presented_ms: Figures;
  mouth_vs_sound_ms: Figures & { abs_p95: number | null; mean: number | null };
  reported_vs_shown_ms: ReportedVsShown;
  player_stats: Record<string, unknown> | null;
  service_metrics: Record<string, unknown> | null;
  load_average: string;
  bursts_detail?: BurstDetail[];
  /** MSE and WebRTC: the figures above corrected by the page's tap's output lag. */
  tap_corrected?: TapCorrected;
  /** WebRTC: the player's receivers over the steady run. */
  receiver?: ReceiverFigures;
  /** WebCodecs and canvas: the sound lost while the player started. */
  start_up_sound_lost_ms?: StartUpLoss;
  /** `--device`: the sound as the sound device took it. */
  device?: DeviceFigures;
}

/**
 * The page hears the MSE and WebRTC paths' sound through its own `AudioContext` (the element's sound,
 * `createMediaElementSource`; the received stream, `createMediaStreamSource`), whose output lies
 * `tap_output_lag_ms` behind what it pulls (measured in the page every 250 ms during the run: `currentTime −
 * getOutputTimestamp().contextTime`, the p50). A user hears the element's own output instead:
 * - MSE: the element's clock, which places its frames, does not count the tap's path, while played by the
 *   element itself Chromium counts its output's delay in that clock: `element_output_lag_ms` 0;
 * - WebRTC: the element plays the stream after its jitter buffer with the delay Chromium reports in its
 *   `media-playout` statistics (`totalPlayoutDelay / totalSamplesCount`, p50 of 250 ms windows), read by the
 *   page from the player's PeerConnection: `element_output_lag_ms`.
 * These are the raw figures with each onset moved earlier by the difference (mouth vs sound + tap lag −
 * element lag). An estimate, shown beside the raw figures, not instead of them: the element's own output is
 * not tapped, and the tap's buffering before its context (WebRTC) is not counted.
 */
export interface TapCorrected {
  tap_output_lag_ms: number | null;
  /** MSE: 0 (its clock counts its output); WebRTC: Chromium's media-playout delay, p50. */
  element_output_lag_ms: number | null;
  mouth_vs_sound_ms: Figures & { abs_p95: number | null; mean: number | null };
  reported_vs_shown_ms: ReportedVsShown;
}

/**
 * WebRTC: what the player's receivers did over the steady run, from its PeerConnection's `inbound-rtp`
 * statistics read by the page every 250 ms. The jitter buffer's figures are the p50 over the windows of the
 * mean time a sample (audio) or frame (video) waited in it and of its target; the audio's counters are the
 * differences from the run's first window to its last, in ms of audio at 48 kHz.
 */
export interface ReceiverFigures {
  audio_jitter_buffer_ms: number | null;
  audio_target_ms: number | null;
  video_jitter_buffer_ms: number | null;
  video_target_ms: number | null;
  /** Audio concealed (played without its packet: loss or lateness) and concealment events. */
  audio_concealed_ms: number | null;
  audio_concealment_events: number | null;
  /** Audio time-stretched: samples inserted to slow the playout down, removed to speed it up. */
  audio_inserted_ms: number | null;
  audio_removed_ms: number | null;
}

/** One 250 ms window of a receiver's statistics, as the page records it. */
export interface ReceiverWindow {
  /** Epoch ms. */
  at: number;
  kind: "audio" | "video";
  jitterBufferMs: number | null;
  targetMs: number | null;
  counters: Record<"concealed" | "events" | "inserted" | "removed", number | null> | null;
}

/** {@link ReceiverFigures} from the windows of the steady run. */
export function receiverFigures(windows: ReceiverWindow[]): ReceiverFigures {
  const of = (kind: string, key: "jitterBufferMs" | "targetMs") => {
    const xs = windows.filter((w) => w.kind === kind).map((w) => w[key]).filter((x): x is number =>
      x !== null
    );
    const p = figures(xs).p50;
    return p === null ? null : r1(p);
  };
  const audio = windows.filter((w) => w.kind === "audio" && w.counters);
  const diff = (key: "concealed" | "events" | "inserted" | "removed", perMs: number) => {
    const a = audio[0]?.counters?.[key], b = audio.at(-1)?.counters?.[key];
    return typeof a === "number" && typeof b === "number" ? r1((b - a) / perMs) : null;
  };
  return {
    audio_jitter_buffer_ms: of("audio", "jitterBufferMs"),
    audio_target_ms: of("audio", "targetMs"),
    video_jitter_buffer_ms: of("video", "jitterBufferMs"),
    video_target_ms: of("video", "targetMs"),
    audio_concealed_ms: diff("concealed", 48),
    audio_concealment_events: diff("events", 1),
    audio_inserted_ms: diff("inserted", 48),
    audio_removed_ms: diff("removed", 48),
  };
}

/**
 * The sound a WebCodecs or canvas player played as silence or skipped while it started on a quiet avatar (its
 * `stats()` 3 s after its first picture, before the steady run's first burst: ms): played as silence because
 * it was not decoded in time (`audioUnderrunMs`) and skipped as its anchor settled (`skippedMs`). The session
 * is quiet then, so nobody hears it; since 7 Dec most of it is the start-up's raise of the anchor lowered
 * again in the quiet (the player's `settlingRaise`). What a viewer joining speech misses is
 * {@link TalkingJoins}.
 */
export interface StartUpLoss {
  underrun: number | null;
  skipped: number | null;
  total: number | null;
}

/** The start-up loss from a player's `stats()` (null fields where it has none). */
export function startUpLoss(stats: Record<string, unknown> | null): StartUpLoss {
  const n = (v: unknown) => (typeof v === "number" && Number.isFinite(v) ? v : null);
  const underrun = n(stats?.audioUnderrunMs), skipped = n(stats?.skippedMs);
  return { underrun, skipped, total: underrun === null || skipped === null ? null : underrun + skipped };
}

/**
 * Viewers joining an avatar in the middle of its speech (running speech, 3 s turns 200 ms apart, from the
 * strictly real-time engine with `--realtime-engine`, else the bench engine; each viewer connects 0.4–1.4 s
 * into a turn, in a fresh context): createPlayer → its first frame shown, and → its first
 * sound heard (the page's tap: the first sample above −40 dBFS), and for the WebCodecs and canvas players what
 * of the speech it did not play as it started (`stats()` 2.5 s after the first frame): the speech it skipped
 * (`speechSkippedMs`: loud sound that came too late to play) and the sound it played as silence
 * (`audioUnderrunMs`: not decoded in time, or silence inserted where its anchor rose). The other connects of a
 * run join a quiet avatar, where the encoder's pictures are cheap and nothing is lost that anyone would hear.
 */
export interface TalkingJoins {
  first_frame_ms: Figures;
  first_sound_ms: Figures;
  /** null: the player has no such statistics (MSE, WebRTC). */
  speech_skipped_ms: Figures | null;
  played_as_silence_ms: Figures | null;
  /** The player's anchor 2.5 s after its first frame (WebCodecs, canvas: `anchorMs`), ms. */
  anchor_ms: Figures | null;
  /**
   * The canvas: its first frame whose mouth's box differs from the first picture's (the avatar at rest) −
   * the first sound heard, ms: how much of the first words the mouth stays closed (null: other players,
   * whose first frame is already a moving one).
   */
  mouth_moved_after_sound_ms: Figures | null;
}

/** A 2 s stall and what followed. */
export interface StallResult {
  stall_ms: number;
  latency_before_ms: number | null;
  /** End of the stall → the first frame shown within 150 ms of the latency before. */
  back_at_live_edge_ms: number | null;
  /** Frames shown later than latency-before + 150 ms after being back (never playing on late: 0). */
  late_frames_after: number;
  latency_after_ms: number | null;
  player_stats: Record<string, unknown> | null;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const r1 = (n: number) => Math.round(n * 10) / 10;
const loadavg = () => Deno.readTextFileSync("/proc/loadavg").split(" ").slice(0, 3).join(" ");

function pct(values: number[], p: number): number | null {
  if (!values.length) return null;
  const s = [...values].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))];
}

function figures(values: number[]): Figures {
  const f = (p: number) => {
    const v = pct(values, p);
    return v === null ? null : r1(v);
  };
  return { samples: values.length, p50: f(50), p95: f(95), p99: f(99), max: f(100) };
}

async function run(cmd: string, args: string[]): Promise<void> {
  await new Deno.Command(cmd, { args, stdout: "null", stderr: "null" }).output().catch(() => {});
}

// ---------------------------------------------------------------- the service

interface Service {
  url: string;
  apiKey: string;
  child: Deno.ChildProcess;
}

async function startService(dir: string, core: number | null, janus: JanusProcess | null, ca: string) {
  const script = new URL("./service.ts", import.meta.url).pathname;
  const deno = [Deno.execPath(), "run", "-A", script, "--stamp"];
  const child = new Deno.Command(core === null ? deno[0] : "taskset", {
    args: core === null ? deno.slice(1) : ["-c", String(core), ...deno],
    env: {
      PORT: "0",
      SVC_KV: `${dir}/player.kv`,
      SVC_REFERENCE_ENGINE: "false",
      SVC_ENGINE_CA_FILE: ca,
      SVC_RENDER_CAPACITY: "50",
      SVC_MAX_CONCURRENT_SESSIONS: "100",
      SVC_RATE_LIMIT_PER_MINUTE: "1000000",
      SVC_RATE_LIMIT_BURST: "100000",
      SVC_DEMO_PAGE: "false",
      SVC_LOG_LEVEL: "warn",
      ...(janus ? { SVC_SFU_JANUS_URL: janus.url, SVC_SFU_ADMIN_SECRET: janus.secret } : {}),
    },
    stdin: "piped",
    stdout: "piped",
    stderr: "inherit",
  }).spawn();
  const reader = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  let text = "";
  let info: { url: string; api_key: string } | null = null;
  while (!info) {
    const { value, done } = await reader.read();
    if (done) throw new Error("the service process exited before it was ready");
    text += value;
    for (const line of text.split("\n").slice(0, -1)) if (line.includes('"api_key"')) info = JSON.parse(line);
  }
  reader.releaseLock();
  void child.stdout.cancel().catch(() => {});
  return { url: info.url, apiKey: info.api_key, child } satisfies Service;
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

interface Session {
  id: string;
  clientToken: string;
  meta: Record<string, unknown>;
}

async function createSession(svc: Service, engine: BenchEngine, path: PathName): Promise<Session> {
  const body = await api(svc, "POST", "/v1/sessions", {
    provider_type: "external_engine",
    provider_config: {
      external_engine: { url: engine.url, auth_headers: { Authorization: "Bearer bench" } },
    },
    transport: path === "webrtc_sfu" ? "webrtc_sfu" : "websocket_fmp4",
  });
  return { id: body.session_id, clientToken: body.client_token, meta: body.stream_metadata };
}

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

// ---------------------------------------------------------------- a TCP proxy that can stall

/** Forwards TCP to `target`; `stall(ms)` holds the target's bytes for `ms`, then lets them all through. */
function startStallProxy(target: { hostname: string; port: number }) {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  let holdUntil = 0;
  const conns = new Set<Deno.Conn>();
  const pump = async (from: Deno.Conn, to: Deno.Conn, stallable: boolean) => {
    const buf = new Uint8Array(65536);
    try {
      for (;;) {
        const n = await from.read(buf);
        if (n === null) break;
        if (stallable && Date.now() < holdUntil) await sleep(holdUntil - Date.now());
        let o = 0;
        while (o < n) o += await to.write(buf.subarray(o, n));
      }
    } catch { /* closed */ }
    try {
      to.close();
    } catch { /* closed */ }
  };
  const accepting = (async () => {
    for await (const conn of listener) {
      try {
        const up = await Deno.connect(target);
        conns.add(conn);
        conns.add(up);
        void pump(conn, up, false);
        void pump(up, conn, true);
      } catch {
        conn.close();
      }
    }
  })();
  return {
    port: (listener.addr as Deno.NetAddr).port,
    stall(ms: number) {
      holdUntil = Date.now() + ms;
    },
    async close() {
      listener.close();
      for (const c of conns) {
        try {
          c.close();
        } catch { /* closed */ }
      }
      await accepting.catch(() => {});
    },
  };
}

// ---------------------------------------------------------------- the page

/** The mouth's box in `size`×`size` frames (every pose of the default avatar's mouth, head motion included). */
async function mouthBox(size: number): Promise<{ x: number; y: number; w: number; h: number }> {
  const art = await loadArtBank(CATALOG, size, size);
  const b = art.avatars.get(CATALOG.defaultAvatarId)!.mouthBox;
  return { x: b.x, y: b.y, w: b.width, h: b.height };
}

/**
 * The page's probes. `g.frames`: per presented frame {shown (epoch ms), made (epoch ms, from the stamp),
 * dark (mouth cavity pixels)}; `g.onsets`: burst onsets heard (epoch ms); `g.createdAt`, `g.firstShown`.
 */
const PROBE = `${ONSET_TAP}
globalThis.startProbe = async ({ meta, clientToken, playback, box, size }) => {
  const g = globalThis;
  const { createPlayer } = await import("/sdk/player.js");
  const video = document.createElement(playback === "canvas" ? "canvas" : "video");
  video.width = size; video.height = size;
  document.body.append(video);
  g.frames = []; g.onsets = []; g.firstShown = null;
  // Awaited by the bench (page.waitForFunction would load Playwright's injected script into the page, 20-30
  // ms of its main thread, in the middle of the connect being measured).
  g.firstShownP = new Promise((resolve) => { g.resolveFirstShown = resolve; });
  const { actx, onset, tap } = await g.onsetTap(g.onsets);
  // The connect's stages, each the first time it happens (epoch ms): the socket, the decoder, the element.
  g.marks = {};
  const mark = (k) => { g.marks[k] ??= performance.timeOrigin + performance.now(); };
  if (!g.markedClasses) {
    g.markedClasses = true;
    const WS = g.WebSocket;
    g.WebSocket = class extends WS {
      constructor(...a) {
        super(...a);
        mark("socket_created");
        this.addEventListener("open", () => mark("socket_open"));
        this.addEventListener("message", () => mark("first_message"));
      }
    };
    if (g.VideoDecoder) {
      const VD = g.VideoDecoder;
      g.VideoDecoder = class extends VD {
        constructor(init) {
          super({ ...init, output: (f) => { mark("first_decoded"); init.output(f); } });
          mark("decoder_created");
        }
        configure(c) { mark("decoder_configured"); return super.configure(c); }
        decode(c) { if (c.type === "key") mark("first_keyframe_in"); return super.decode(c); }
      };
    }
    if (g.RTCPeerConnection) {
      const PC = g.RTCPeerConnection;
      g.peerConnections = [];
      g.RTCPeerConnection = class extends PC {
        constructor(...a) { super(...a); g.peerConnections.push(this); }
      };
    }
    if (g.MediaStreamTrackGenerator) {
      const G = g.MediaStreamTrackGenerator;
      g.MediaStreamTrackGenerator = class extends G {
        constructor(o) { super(o); mark("element_stream_set"); }
      };
      const write = WritableStreamDefaultWriter.prototype.write;
      WritableStreamDefaultWriter.prototype.write = function (chunk) {
        if (typeof VideoFrame === "function" && chunk instanceof VideoFrame) mark("first_frame_written");
        return write.call(this, chunk);
      };
    }
  }
  const options = playback === "canvas"
    ? { canvas: video, streamMetadata: meta, clientToken, microphone: false }
    : { video, streamMetadata: meta, clientToken, microphone: false };
  if (playback === "webcodecs" || playback === "canvas") {
    Object.assign(options, { audioContext: actx, audioOutput: tap });
  }
  if (g.playerLatency !== undefined) Object.assign(options, { outputLatencyMs: g.playerLatency });
  if (playback === "webcodecs") Object.assign(options, { playback });
  if (playback === "mse") Object.assign(options, { playback });
  g.createdAt = performance.timeOrigin + performance.now();
  g.player = createPlayer(options);
  let wired = false;
  const wire = () => {
    if (wired || playback === "webcodecs" || playback === "canvas") return;
    if (video.srcObject instanceof MediaStream && video.srcObject.getAudioTracks().length) {
      actx.createMediaStreamSource(video.srcObject).connect(onset);
      wired = true;
    } else if (playback === "mse" && video.src) {
      actx.createMediaElementSource(video).connect(tap);
      wired = true;
    }
  };
  // Started by the steady run only (not during the connects measured): every 250 ms, the tap's own output
  // lag — how long after the context pulls a sample it is heard (its currentTime against its output
  // timestamp's), a path the element's own sound does not take — and, over WebRTC, the element's own sound
  // path after the jitter buffer as Chromium reports it (media-playout statistics: the estimated delay from a
  // sample emitted to its playout).
  g.tapLags = [];
  g.playoutDelays = [];
  // WebRTC: each 250 ms window of the receivers' statistics — per kind, the mean time a sample or frame
  // waited in the jitter buffer and the buffer's target over the window, and the audio's cumulative
  // concealment and time-stretching counters (the difference over the steady run is reported).
  g.receiverWindows = [];
  const receiverPrev = {};
  const receiverWindow = (st) => {
    const p = receiverPrev[st.kind];
    const n = p ? st.jitterBufferEmittedCount - p.emitted : 0;
    if (n > 0) {
      const per = (now, before) => typeof now === "number" ? (now - before) / n * 1000 : null;
      g.receiverWindows.push({
        at: performance.timeOrigin + performance.now(),
        kind: st.kind,
        jitterBufferMs: per(st.jitterBufferDelay, p.delay),
        targetMs: per(st.jitterBufferTargetDelay, p.target),
        counters: st.kind === "audio"
          ? {
            concealed: st.concealedSamples ?? null,
            events: st.concealmentEvents ?? null,
            inserted: st.insertedSamplesForDeceleration ?? null,
            removed: st.removedSamplesForAcceleration ?? null,
          }
          : null,
      });
    }
    receiverPrev[st.kind] = {
      emitted: st.jitterBufferEmittedCount,
      delay: st.jitterBufferDelay,
      target: st.jitterBufferTargetDelay,
    };
  };
  g.sampleLags = async () => {
    let prev = null;
    for (;;) { // until the page closes
      if (typeof g.tapLatencyMs === "number") g.tapLags.push(g.tapLatencyMs);
      else {
        const ts = actx.getOutputTimestamp();
        if (ts.contextTime > 0) g.tapLags.push((actx.currentTime - ts.contextTime) * 1000);
      }
      const pc = g.peerConnections?.at(-1);
      if (pc && pc.connectionState === "connected") {
        for (const st of (await pc.getStats()).values()) {
          if (st.type === "inbound-rtp") receiverWindow(st);
          if (st.type !== "media-playout") continue;
          if (prev && st.totalSamplesCount > prev.totalSamplesCount) {
            g.playoutDelays.push((st.totalPlayoutDelay - prev.totalPlayoutDelay) /
              (st.totalSamplesCount - prev.totalSamplesCount) * 1000);
          }
          prev = { totalPlayoutDelay: st.totalPlayoutDelay, totalSamplesCount: st.totalSamplesCount };
        }
      }
      await new Promise((r) => setTimeout(r, 250));
    }
  };
  const timer = setInterval(() => {
    wire();
    if (wired || playback === "webcodecs" || playback === "canvas") clearInterval(timer);
  }, 10);
  if (playback === "canvas") {
    // The canvas (video-free) player draws in its animation-frame callbacks; this one, registered after its
    // first, reads the mouth's box of what it drew. When that is on screen is known only from Chromium's trace
    // (video_free_browser.ts: 2.7 ms after this read, p50, on 6 Dec): here a frame counts as shown when read
    // (handed to the compositor), in either browser — an estimate a few milliseconds early.
    const ctx = video.getContext("2d");
    const read = () => {
      const shown = performance.timeOrigin + performance.now();
      const centre = ctx.getImageData(size / 2, size / 2, 1, 1).data;
      if (centre[3] > 0) {
        if (g.firstShown === null) { g.firstShown = shown; g.resolveFirstShown(shown); }
        // The box's mean darkness (0–255), as video_free_browser.ts reads the drawer: it grows steadily through
        // the drawer's cross-fade between two mouths, where a count of dark cavity pixels jumps near its end
        // (measured here in Chromium: 16 ms later on average).
        const d = ctx.getImageData(box.x, box.y, box.w, box.h).data;
        let sum = 0;
        for (let i = 0; i < d.length; i += 4) sum += d[i] + d[i + 1] + d[i + 2];
        g.frames.push({ shown, made: NaN, dark: 255 - sum / (d.length / 4) / 3, pts: NaN });
      }
      requestAnimationFrame(read);
    };
    requestAnimationFrame(read);
    return;
  }
  const canvas = document.createElement("canvas");
  canvas.width = size; canvas.height = size;
  const ctx = canvas.getContext("2d", { willReadFrequently: true });
  const onFrame = (now, md) => {
    if (video.videoWidth === size) {
      const shown = performance.timeOrigin + (md.expectedDisplayTime ?? now);
      if (g.firstShown === null) { g.firstShown = shown; g.resolveFirstShown(shown); }
      // A WebRTC player in a browser without H.264 (Firefox here) draws the avatar itself and shows the
      // canvas's captured stream in the element: no stamp in its pictures; the mouth's box read as the canvas
      // path reads it (its mean darkness).
      g.drawnInVideo ??= Boolean(g.player.stats().animation);
      if (g.drawnInVideo) {
        ctx.drawImage(video, box.x, box.y, box.w, box.h, box.x, box.y, box.w, box.h);
        const d = ctx.getImageData(box.x, box.y, box.w, box.h).data;
        let sum = 0;
        for (let i = 0; i < d.length; i += 4) sum += d[i] + d[i + 1] + d[i + 2];
        g.frames.push({ shown, made: NaN, dark: 255 - sum / (d.length / 4) / 3, pts: NaN });
        video.requestVideoFrameCallback(onFrame);
        return;
      }
      // Only the stamp's rows and the mouth's box are read (the whole frame would cost the page's main thread,
      // which the WebCodecs player shares, several ms a frame).
      // The stamp is read before and after the mouth: the element may take the next frame between two
      // draws (a frame presented right after a late callback), and a mouth read from another frame than its
      // stamp is not counted.
      const stamp = () => {
        ctx.drawImage(video, 0, 0, size, 32, 0, 0, size, 32);
        const top = ctx.getImageData(0, 0, size, 32).data;
        let v = 0;
        for (let i = 0; i < 32; i++) {
          const x = Math.floor((i + 0.5) * size / 32);
          v = v * 2 + (top[(16 * size + x) * 4] > 128 ? 1 : 0);
        }
        return v;
      };
      const v = stamp();
      ctx.drawImage(video, box.x, box.y, box.w, box.h, box.x, box.y, box.w, box.h);
      if (stamp() !== v) {
        g.torn = (g.torn ?? 0) + 1;
        video.requestVideoFrameCallback(onFrame);
        return;
      }
      const nowMs = Date.now();
      let made = nowMs - (((nowMs >>> 0) - v) >>> 0);
      const d = ctx.getImageData(box.x, box.y, box.w, box.h).data;
      let dark = 0;
      for (let i = 0; i < d.length; i += 4) {
        const r = d[i], gg = d[i + 1], b = d[i + 2];
        if (r < 110 && gg < 60 && b < 70 && r > gg + 15) dark++;
      }
      g.frames.push({ shown, made, dark, pts: (md.mediaTime ?? NaN) * 1000 });
    }
    video.requestVideoFrameCallback(onFrame);
  };
  video.requestVideoFrameCallback(onFrame);
};
`;

interface PageFrame {
  shown: number;
  made: number;
  dark: number;
  /** The frame's timeline instant (ms, its media time). */
  pts: number;
}

/** Waits (at most 20 s) for the page's first frame shown. */
async function firstShown(page: Page): Promise<void> {
  await page.evaluate(
    `Promise.race([globalThis.firstShownP, new Promise((_, no) => setTimeout(() => no(new Error("no frame shown in 20 s")), 20000))])`,
  );
}

/** What the bench needs of a page, whichever browser drives it. */
interface Page {
  evaluate(script: string): Promise<unknown>;
}

/** A browser the bench opens fresh pages in, one at a time: Playwright's Chromium or Puppeteer's Firefox. */
interface Browser {
  name: BrowserName;
  /** `--device`: the tap at its sound device (a PulseAudio null sink). */
  device: DeviceTap | null;
  /**
   * Firefox: its output latency on the sound server (ms, {@link firefoxOutputLatency}), which the page's tap
   * takes instead of asking the context; null in Chromium (asked).
   */
  outputLatencyMs: number | null;
  /** A page in a fresh context (no cache, no state), at `url`. */
  open(url: string): Promise<{ page: Page; close(): Promise<void> }>;
  close(): Promise<void>;
}

/** The browsers `--browser` names. */
type BrowserName = "chromium" | "firefox";

/** The device tap on `sound`; if it cannot start, the browser (`close`) and the sound server are stopped. */
async function tapOrClose(sound: SoundServer, close: () => Promise<void>): Promise<DeviceTap> {
  try {
    return startDeviceTap(sound);
  } catch (err) {
    await close().catch(() => {});
    await sound.stop();
    throw err;
  }
}

/**
 * Launches the bench's browser: Debian's Chromium (Playwright) or Debian's Firefox ESR (Puppeteer over
 * WebDriver BiDi; sound without a gesture, played to a PulseAudio null sink: see testing/firefox.ts). The
 * two drivers open pages alike, each through its own API. `device`: Chromium plays to a null sink too, and
 * the bench records the sink ({@link DeviceFigures}). `playerLatency`: the players' `outputLatencyMs`.
 */
async function launchBrowser(
  name: BrowserName,
  device: boolean,
  playerLatency: number | "read" | undefined,
): Promise<Browser> {
  /** Said to each page before its probe: `--output-latency`, the players' `outputLatencyMs`. */
  const pageSetup = (tapLatency: number | null) =>
    [
      ...(tapLatency === null ? [] : [`globalThis.tapLatencyMs = ${tapLatency};`]),
      ...(playerLatency === undefined
        ? []
        : [`globalThis.playerLatency = ${JSON.stringify(playerLatency)};`]),
    ].join(" ") || "undefined";
  const debug = Deno.env.get("BENCH_DEBUG");
  const pageError = (e: unknown) => console.error(`bench player: page error: ${e}`);
  const needSound = async () => {
    const sound = await startSoundServer();
    if (!sound) {
      throw new Error(
        `${name === "firefox" ? "--browser firefox" : "--device"} plays to a PulseAudio null sink: ` +
          "apt-get install -y pulseaudio",
      );
    }
    return sound;
  };
  if (name === "chromium") {
    const sound = device ? await needSound() : null;
    const b = await launchChromium({ media: true, webrtc: true, ...(sound ? { sound } : {}) }).catch(
      async (err) => {
        await sound?.stop();
        throw err;
      },
    );
    const tap = sound ? await tapOrClose(sound, () => b.close()) : null;
    return {
      name,
      device: tap,
      outputLatencyMs: null,
      async open(url) {
        const context = await b.newContext();
        const page = await context.newPage();
        page.on("pageerror", pageError);
        if (debug) page.on("console", (m) => console.log(`page: ${m.text()}`));
        await page.goto(url);
        await page.evaluate(pageSetup(null));
        return { page: { evaluate: (s) => page.evaluate(s) }, close: () => context.close() };
      },
      async close() {
        await b.close();
        await tap?.stop();
        await sound?.stop();
      },
    };
  }
  // Firefox plays to a real-time sound server (its mock device runs ~3 % slow: see SoundServer).
  const sound: SoundServer = await needSound();
  const b = await launchFirefox({ autoplay: "allowed", sound }).catch(async (err) => {
    await sound.stop();
    throw err;
  });
  const guard = stepGuard(FIREFOX_STEP_MS);
  let latency: number;
  try {
    latency = await guard("measuring the output latency", firefoxOutputLatency(b, sound));
  } catch (err) {
    await closeFirefox(b);
    await sound.stop();
    throw err;
  }
  const tap = device ? await tapOrClose(sound, () => closeFirefox(b)) : null;
  return {
    name,
    device: tap,
    outputLatencyMs: latency,
    open(url) {
      return guard(
        `opening ${url}`,
        (async () => {
          const context = await b.createBrowserContext();
          const page = await context.newPage();
          page.on("pageerror", pageError);
          if (debug) page.on("console", (m) => console.log(`page: ${m.text()}`));
          await page.goto(url);
          await page.evaluate(pageSetup(latency));
          return {
            // (named by the script's head only: what follows may carry a session's token)
            page: { evaluate: (s: string) => guard(scriptName(s), page.evaluate(s)) },
            // (a deadlocked Firefox is killed, not asked: the caller goes on to end its session)
            close: () =>
              guard("closing a page", context.close()).catch((err) => {
                if (!(err instanceof BrowserHung)) throw err;
              }),
          };
        })(),
      );
    },
    async close() {
      await closeFirefox(b); // (a deadlocked Firefox is killed after 10 s)
      await tap?.stop();
      await sound.stop();
    },
  };
}

/**
 * Firefox's output latency on `sound` (ms), asked of the sound server, never of a page (Firefox's first read
 * of a context's latency can deadlock it: {@link BrowserHung}): a page plays a tone while the bench reads the
 * stream's latency 60 times, 25 ms apart (`SoundServer.streamLatencies`), and takes their 90th percentile. The
 * server's account falls between two of Firefox's writes as its buffer drains (from 46–49 ms just after a
 * write to 18–31 before the next on the null sink, 7 Dec) and peaks just after one; the page's tap and the player's clock read `currentTime` nearest Firefox's
 * callbacks (the least of their readings), where the latency is that peak. (Firefox's own answer, asked once
 * and kept, is one reading anywhere in the range: 32.7–54.4 ms in 8 pages.)
 */
async function firefoxOutputLatency(b: FirefoxBrowser, sound: SoundServer): Promise<number> {
  const context = await b.createBrowserContext();
  try {
    const page = await context.newPage();
    await page.evaluate(`(async () => {
      const ctx = new AudioContext({ latencyHint: "interactive", sampleRate: 48000 });
      const tone = new OscillatorNode(ctx, { frequency: 220 });
      const quiet = new GainNode(ctx, { gain: 0.01 });
      tone.connect(quiet).connect(ctx.destination);
      tone.start();
      const end = performance.now() + 10000;
      while (ctx.state !== "running" && performance.now() < end) await new Promise((r) => setTimeout(r, 20));
      await new Promise((r) => setTimeout(r, 300));
    })()`);
    const seen: number[] = [];
    for (let i = 0; i < 60; i++) {
      seen.push(...await sound.streamLatencies());
      await new Promise((r) => setTimeout(r, 25));
    }
    if (seen.length < 30) {
      throw new Error(`Firefox's stream was seen ${seen.length} times on the sound server`);
    }
    seen.sort((x, y) => x - y);
    return Math.round(seen[Math.floor(seen.length * 0.9)] * 10) / 10;
  } finally {
    await context.close();
  }
}

/**
 * Bounds each step in one browser: a step still pending after `ms` rejects with {@link BrowserHung}, and so
 * does every step after it (the browser is then deadlocked: nothing more is asked of it). Exported for its test.
 */
export function stepGuard(ms: number): <T>(what: string, step: Promise<T>) => Promise<T> {
  let hung: BrowserHung | null = null;
  return <T>(what: string, step: Promise<T>): Promise<T> => {
    if (hung) {
      step.catch(() => {});
      return Promise.reject(hung);
    }
    let timer: ReturnType<typeof setTimeout> | undefined;
    const timeout = new Promise<never>((_, no) => {
      timer = setTimeout(() => no(hung ??= new BrowserHung(what, ms)), ms);
    });
    return Promise.race([step, timeout]).finally(() => clearTimeout(timer));
  };
}

/**
 * Measures one part of a run (`part`, given the browser); a part a deadlock stopped ({@link BrowserHung}) is
 * measured again in a browser from `relaunch` (the hung one closed first), at most `state.max` times in the
 * run — each said on stdout and counted (`state.relaunches`). Any other failure stops the run. Exported for
 * its test.
 */
export async function measureWithRelaunch<B extends { close(): Promise<void> }, T>(
  state: { browser: B; relaunches: number; max: number },
  what: string,
  part: (browser: B) => Promise<T>,
  relaunch: () => Promise<B>,
): Promise<T> {
  for (;;) {
    try {
      return await part(state.browser);
    } catch (err) {
      if (!(err instanceof BrowserHung) || state.relaunches >= state.max) throw err;
      state.relaunches++;
      console.log(
        `bench player: ${what}: ${err.message}; the browser relaunched (${state.relaunches} of at most ` +
          `${state.max}), ${what} measured again`,
      );
      await state.browser.close();
      state.browser = await relaunch();
    }
  }
}

/** A script's name for a message: the words before its first bracket (`globalThis.player.stats`), nothing more. */
export function scriptName(script: string): string {
  return script.trim().split(/[^\w.$ ]/)[0].trim().slice(0, 60) || "a script";
}

/** How many times a run may relaunch a deadlocked Firefox ({@link BrowserHung}) before it gives up. */
const MAX_RELAUNCHES = 4;

/**
 * How long a step in a Firefox page may take (the longest the bench awaits, a first frame, gives up at 20 s)
 * before Firefox counts as deadlocked ({@link BrowserHung}).
 */
const FIREFOX_STEP_MS = 60_000;

/**
 * A step in a Firefox page that did not end: Firefox ESR 153's sound deadlocked (its first read of a context's
 * output latency — `outputLatency`, `getOutputTimestamp()` — a blocking call to the parent process's sound
 * server while a sound callback of the same context waits for the page: see docs/media-plane.md, "In
 * Firefox"). Every page's sound then stands still; the bench relaunches Firefox and measures the part again
 * (at most {@link MAX_RELAUNCHES} times a run, each said and counted in the results: `browser_relaunches`).
 */
export class BrowserHung extends Error {
  constructor(what: string, ms: number) {
    super(`a step in the browser did not end in ${ms / 1000} s (${what})`);
    this.name = "BrowserHung";
  }
}

async function newPage(
  browser: Browser,
  base: string,
): Promise<{ context: { close(): Promise<void> }; page: Page }> {
  // any page of the service: same origin as /sdk/player.js
  const { page, close } = await browser.open(`${base}/docs/errors`);
  await page.evaluate(PROBE);
  return { context: { close }, page };
}

async function startProbe(page: Page, s: Session, path: PathName, box: unknown, size: number) {
  const playback = path === "webrtc_sfu" ? "auto" : path;
  await page.evaluate(
    `startProbe(${JSON.stringify({ meta: s.meta, clientToken: s.clientToken, playback, box, size })})`,
  );
}

// ---------------------------------------------------------------- the measures

interface Steady {
  audio: number[];
  frames: number[];
  av: number[];
  bursts: number;
  /** MSE and WebRTC: the page's tap's output lag and the element's own (p50 ms; see {@link TapCorrected}). */
  tap?: { lag: number | null; elementLag: number | null };
  /** WebRTC: the receivers' statistics over the steady run (see {@link ReceiverFigures}). */
  receiver?: ReceiverFigures;
  /** WebCodecs and canvas: the sound lost while the player started (see {@link StartUpLoss}). */
  startUp?: StartUpLoss;
  /** `--device`: the same bursts' onsets at the sound device (see {@link DeviceFigures}). */
  device?: { audio: number[]; av: number[]; pageMinusDevice: number[] };
  /** Per burst (with `--detail`): its onset heard and the frames shown around it. */
  details: BurstDetail[];
}

/** One burst as the page saw it (times in ms relative to the burst's onset heard). */
export interface BurstDetail {
  onset: number;
  /** The first open frame's (shown − onset), or null. */
  av: number | null;
  /** The open threshold (dark pixels). */
  open: number;
  /**
   * Frames shown from 100 ms before the onset to 100 ms after: [shown − onset, pts, dark, shown − made (the
   * frame's latency from the service's stamp)].
   */
  frames: [number, number, number, number][];
}

/** When each burst of the run began: its first chunk sent (epoch ms), from `from` on. */
const burstStarts = (sent: { index: number; sentAt: number }[], from: number) =>
  sent.filter((c) => c.index === 0 && c.sentAt >= from).map((c) => c.sentAt);
/** A burst's onset: the first heard within 900 ms of its start (a burst is 400 ms, then 600 of quiet). */
const onsetOf = (onsets: number[], start: number) => onsets.find((t) => t >= start && t < start + 900);

/** Matches bursts to onsets heard and open mouths shown. */
function analyse(
  sent: { index: number; sentAt: number }[],
  onsets: number[],
  frames: PageFrame[],
  from: number,
): Steady {
  const starts = burstStarts(sent, from);
  const audio: number[] = [];
  const av: number[] = [];
  const details: BurstDetail[] = [];
  // Open: more dark cavity than halfway between the most closed and the most open mouth seen.
  const darks = frames.filter((f) => f.shown >= from).map((f) => f.dark);
  const closed = darks.length ? Math.min(...darks) : 0;
  const open = darks.length ? (closed + Math.max(...darks)) / 2 : Infinity;
  for (const s of starts) {
    const onset = onsetOf(onsets, s);
    if (onset === undefined) continue;
    audio.push(onset - s);
    // The first shown frame with the mouth open (and the next one too) after the burst was sent.
    const i = frames.findIndex((f, k) =>
      f.shown >= s && f.shown < s + 900 && f.dark > open && (frames[k + 1]?.dark ?? 0) > open
    );
    if (i >= 0) av.push(frames[i].shown - onset);
    details.push({
      onset: r1(onset),
      av: i >= 0 ? r1(frames[i].shown - onset) : null,
      open: r1(open),
      frames: frames.filter((f) => f.shown > onset - 100 && f.shown < onset + 100).map((f) => [
        r1(f.shown - onset),
        r1(f.pts),
        f.dark,
        r1(f.shown - f.made),
      ]),
    });
  }
  const lat = frames.filter((f) => f.shown >= from).map((f) => f.shown - f.made).filter((x) =>
    x > -50 && x < 10_000
  );
  return { audio, frames: lat, av, bursts: starts.length, details };
}

/**
 * `--device`: the steady run's bursts measured with their onsets at the sound device, and per burst the page
 * tap's onset − the device's.
 */
export function deviceSteady(
  sent: { index: number; sentAt: number }[],
  pageOnsets: number[],
  deviceOnsets: number[],
  frames: PageFrame[],
  from: number,
): { audio: number[]; av: number[]; pageMinusDevice: number[] } {
  const { audio, av } = analyse(sent, deviceOnsets, frames, from);
  const pageMinusDevice: number[] = [];
  for (const s of burstStarts(sent, from)) {
    const p = onsetOf(pageOnsets, s), d = onsetOf(deviceOnsets, s);
    if (p !== undefined && d !== undefined) pageMinusDevice.push(p - d);
  }
  return { audio, av, pageMinusDevice };
}

/** The steady run: one session talking bursts; the page's probes. */
async function steady(
  path: PathName,
  svc: Service,
  engine: BenchEngine,
  browser: Browser,
  bursts: number,
  box: unknown,
  spread: number,
): Promise<Steady & { stats: Record<string, unknown> | null; metrics: Record<string, unknown> | null }> {
  const s = await createSession(svc, engine, path);
  const { context, page } = await newPage(browser, svc.url);
  try {
    await startProbe(page, s, path, box, 512);
    await firstShown(page);
    if (path !== "webcodecs" && path !== "canvas") await page.evaluate(`void globalThis.sampleLags()`);
    await sleep(3000); // past the start-up
    const startUp = path === "webcodecs" || path === "canvas"
      ? startUpLoss(await page.evaluate(`globalThis.player.stats()`) as Record<string, unknown>)
      : undefined;
    const from = Date.now();
    await engine.talk(s.id, { burstMs: 400, gapMs: 600, bursts, sound: "vowel", spreadMs: spread });
    await sleep(1500);
    const onsets = await page.evaluate(`globalThis.onsets`) as number[];
    const frames = await page.evaluate(`globalThis.frames`) as PageFrame[];
    const stats = await page.evaluate(`globalThis.player.stats()`) as Record<string, unknown>;
    const tapLags = await page.evaluate(`globalThis.tapLags ?? []`) as number[];
    const playoutDelays = await page.evaluate(`globalThis.playoutDelays ?? []`) as number[];
    const windows = await page.evaluate(`globalThis.receiverWindows ?? []`) as ReceiverWindow[];
    await sleep(2500); // the player's next report reaches the service
    const metrics = await api(svc, "GET", `/v1/sessions/${s.id}/metrics`).catch(() => null);
    const sent = engine.sessions.get(s.id)!.sent;
    if (Deno.env.get("BENCH_DBG")) {
      await Deno.writeTextFile(
        Deno.env.get("BENCH_DBG")! + `-${path}.json`,
        JSON.stringify({
          onsets,
          frames,
          dbg: await page.evaluate(`globalThis.__dbg ?? []`),
          sent,
          ...(browser.device ? { deviceOnsets: browser.device.onsets() } : {}),
        }),
      );
    }
    // (Firefox: the estimate's element lags are Chromium's; there the raw figures only)
    const tap = path === "webcodecs" || path === "canvas" || browser.name === "firefox"
      ? undefined
      : { lag: figures(tapLags).p50, elementLag: path === "mse" ? 0 : figures(playoutDelays).p50 };
    const device = browser.device ? deviceSteady(sent, onsets, browser.device.onsets(), frames, from) : null;
    return {
      ...analyse(sent, onsets, frames, from),
      ...(device ? { device } : {}),
      stats,
      metrics,
      ...(tap ? { tap } : {}),
      ...(startUp ? { startUp } : {}),
      ...(path === "webrtc_sfu" ? { receiver: receiverFigures(windows.filter((w) => w.at >= from)) } : {}),
    };
  } finally {
    await context.close();
    await endSession(svc, s.id);
  }
}

/** Connect → first frame, in fresh contexts, landing anywhere in the GOP. */
async function connects(
  path: PathName,
  svc: Service,
  engine: BenchEngine,
  browser: Browser,
  n: number,
  nTalking: number,
  joinEngine: BenchEngine,
  box: unknown,
): Promise<
  { any: number[]; firstViewer: number[]; stages: Record<string, number[]>; talking: TalkingJoins | null }
> {
  const anyTimes: number[] = [];
  const talking = {
    firstFrame: [] as number[],
    firstSound: [] as number[],
    skipped: [] as number[],
    silence: [] as number[],
    anchor: [] as number[],
    mouthMoved: [] as number[],
  };
  const stages: Record<string, number[]> = {};
  const firstViewer: number[] = [];
  /**
   * A viewer in a fresh context: createPlayer → its first frame shown (ms), then `then` reads what else is
   * wanted from the page; null when it failed (said on stderr, with the page's state under `BENCH_DEBUG`).
   */
  const visit = async <T>(s: Session, what: string, then: (page: Page) => Promise<T>) => {
    const { context, page } = await newPage(browser, svc.url);
    try {
      await startProbe(page, s, path, box, 512);
      await firstShown(page);
      const firstFrame = await page.evaluate(`globalThis.firstShown - globalThis.createdAt`) as number;
      return { firstFrame, ...await then(page) };
    } catch (err) {
      if (err instanceof BrowserHung) throw err;
      console.error(`bench player: ${path} ${what} failed: ${err}`);
      if (Deno.env.get("BENCH_DEBUG")) {
        console.error(
          await page.evaluate(`(async () => JSON.stringify({
          state: globalThis.player?.state(), stats: globalThis.player?.stats(),
          pcs: await Promise.all((globalThis.peerConnections ?? []).map(async (pc) => ({
            conn: pc.connectionState, ice: pc.iceConnectionState, sig: pc.signalingState,
            remote: pc.remoteDescription?.sdp?.split("\\r\\n").filter((l) => /^(m=|a=rtpmap|a=candidate)/.test(l)),
            stats: [...(await pc.getStats()).values()].filter((s) => s.type === "inbound-rtp" || s.type === "candidate-pair").map((s) => ({ type: s.type, kind: s.kind, state: s.state, packets: s.packetsReceived, decoded: s.framesDecoded, codec: s.codecId })),
          }))),
        }))()`).catch((e) => `debug failed: ${e}`),
        );
      }
      return null;
    } finally {
      await context.close();
    }
  };
  /** A connect: its first frame, and its stages recorded. */
  const measure = async (s: Session) =>
    (await visit(s, "connect", async (page) => {
      const marks = await page.evaluate(`globalThis.marks`) as Record<string, number>;
      const createdAt = await page.evaluate(`globalThis.createdAt`) as number;
      for (const [k, at] of Object.entries(marks)) (stages[k] ??= []).push(at - createdAt);
      return {};
    }))?.firstFrame ?? null;
  // A viewer joining mid-speech: its first frame, its first sound heard (by 2.5 s after that frame), what of
  // the speech its player skipped or played as silence.
  const joinTalking = (s: Session) =>
    visit(s, "join while talking", async (page) => {
      await sleep(2500);
      const firstSound = await page.evaluate(
        `globalThis.onsets.length ? globalThis.onsets[0] - globalThis.createdAt : null`,
      ) as number | null;
      const stats = path === "webcodecs" || path === "canvas"
        ? await page.evaluate(`globalThis.player.stats()`) as Record<string, number | null>
        : null;
      // (the canvas: the mouth's box darkness, 0–255, of each frame drawn; the first is the picture at rest)
      const mouthMoved = path === "canvas"
        ? await page.evaluate(`(() => {
        const f = globalThis.frames;
        const i = f.findIndex((x) => Math.abs(x.dark - f[0].dark) > 1);
        return i > 0 && globalThis.onsets.length ? f[i].shown - globalThis.onsets[0] : null;
      })()`) as number | null
        : null;
      return { firstSound, stats, mouthMoved };
    });
  const sessions: Session[] = [];
  try {
    for (let i = 0; i < 2; i++) {
      const s = await createSession(svc, engine, path);
      sessions.push(s);
      if (path === "webrtc_sfu") {
        // The first viewer, right after the create: its first frame is Janus's cached opening keyframe.
        const t = await measure(s);
        if (t !== null) firstViewer.push(t);
      }
    }
    for (let i = 0; i < n; i++) {
      const s = await refresh(svc, sessions[i % sessions.length]);
      await sleep(100 + Math.random() * 900);
      const t = await measure(s);
      if (t !== null) anyTimes.push(t);
    }
    // (on the strictly real-time engine when the run has one: no audio ahead of its time to hide a late start)
    if (nTalking > 0) sessions.push(await createSession(svc, joinEngine, path));
    for (let i = 0; i < nTalking; i++) {
      const s = await refresh(svc, sessions[sessions.length - 1]);
      const talk = joinEngine.talk(s.id, { burstMs: 3000, gapMs: 200, bursts: 2, sound: "speech" });
      try {
        await sleep(400 + Math.random() * 1000);
        const j = await joinTalking(s);
        if (j) {
          talking.firstFrame.push(j.firstFrame);
          if (j.firstSound !== null) talking.firstSound.push(j.firstSound);
          if (j.mouthMoved !== null) talking.mouthMoved.push(j.mouthMoved);
          if (j.stats) {
            const { speechSkippedMs, audioUnderrunMs, anchorMs } = j.stats;
            if (typeof speechSkippedMs === "number") talking.skipped.push(speechSkippedMs);
            if (typeof audioUnderrunMs === "number") talking.silence.push(audioUnderrunMs);
            if (typeof anchorMs === "number") talking.anchor.push(anchorMs);
          }
        }
      } finally {
        await talk;
      }
    }
  } finally {
    for (const s of sessions) await endSession(svc, s.id);
  }
  return {
    any: anyTimes,
    firstViewer,
    stages,
    talking: talking.firstFrame.length
      ? {
        first_frame_ms: figures(talking.firstFrame),
        first_sound_ms: figures(talking.firstSound),
        ...(path === "webcodecs" || path === "canvas"
          ? {
            speech_skipped_ms: figures(talking.skipped),
            played_as_silence_ms: figures(talking.silence),
            anchor_ms: figures(talking.anchor),
          }
          : { speech_skipped_ms: null, played_as_silence_ms: null, anchor_ms: null }),
        mouth_moved_after_sound_ms: path === "canvas" ? figures(talking.mouthMoved) : null,
      }
      : null,
  };
}

/** A 2 s stall of the service's bytes (websocket_fmp4), through the proxy. */
async function stallRun(
  path: PathName,
  svc: Service,
  engine: BenchEngine,
  browser: Browser,
  box: unknown,
): Promise<StallResult> {
  const target = new URL(svc.url);
  const proxy = startStallProxy({ hostname: target.hostname, port: Number(target.port) });
  const s0 = await createSession(svc, engine, path);
  const s = {
    ...s0,
    meta: {
      ...s0.meta,
      media_url: String(s0.meta.media_url).replace(/:\/\/[^/]+/, `://127.0.0.1:${proxy.port}`),
    },
  };
  const { context, page } = await newPage(browser, svc.url);
  try {
    await startProbe(page, s, path, box, 512);
    await firstShown(page);
    const talking = engine.talk(s.id, { burstMs: 400, gapMs: 600, bursts: 12, sound: "vowel" });
    await sleep(4000);
    const stallAt = Date.now();
    proxy.stall(2000);
    const stallEnd = stallAt + 2000;
    await sleep(6000);
    await talking;
    const frames = await page.evaluate(`globalThis.frames`) as PageFrame[];
    const stats = await page.evaluate(`globalThis.player.stats()`) as Record<string, unknown>;
    const before = frames.filter((f) => f.shown > stallAt - 1500 && f.shown < stallAt).map((f) =>
      f.shown - f.made
    );
    const latencyBefore = pct(before, 50);
    let back: number | null = null;
    let lateAfter = 0;
    const after: number[] = [];
    if (latencyBefore !== null) {
      const limit = latencyBefore + 150;
      const i = frames.findIndex((f) => f.shown >= stallEnd && f.shown - f.made <= limit);
      if (i >= 0) {
        back = r1(frames[i].shown - stallEnd);
        for (const f of frames.slice(i)) {
          if (f.shown - f.made > limit) lateAfter++;
          if (f.shown > frames[i].shown + 1000) after.push(f.shown - f.made);
        }
      }
    }
    return {
      stall_ms: 2000,
      latency_before_ms: latencyBefore === null ? null : r1(latencyBefore),
      back_at_live_edge_ms: back,
      late_frames_after: lateAfter,
      latency_after_ms: pct(after, 50) === null ? null : r1(pct(after, 50)!),
      player_stats: stats,
    };
  } finally {
    await context.close();
    await endSession(svc, s.id);
    await proxy.close();
  }
}

/** The drift run: `minutes` of bursts on the WebCodecs path; first minute against the last. */
async function driftRun(
  svc: Service,
  engine: BenchEngine,
  browser: Browser,
  minutes: number,
  box: unknown,
  spread: number,
) {
  const s = await createSession(svc, engine, "webcodecs");
  const { context, page } = await newPage(browser, svc.url);
  try {
    await startProbe(page, s, "webcodecs", box, 512);
    await firstShown(page);
    await sleep(3000);
    const from = Date.now();
    const bursts = Math.round(minutes * 60 / 5);
    const minuteMarks: Record<string, number>[] = [];
    const talking = engine.talk(s.id, {
      burstMs: 400,
      gapMs: 4600,
      bursts,
      sound: "vowel",
      spreadMs: spread,
    });
    const startLoad = loadavg();
    while (Date.now() < from + minutes * 60_000 + 2000) {
      await sleep(30_000);
      minuteMarks.push({
        at_s: Math.round((Date.now() - from) / 1000),
        ...(await page.evaluate(`globalThis.player.stats()`) as Record<string, number>),
      });
      // keep the page's records small
      await page.evaluate(
        `globalThis.frames = globalThis.frames.filter((f) => f.dark > 0 || f.shown > Date.now() - 60000)`,
      );
    }
    await talking;
    const onsets = await page.evaluate(`globalThis.onsets`) as number[];
    const frames = await page.evaluate(`globalThis.frames`) as PageFrame[];
    const sent = engine.sessions.get(s.id)!.sent;
    const first = analyse(sent.filter((c) => c.sentAt < from + 60_000), onsets, frames, from);
    const lastFrom = from + (minutes - 1) * 60_000;
    const last = analyse(sent.filter((c) => c.sentAt >= lastFrom), onsets, frames, lastFrom);
    const med = (xs: number[]) => pct(xs, 50);
    const d = (a: number | null, b: number | null) => (a === null || b === null ? null : r1(b - a));
    return {
      minutes,
      load_average_start: startLoad,
      load_average_end: loadavg(),
      first_minute: { mouth_vs_sound_ms: figures(first.av), engine_chunk_to_sound_ms: figures(first.audio) },
      last_minute: { mouth_vs_sound_ms: figures(last.av), engine_chunk_to_sound_ms: figures(last.audio) },
      mouth_vs_sound_drift_ms: d(med(first.av), med(last.av)),
      engine_chunk_to_sound_drift_ms: d(med(first.audio), med(last.audio)),
      player_stats_every_30s: minuteMarks,
    };
  } finally {
    await context.close();
    await endSession(svc, s.id);
  }
}

// ---------------------------------------------------------------- main

/** \|offset\| p95 and the mean of mouth-vs-sound offsets (ms, one decimal; null when none). */
function spread(av: number[]): { abs_p95: number | null; mean: number | null } {
  const abs = pct(av.map(Math.abs), 95);
  return {
    abs_p95: abs === null ? null : r1(abs),
    mean: av.length ? r1(av.reduce((a, b) => a + b, 0) / av.length) : null,
  };
}

/** A steady run's figures. */
function steadyResults(
  st: Awaited<ReturnType<typeof steady>>,
  detail: boolean,
): SteadyResults {
  const reported = (st.metrics as { av_offset_ms?: { p50?: number | null; count?: number } } | null)
    ?.av_offset_ms;
  const offsets = (av: number[]) => {
    const { abs_p95: abs, mean } = spread(av);
    const shown = figures(av).p50;
    const rp = reported?.p50 ?? null;
    return {
      reported_vs_shown_ms: {
        reported_p50: rp,
        reported_count: reported?.count ?? 0,
        shown_p50: shown,
        difference: rp === null || shown === null ? null : r1(rp - shown),
      },
      mouth_vs_sound_ms: { ...figures(av), abs_p95: abs, mean },
    };
  };
  const lag = st.tap && st.tap.lag !== null && st.tap.elementLag !== null
    ? st.tap.lag - st.tap.elementLag
    : null;
  return {
    ...offsets(st.av),
    engine_chunk_to_sound_ms: { ...figures(st.audio), bursts: st.bursts },
    frame_made_to_presented_ms: figures(st.frames),
    player_stats: st.stats,
    service_metrics: st.metrics,
    load_average: loadavg(),
    ...(detail ? { bursts_detail: st.details } : {}),
    ...(st.receiver ? { receiver: st.receiver } : {}),
    ...(st.startUp ? { start_up_sound_lost_ms: st.startUp } : {}),
    ...(st.device
      ? {
        device: {
          engine_chunk_to_sound_ms: figures(st.device.audio),
          mouth_vs_sound_ms: { ...figures(st.device.av), ...spread(st.device.av) },
          page_minus_device_ms: figures(st.device.pageMinusDevice),
        },
      }
      : {}),
    ...(st.tap
      ? {
        tap_corrected: {
          tap_output_lag_ms: st.tap.lag === null ? null : r1(st.tap.lag),
          element_output_lag_ms: st.tap.elementLag === null ? null : r1(st.tap.elementLag),
          ...offsets(lag === null ? [] : st.av.map((x) => x + lag)),
        },
      }
      : {}),
  };
}

/** What the service's metrics said of the player's mouth-vs-sound offset (p50), or "–". */
function reportedOffset(m: Record<string, unknown> | null): string {
  const av = (m as { av_offset_ms?: { p50?: number | null; count?: number } } | null)?.av_offset_ms;
  return av && av.p50 !== undefined && av.p50 !== null ? `${av.p50} (${av.count ?? "?"})` : "–";
}

/** The results as a Markdown table. */
function table(results: Partial<Record<PathName, PathResults>>): string {
  const paths = ALL_PATHS.filter((p) => results[p]);
  const f = (x: Figures | undefined, k: "p50" | "p95" | "p99") => x && x[k] !== null ? `${x[k]}` : "–";
  const row = (label: string, pick: (r: PathResults) => string, target: string) =>
    `| ${label} | ${paths.map((p) => pick(results[p]!)).join(" | ")} | ${target} |`;
  return [
    `| measure (from outside the player) | ${paths.join(" | ")} | target |`,
    `| --- | ${paths.map(() => "---").join(" | ")} | --- |`,
    row(
      "engine audio chunk → sound heard, p50 / p99 ms",
      (r) =>
        `${f(r.engine_chunk_to_sound_ms, "p50")} / ${
          f(r.engine_chunk_to_sound_ms, "p99")
        } (${r.engine_chunk_to_sound_ms.samples})`,
      "≤ 100 / ≤ 160",
    ),
    row(
      "frame made → presented, p50 / p95 ms",
      (r) =>
        `${f(r.frame_made_to_presented_ms, "p50")} / ${
          f(r.frame_made_to_presented_ms, "p95")
        } (${r.frame_made_to_presented_ms.samples})`,
      "p50 ≤ 80",
    ),
    row(
      "mouth vs sound, p50 ms; \\|offset\\| p95",
      (r) =>
        `${f(r.mouth_vs_sound_ms, "p50")}; ${
          r.mouth_vs_sound_ms.abs_p95 ?? "–"
        } (${r.mouth_vs_sound_ms.samples})`,
      "\\|offset\\| p95 ≤ 20",
    ),
    row(
      "client connect → first frame, p50 / p95 ms",
      (r) =>
        `${f(r.connect_to_first_frame_ms, "p50")} / ${
          f(r.connect_to_first_frame_ms, "p95")
        } (${r.connect_to_first_frame_ms.samples})`,
      "p50 ≤ 150 (issue 33: every player; the SFU's first bound, ≤ 500)",
    ),
    row(
      "… its stages, p50 ms after createPlayer",
      (r) =>
        Object.entries(r.connect_stages_p50_ms ?? {}).map(([k, v]) => `${k.replaceAll("_", " ")} ${v}`).join(
          ", ",
        ) || "–",
      "",
    ),
    row(
      "first viewer right after create → first frame, p50 ms",
      (r) =>
        r.first_viewer_first_frame_ms
          ? `${f(r.first_viewer_first_frame_ms, "p50")} (${r.first_viewer_first_frame_ms.samples})`
          : "–",
      "≤ 150 (the SFU's first bound, ≤ 500)",
    ),
    row(
      "viewer joining mid-speech: connect → first frame / first sound heard p50 ms; speech skipped, played as silence p50 / max ms; anchor p50 ms; the canvas's mouth first moved − first sound p50 / max ms",
      (r) => {
        const j = r.talking_joins;
        if (!j) return "–";
        const pm = (x: Figures | null) => x ? `${f(x, "p50")} / ${x.max ?? "–"}` : "–";
        return `${f(j.first_frame_ms, "p50")} / ${f(j.first_sound_ms, "p50")}; ${pm(j.speech_skipped_ms)}, ${
          pm(j.played_as_silence_ms)
        }; ${j.anchor_ms ? f(j.anchor_ms, "p50") : "–"}; ${
          pm(j.mouth_moved_after_sound_ms)
        } (${j.first_frame_ms.samples})`;
      },
      "≤ 150 (the first frame)",
    ),
    row(
      "2 s stall: back at the live edge after / late frames after / latency before → after ms",
      (r) =>
        r.stall
          ? `${
            r.stall.back_at_live_edge_ms ?? "never"
          } / ${r.stall.late_frames_after} / ${r.stall.latency_before_ms} → ${r.stall.latency_after_ms}`
          : "–",
      "≤ 1000 / 0 / within 150",
    ),
    row(
      "mouth vs sound mean ms; service's av_offset_ms p50 (count)",
      (r) => `${r.mouth_vs_sound_ms.mean ?? "–"}; ${reportedOffset(r.service_metrics)}`,
      "\\|mean\\| ≤ 10; within 10 of shown",
    ),
    row(
      "real-time engine: chunk → sound heard, p50 / p99 ms",
      (r) =>
        r.realtime_engine
          ? `${f(r.realtime_engine.engine_chunk_to_sound_ms, "p50")} / ${
            f(r.realtime_engine.engine_chunk_to_sound_ms, "p99")
          } (${r.realtime_engine.engine_chunk_to_sound_ms.samples})`
          : "–",
      "≤ 100 / ≤ 160",
    ),
    row(
      "real-time engine: mouth vs sound p50; \\|offset\\| p95; mean ms",
      (r) =>
        r.realtime_engine
          ? `${f(r.realtime_engine.mouth_vs_sound_ms, "p50")}; ${
            r.realtime_engine.mouth_vs_sound_ms.abs_p95 ?? "–"
          }; ${
            r.realtime_engine.mouth_vs_sound_ms.mean ?? "–"
          } (${r.realtime_engine.mouth_vs_sound_ms.samples})`
          : "–",
      "\\|p95\\| ≤ 20, \\|mean\\| ≤ 10",
    ),
    row(
      "real-time engine: service's av_offset_ms p50 (count)",
      (r) => r.realtime_engine ? reportedOffset(r.realtime_engine.service_metrics) : "–",
      "within 10 of shown",
    ),
    row(
      "mouth vs sound reported (service p50) − shown (outside p50) ms; real-time engine",
      (r) => {
        const d = (x: ReportedVsShown | undefined) => x?.difference ?? "–";
        return `${d(r.reported_vs_shown_ms)}; ${d(r.realtime_engine?.reported_vs_shown_ms)}`;
      },
      "within ±10",
    ),
    row(
      "onsets moved earlier by the tap's output lag − the element's (ms): \\|offset\\| p95; mean; reported − shown; the same, real-time engine",
      (r) => {
        const c = (t: TapCorrected | undefined) =>
          t
            ? `${t.mouth_vs_sound_ms.abs_p95 ?? "–"}; ${t.mouth_vs_sound_ms.mean ?? "–"}; ${
              t.reported_vs_shown_ms.difference ?? "–"
            } (lags ${t.tap_output_lag_ms ?? "–"} − ${t.element_output_lag_ms ?? "–"})`
            : "–";
        return r.tap_corrected ? `${c(r.tap_corrected)}; ${c(r.realtime_engine?.tap_corrected)}` : "–";
      },
      "an estimate: see TapCorrected",
    ),
    row(
      "WebRTC receivers: audio jitter buffer / its target, ms; audio concealed, ms (events); stretched in / out, ms; video jitter buffer / target, ms; the same, real-time engine",
      (r) => {
        const c = (x: ReceiverFigures | undefined) =>
          x
            ? `${x.audio_jitter_buffer_ms ?? "–"} / ${x.audio_target_ms ?? "–"}; ${
              x.audio_concealed_ms ?? "–"
            } (${x.audio_concealment_events ?? "–"}); ${x.audio_inserted_ms ?? "–"} / ${
              x.audio_removed_ms ?? "–"
            }; ${x.video_jitter_buffer_ms ?? "–"} / ${x.video_target_ms ?? "–"}`
            : "–";
        return r.receiver ? `${c(r.receiver)}; ${c(r.realtime_engine?.receiver)}` : "–";
      },
      "the page reading the player's statistics",
    ),
    row(
      "a quiet start: played as silence + skipped, ms; the same, real-time engine",
      (r) => {
        const c = (x: StartUpLoss | undefined) =>
          x ? `${x.total ?? "–"} (${x.underrun ?? "–"} + ${x.skipped ?? "–"})` : "–";
        return r.start_up_sound_lost_ms
          ? `${c(r.start_up_sound_lost_ms)}; ${c(r.realtime_engine?.start_up_sound_lost_ms)}`
          : "–";
      },
      "StartUpLoss (silence: unheard; speech: the joins' row)",
    ),
    row(
      "--device: engine chunk → sound at the device p50 / p99; mouth vs sound \\|p95\\|; mean; page tap − device p50, ms; the same, real-time engine",
      (r) => {
        const c = (x: DeviceFigures | undefined) =>
          x
            ? `${f(x.engine_chunk_to_sound_ms, "p50")} / ${f(x.engine_chunk_to_sound_ms, "p99")}; ${
              x.mouth_vs_sound_ms.abs_p95 ?? "–"
            }; ${x.mouth_vs_sound_ms.mean ?? "–"}; ${
              f(x.page_minus_device_ms, "p50")
            } (${x.engine_chunk_to_sound_ms.samples})`
            : "–";
        return r.device ? `${c(r.device)}; ${c(r.realtime_engine?.device)}` : "–";
      },
      "the sound as a PulseAudio null sink took it (DeviceFigures)",
    ),
    row("load average (1, 5, 15 min) after the path", (r) => r.load_average, ""),
  ].join("\n");
}

if (import.meta.main) {
  const args = parseArgs({
    args: Deno.args,
    options: {
      quick: { type: "boolean", default: false },
      paths: { type: "string" },
      connects: { type: "string" },
      "talking-joins": { type: "string" },
      bursts: { type: "string" },
      core: { type: "string" },
      "drift-minutes": { type: "string", default: "0" },
      detail: { type: "boolean", default: false },
      "fixed-phase": { type: "boolean", default: false },
      "realtime-engine": { type: "boolean", default: false },
      browser: { type: "string", default: "chromium" },
      device: { type: "boolean", default: false },
      "output-latency": { type: "string" },
    },
  }).values;
  const playerLatency = args["output-latency"] === undefined || args["output-latency"] === "read"
    ? args["output-latency"] as "read" | undefined
    : Number(args["output-latency"]);
  if (typeof playerLatency === "number" && !(playerLatency >= 0 && playerLatency <= 1000)) {
    throw new Error(`--output-latency: "read" or ms from 0 to 1000, not ${args["output-latency"]}`);
  }
  const browserName = args.browser as BrowserName;
  if (browserName !== "chromium" && browserName !== "firefox") {
    throw new Error(`--browser: chromium or firefox, not ${args.browser}`);
  }
  const firefoxPaths: PathName[] = ["webcodecs", "mse", "canvas", "webrtc_sfu"];
  const paths = (args.paths ?? (browserName === "firefox" ? firefoxPaths : CHROMIUM_DEFAULT_PATHS).join(","))
    .split(",").map((p) => p.trim()) as PathName[];
  for (const p of paths) {
    if (!ALL_PATHS.includes(p)) throw new Error(`--paths: unknown path ${p}`);
  }
  const nConnects = Number(args.connects ?? (args.quick ? 6 : 20));
  const nTalkingJoins = Number(args["talking-joins"] ?? (args.quick ? 2 : 6));
  if (!Number.isInteger(nTalkingJoins) || nTalkingJoins < 0) {
    throw new Error(`--talking-joins: a whole number of viewers, 0 or more, not ${args["talking-joins"]}`);
  }
  const nBursts = Number(args.bursts ?? (args.quick ? 10 : 30));
  const driftMinutes = Number(args["drift-minutes"]);
  // Bursts at every phase of the frames and refreshes (see TalkPattern.spreadMs); --fixed-phase: 1 s apart.
  const spread = args["fixed-phase"] ? 0 : 40;
  const nproc = navigator.hardwareConcurrency;
  const core = nproc > 1 ? Number(args.core ?? nproc - 1) : null;
  if (core !== null) {
    const others = [...Array(nproc).keys()].filter((c) => c !== core).join(",");
    await run("taskset", ["-a", "-p", "-c", others, String(Deno.pid)]);
  }
  const command = `deno task bench:player ${Deno.args.join(" ")}`.trim();
  const loadBefore = loadavg();
  console.log(`bench player: ${command} (load average before: ${loadBefore})`);
  const dir = await Deno.makeTempDir({ prefix: "svc-bench-player-" });
  const tls = await generateEngineTls();
  const ca = `${dir}/engine-ca.pem`;
  await Deno.writeTextFile(ca, tls.caPem);
  const janus = paths.includes("webrtc_sfu") ? await startJanus({ icePorts: 100, ingestPorts: 100 }) : null;
  if (janus && core !== null) await run("taskset", ["-a", "-p", "-c", String(core), String(janus.pid)]);
  const engine = startBenchEngine(tls);
  const realtime = args["realtime-engine"] ? startRealtimeBenchEngine(tls) : null;
  let svc: Service | null = null;
  let live: { browser: Browser; relaunches: number; max: number } | null = null;
  const results: Partial<Record<PathName, PathResults>> = {};
  let drift: unknown = null;
  /** Firefox: its output latency on the sound server, as measured at each launch (ms). */
  const outputLatencies: number[] = [];
  const launch = async () => {
    const b = await launchBrowser(browserName, args.device, playerLatency);
    if (b.outputLatencyMs !== null) {
      outputLatencies.push(b.outputLatencyMs);
      console.log(`bench player: Firefox's output latency on the sound server ${b.outputLatencyMs} ms`);
    }
    return b;
  };
  /** One part of the run; measured again in a relaunched browser if it deadlocked (Firefox: BrowserHung). */
  const measure = <T>(what: string, part: (browser: Browser) => Promise<T>): Promise<T> =>
    measureWithRelaunch(live!, what, part, launch);
  try {
    svc = await startService(dir, core, janus, ca);
    live = { browser: await launch(), relaunches: 0, max: MAX_RELAUNCHES };
    const box = await mouthBox(512);
    for (const path of paths) {
      console.log(`bench player: ${path} …`);
      const c = await measure(
        `${path} connects`,
        (b) => connects(path, svc!, engine, b, nConnects, nTalkingJoins, realtime ?? engine, box),
      );
      const st = await measure(`${path} steady`, (b) => steady(path, svc!, engine, b, nBursts, box, spread));
      // (the stall run reads the frames' stamps: video paths over websocket_fmp4)
      const stall = path === "webrtc_sfu" || path === "canvas"
        ? null
        : await measure(`${path} stall`, (b) => stallRun(path, svc!, engine, b, box));
      const early = steadyResults(st, args.detail);
      // The real-time engine's steady run follows the early one's, so both see the same load.
      const rt = realtime
        ? steadyResults(
          await measure(`${path} real-time steady`, (b) =>
            steady(path, svc!, realtime, b, nBursts, box, spread)),
          args.detail,
        )
        : null;
      results[path] = {
        ...early,
        connect_to_first_frame_ms: figures(c.any),
        connect_stages_p50_ms: Object.fromEntries(
          Object.entries(c.stages).map(([k, v]) => [k, figures(v).p50] as const).sort((a, b) =>
            (a[1] ?? 0) - (b[1] ?? 0)
          ),
        ),
        ...(path === "webrtc_sfu" ? { first_viewer_first_frame_ms: figures(c.firstViewer) } : {}),
        ...(c.talking ? { talking_joins: c.talking } : {}),
        stall,
        ...(rt ? { realtime_engine: rt } : {}),
      };
      console.log(`bench player: ${path} ${JSON.stringify(results[path])}`);
    }
    if (driftMinutes > 0) {
      console.log(`bench player: drift run, ${driftMinutes} minutes …`);
      drift = await measure("drift", (b) => driftRun(svc!, engine, b, driftMinutes, box, spread));
      console.log(`bench player: drift ${JSON.stringify(drift)}`);
    }
  } finally {
    await live?.browser.close();
    if (svc) {
      await svc.child.stdin.close().catch(() => {});
      const exited = await Promise.race([svc.child.status.then(() => true), sleep(15000).then(() => false)]);
      if (!exited) svc.child.kill("SIGKILL");
    }
    await engine.close();
    await realtime?.close();
    await janus?.stop();
    await Deno.remove(dir, { recursive: true });
  }
  console.log(`\n${table(results)}\n`);
  if (drift) console.log(`drift: ${JSON.stringify(drift)}\n`);
  const loadAfter = loadavg();
  console.log(`load average before ${loadBefore}, after ${loadAfter}; command: ${command}`);
  if (live?.relaunches) {
    console.log(`the browser relaunched ${live.relaunches} times (a part deadlocked: BrowserHung)`);
  }
  const outDir = new URL("./results/", import.meta.url);
  await Deno.mkdir(outDir, { recursive: true });
  const file = new URL(`player-${new Date().toISOString().replace(/[:.]/g, "-")}.json`, outDir);
  await Deno.writeTextFile(
    file,
    JSON.stringify(
      {
        command,
        browser: browserName,
        load_average_before: loadBefore,
        load_average_after: loadAfter,
        browser_relaunches: live?.relaunches ?? 0,
        ...(outputLatencies.length ? { firefox_output_latency_ms: outputLatencies } : {}),
        results,
        drift,
      },
      null,
      2,
    ) + "\n",
  );
  console.log(`results: ${file.pathname}`);
}
