/**
 * The player on an impaired network (`deno task bench:network`): the SDK player in Debian's Chromium against
 * a live session (in process: a real Janus and coturn, the media plane, a fake engine the bench drives),
 * each player kind on each path, side by side in one run:
 *
 * | kind          | transport        | how it plays                                                           |
 * | ------------- | ---------------- | ---------------------------------------------------------------------- |
 * | `webrtc_free` | `webrtc_sfu`     | video-free: the sound over WebRTC, the animation track on a data channel, drawn on a canvas |
 * | `ws_fmp4`     | `websocket_fmp4` | fMP4 video through Media Source Extensions                             |
 * | `ws_frames`   | `websocket_fmp4` | the lighter framing, WebCodecs (video)                                 |
 * | `ws_free`     | `websocket_fmp4` | video-free over the media WebSocket, drawn on a canvas                 |
 *
 * Paths: the WebRTC page is forced to relay through coturn, behind the UDP impairment proxy
 * (`testing/udp_proxy.ts`); the WebSocket pages reach the media WebSocket through the TCP impairment proxy
 * (`testing/tcp_proxy.ts`: a lost segment stalls the stream a retransmission timeout, 250 ms). Conditions,
 * both directions: `clean`; `lossy` — 3 % random loss, 40 ± 20 ms one-way jitter; `loss10` — 10 % loss,
 * 40 ms; `cap300` — 300 kbit/s downstream (200 ms queue), 20 ms.
 *
 * Per run the engine speaks `--bursts` bursts, 1.5 s apart, alternately 600 ms of a speech-like test tone
 * (mouth vs sound is measured on these: its mouth follows its loudness) and 600 ms of running speech
 * (espeak-ng's bench sentence: the frozen mouth and the update gap are measured on these — the mouth changes
 * as often as in conversation, so a mouth frozen while the sound plays is the network's doing; the tone held
 * the mouth still for a whole syllable, 330 ms, on a clean path). The page probes every
 * 10 ms the received sound's RMS (the WebRTC receiver's track; the WebCodecs player's output through
 * `audioOutput`; the MSE video element's `captureStream()`) and the mouth's box (dark cavity pixels, on the
 * canvas or on the video's frame). Per burst: **engine chunk → sound out** (the burst handed to the service →
 * its first loud probe: what reaches the page's audio graph, before the device's output latency), **mouth vs
 * sound** (the shift of the mouth's openness that best matches the sound's loudness over the burst, by
 * correlation, in 10 ms steps; + the mouth is late: {@link bestLag}), **longest frozen mouth while the sound
 * plays** (the longest time the mouth's box, as probed, did not change between the burst's first and last
 * loud probe) and beside it the longest time without an animation message (canvas kinds) or a presented
 * frame (video kinds) in that span.
 * WebRTC: **concealed samples** (`concealedSamples / totalSamplesReceived` from `getStats`, over the run).
 * WebSocket: what the player did (`stats()`: stalls, catch-ups, skipped and underrun ms). Every run: the
 * state at its end and reconnects (the session must keep going).
 *
 * Options: `--bursts N` (default 8), `--only kind,kind`, `--conditions c,c`, `--realtime-engine` (each burst
 * sent strictly in real time, a 20 ms chunk once it has been spoken, instead of all at once). Writes
 * `bench/results/network-<time>.json`. Figures depend on the machine's load (recorded with them).
 *
 * @module
 */
import { parseArgs } from "node:util";
import type { Browser, Page } from "playwright-core";
import { loadArtBank } from "../src/media/art_bank.ts";
import { CATALOG } from "../src/media/catalog.ts";
import { launchChromium } from "../testing/browser.ts";
import { speechBurst } from "./engine.ts";
import { speechLike as tone } from "../testing/fake_bridge.ts";
import type { Impairment } from "../testing/impairment.ts";
import { withSfu } from "../testing/sfu.ts";
import { startTcpProxy, type TcpImpairment } from "../testing/tcp_proxy.ts";

/** A burst: 600 ms of running speech at 24 kHz, in 20 ms chunks. */
const SPEECH: Int16Array[] = (() => {
  const pcm = speechBurst(600);
  const out: Int16Array[] = [];
  for (let at = 0; at < pcm.length; at += 480) out.push(pcm.slice(at, at + 480));
  return out;
})();

/** A burst of the speech-like test tone (24 kHz, 20 ms chunks). */
const TONE: Int16Array[] = tone(0.6);

/** The player kinds. */
export const KINDS = ["webrtc_free", "ws_fmp4", "ws_frames", "ws_free"] as const;
type Kind = (typeof KINDS)[number];

/** The network conditions (each direction). */
export const CONDITIONS: Record<string, { udp: Impairment; tcp: TcpImpairment; down?: Impairment }> = {
  clean: { udp: {}, tcp: {} },
  lossy: { udp: { loss: 0.03, delayMs: 40, jitterMs: 20 }, tcp: { loss: 0.03, delayMs: 40, jitterMs: 20 } },
  loss10: { udp: { loss: 0.10, delayMs: 40 }, tcp: { loss: 0.10, delayMs: 40 } },
  cap300: {
    udp: { delayMs: 20 },
    tcp: { delayMs: 20 },
    down: { delayMs: 20, rateKbps: 300, queueMs: 200 },
  },
};

function pct(xs: number[], p: number): number | null {
  if (!xs.length) return null;
  const s = [...xs].sort((a, b) => a - b);
  return Math.round(s[Math.min(s.length - 1, Math.floor(p / 100 * s.length))] * 10) / 10;
}

/**
 * Mouth vs sound in one burst's probes: the shift (ms, −200…+200 by 10) of the mouth's openness (dark
 * pixels above the closed mouth's) that best matches the sound's loudness envelope (Pearson correlation;
 * + the mouth is late). The mouth follows the loudness (the lip sync opens it with the sound's energy), so
 * the whole burst's rises and falls line up at the shift the player shows them apart; null when the mouth
 * never moved.
 */
function bestLag(win: [number, number, number][], closed: number): number | null {
  if (win.length < 20) return null;
  const t = win.map((p) => p[0]),
    rms = win.map((p) => p[1]),
    open = win.map((p) => Math.max(0, p[2] - closed));
  if (Math.max(...open) < 25) return null;
  /** The mouth's openness at time `x` (the nearest probe at or before it). */
  const at = (x: number): number | null => {
    if (x < t[0] || x > t[t.length - 1]) return null;
    let lo = 0, hi = t.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (t[mid] <= x) lo = mid;
      else hi = mid - 1;
    }
    return open[lo];
  };
  let best: { lag: number; r: number } | null = null;
  for (let lag = -200; lag <= 200; lag += 10) {
    const xs: number[] = [], ys: number[] = [];
    for (let i = 0; i < t.length; i++) {
      const y = at(t[i] + lag);
      if (y === null) continue;
      xs.push(rms[i]);
      ys.push(y);
    }
    if (xs.length < 20) continue;
    const mx = xs.reduce((a, b) => a + b, 0) / xs.length, my = ys.reduce((a, b) => a + b, 0) / ys.length;
    let sxy = 0, sxx = 0, syy = 0;
    for (let i = 0; i < xs.length; i++) {
      sxy += (xs[i] - mx) * (ys[i] - my);
      sxx += (xs[i] - mx) ** 2;
      syy += (ys[i] - my) ** 2;
    }
    const r = sxx && syy ? sxy / Math.sqrt(sxx * syy) : 0;
    if (!best || r > best.r) best = { lag, r };
  }
  return best && best.r > 0.3 ? best.lag : null;
}

/** One run's figures. */
export interface RunResult {
  kind: Kind;
  condition: string;
  bursts: number;
  heard: number;
  soundP50: number | null;
  soundP95: number | null;
  mouthVsSoundP50: number | null;
  mouthVsSoundAbsP95: number | null;
  longestFrozenMs: number | null;
  /** The longest time without an animation message (canvas kinds) or a presented frame while the sound plays. */
  longestGapMs: number | null;
  concealedRatio: number | null;
  player: Record<string, unknown>;
  state: string;
  proxy: Record<string, unknown>;
  error?: string;
}

/** The page: the player of `kind`, the probes (every 10 ms), arrivals of animation messages and frames. */
function pageScript(kind: Kind, meta: unknown, clientToken: string, box: unknown): string {
  const canvas = kind === "webrtc_free" || kind === "ws_free";
  return `(async () => {
    const g = globalThis;
    const now = () => performance.timeOrigin + performance.now();
    g.probes = []; g.arrivals = []; g.frames = []; g.pcs = [];
    const NativePc = RTCPeerConnection;
    const keep = (ch) => ch.addEventListener("message", () => g.arrivals.push(now()));
    g.RTCPeerConnection = class extends NativePc {
      constructor(c) { super(c); g.pcs.push(this); this.addEventListener("datachannel", (e) => keep(e.channel)); }
      createDataChannel(l, o) { const ch = super.createDataChannel(l, o); keep(ch); return ch; }
    };
    const NativeWs = WebSocket;
    g.WebSocket = class extends NativeWs {
      constructor(u, p) {
        super(u, p);
        this.addEventListener("message", (e) => {
          if (typeof e.data === "string" && /"type":"(viseme|face|head)"/.test(e.data)) g.arrivals.push(now());
        });
      }
    };
    const { createPlayer } = await import("/sdk/player.js");
    const el = document.createElement(${canvas ? `"canvas"` : `"video"`});
    el.width = 256; el.height = 256;
    document.body.append(el);
    const actx = new AudioContext();
    const analyser = actx.createAnalyser();
    analyser.fftSize = 512;
    const tap = actx.createGain();
    tap.connect(analyser); tap.connect(actx.destination);
    const opts = {
      streamMetadata: ${JSON.stringify(meta)},
      clientToken: ${JSON.stringify(clientToken)},
      microphone: false,
      ${kind === "webrtc_free" ? `iceTransportPolicy: "relay",` : ""}
      ${kind === "ws_fmp4" ? `playback: "mse",` : ""}
      ${kind === "ws_frames" ? `playback: "webcodecs",` : ""}
      ${kind === "ws_frames" || kind === "ws_free" ? "audioContext: actx, audioOutput: tap," : ""}
    };
    opts[${canvas ? `"canvas"` : `"video"`}] = el;
    g.player = createPlayer(opts);
    let source = ${kind === "ws_frames" || kind === "ws_free" ? "true" : "null"};
    const box = ${JSON.stringify(box)};
    const probeCanvas = ${canvas} ? el : new OffscreenCanvas(256, 256);
    const pctx = probeCanvas.getContext("2d", { willReadFrequently: true });
    if (!${canvas} && el.requestVideoFrameCallback) {
      const onFrame = () => { g.frames.push(now()); el.requestVideoFrameCallback(onFrame); };
      el.requestVideoFrameCallback(onFrame);
    }
    const buf = new Float32Array(512);
    setInterval(() => {
      if (!source) {
        let track = null;
        if (${kind === "webrtc_free"}) {
          track = g.pcs.flatMap((pc) => pc.getTransceivers())
          .filter((t) => t.direction === "recvonly").map((t) => t.receiver.track)
            .find((t) => t.kind === "audio" && t.readyState === "live");
        } else if (el.captureStream && !el.paused) {
          track = el.captureStream().getAudioTracks()[0] ?? null;
        }
        if (track) {
          actx.createMediaStreamSource(new MediaStream([track])).connect(analyser);
          source = track;
        }
      }
      analyser.getFloatTimeDomainData(buf);
      let sum = 0;
      for (const x of buf) sum += x * x;
      if (!${canvas}) { if (el.videoWidth) pctx.drawImage(el, 0, 0, 256, 256); else return; }
      const d = pctx.getImageData(box.x, box.y, box.w, box.h).data;
      let dark = 0;
      for (let i = 0; i < d.length; i += 4) {
        const r = d[i], gg = d[i + 1], b = d[i + 2];
        if (r < 110 && gg < 60 && b < 70 && r > gg + 15) dark++;
      }
      g.probes.push([now(), Math.sqrt(sum / buf.length), dark]);
    }, 10);
  })()`;
}

/** Concealed and received audio samples of the page's WebRTC receivers. */
async function concealment(page: Page): Promise<{ concealed: number; total: number }> {
  return await page.evaluate(`(async () => {
    let concealed = 0, total = 0;
    for (const pc of globalThis.pcs) {
      if (pc.connectionState === "closed") continue;
      for (const s of (await pc.getStats()).values()) {
        if (s.type === "inbound-rtp" && s.kind === "audio") {
          concealed += s.concealedSamples ?? 0;
          total += s.totalSamplesReceived ?? 0;
        }
      }
    }
    return { concealed, total };
  })()`) as { concealed: number; total: number };
}

/** Runs every kind on every condition; returns the runs. */
export async function benchNetwork(
  options: { bursts: number; kinds: Kind[]; conditions: string[]; realtimeEngine?: boolean },
): Promise<{ runs: RunResult[]; load: number[]; at: string }> {
  const runs: RunResult[] = [];
  const art = await loadArtBank(CATALOG, 256, 256);
  const b = art.avatars.get(CATALOG.defaultAvatarId)!.mouthBox;
  const box = { x: b.x, y: b.y, w: b.width, h: b.height };
  const load = Deno.loadavg();
  const at = new Date().toISOString();
  await withSfu(async ({ create, fake, base, proxy, h, key }) => {
    const port = Number(new URL(base).port);
    const tcp = await startTcpProxy({ upstream: { host: "127.0.0.1", port }, seed: 7 });
    const browser: Browser = await launchChromium({ media: true, webrtc: true });
    try {
      for (const condition of options.conditions) {
        const c = CONDITIONS[condition];
        proxy!.impair({ up: c.udp, down: c.down ?? c.udp });
        tcp.impair({ up: c.tcp, down: { ...(c.down ?? c.tcp), stallMs: 250 } });
        for (const kind of options.kinds) {
          const r = await runOne(kind, condition);
          runs.push(r);
          console.error(
            `${condition.padEnd(7)} ${
              kind.padEnd(12)
            } sound p50 ${r.soundP50} ms, mouth-sound p50 ${r.mouthVsSoundP50} |p95| ${r.mouthVsSoundAbsP95}, frozen ${r.longestFrozenMs} gap ${r.longestGapMs}, concealed ${r.concealedRatio}, heard ${r.heard}/${r.bursts}, ${r.state}${
              r.error ? ` (${r.error})` : ""
            }`,
          );
        }
      }
    } finally {
      await browser.close();
      await tcp.close();
    }

    async function runOne(kind: Kind, condition: string): Promise<RunResult> {
      const s = await create({ transport: kind === "webrtc_free" ? "webrtc_sfu" : "websocket_fmp4" });
      const meta = { ...s.stream_metadata };
      if (meta.media_url) meta.media_url = meta.media_url.replace(`:${port}/`, `:${tcp.port}/`);
      const engine = fake.of(s.session_id);
      const context = await browser.newContext();
      const page = await context.newPage();
      const udpBefore = proxy!.stats();
      const tcpBefore = tcp.stats();
      const result: RunResult = {
        kind,
        condition,
        bursts: options.bursts,
        heard: 0,
        soundP50: null,
        soundP95: null,
        mouthVsSoundP50: null,
        mouthVsSoundAbsP95: null,
        longestFrozenMs: null,
        longestGapMs: null,
        concealedRatio: null,
        player: {},
        state: "",
        proxy: {},
      };
      try {
        await page.goto(`${base}/docs/errors`);
        await page.evaluate(pageScript(kind, meta, s.client_token, box));
        await page.waitForFunction(`globalThis.player.state().state === "playing"`, undefined, {
          timeout: 30_000,
        });
        await new Promise((r) => setTimeout(r, 1500));
        const c0 = kind === "webrtc_free" ? await concealment(page) : null;
        const starts: number[] = [];
        for (let i = 0; i < options.bursts; i++) {
          const id = `r_${i}`;
          const chunks = i % 2 ? SPEECH : TONE;
          if (options.realtimeEngine) {
            // Strictly in real time: each 20 ms chunk once it has been spoken (the first 20 ms after the
            // response began), nothing announced early; engine → sound from the first chunk sent.
            const t0 = performance.now();
            engine.events.onResponseStarted(id);
            for (let c = 0; c < chunks.length; c++) {
              await new Promise((r) => setTimeout(r, Math.max(0, t0 + 20 * (c + 1) - performance.now())));
              if (c === 0) starts.push(Date.now());
              engine.events.onAudio(chunks[c], id);
            }
          } else {
            starts.push(Date.now());
            engine.events.onResponseStarted(id);
            for (const chunk of chunks) engine.events.onAudio(chunk, id);
          }
          engine.events.onResponseDone(id, "completed");
          await new Promise((r) => setTimeout(r, 1500));
        }
        await new Promise((r) => setTimeout(r, 1000));
        if (c0) {
          const c1 = await concealment(page);
          result.concealedRatio = c1.total > c0.total
            ? Math.round((c1.concealed - c0.concealed) / (c1.total - c0.total) * 10000) / 10000
            : null;
        }
        const data = await page.evaluate(
          `({ probes: globalThis.probes, arrivals: globalThis.arrivals, frames: globalThis.frames, stats: globalThis.player.stats(), state: globalThis.player.state().state })`,
        ) as {
          probes: [number, number, number][];
          arrivals: number[];
          frames: number[];
          stats: Record<string, unknown>;
          state: string;
        };
        const sound: number[] = [], av: number[] = [], frozen: number[] = [], gaps: number[] = [];
        const marks = kind === "webrtc_free" || kind === "ws_free" ? data.arrivals : data.frames;
        for (const [b, t0] of starts.entries()) {
          const speechBurst = b % 2 === 1;
          const quiet = data.probes.filter((p) => p[0] >= t0 - 400 && p[0] < t0).map((p) => p[2]);
          const closed = quiet.length ? pct(quiet, 50)! : 0;
          const win = data.probes.filter((p) => p[0] >= t0 && p[0] < t0 + 1400);
          const loud = win.filter((p) => p[1] > 0.02);
          if (!loud.length) continue;
          const onset = loud[0][0], end = loud[loud.length - 1][0];
          sound.push(onset - t0);
          if (!speechBurst) {
            const lag = bestLag(win, closed);
            if (lag !== null) av.push(lag);
            continue;
          }
          const inside = [onset, ...marks.filter((m) => m > onset && m < end), end];
          let gap = 0;
          for (let i = 1; i < inside.length; i++) gap = Math.max(gap, inside[i] - inside[i - 1]);
          gaps.push(gap);
          // The mouth as shown: the longest time its box did not change while the sound played.
          const shown = win.filter((p) => p[0] >= onset && p[0] <= end);
          let held = 0, since = onset;
          for (let i = 1; i < shown.length; i++) {
            if (shown[i][2] !== shown[i - 1][2]) since = shown[i][0];
            held = Math.max(held, shown[i][0] - since);
          }
          frozen.push(held);
        }
        result.heard = sound.length;
        result.soundP50 = pct(sound, 50);
        result.soundP95 = pct(sound, 95);
        result.mouthVsSoundP50 = pct(av, 50);
        result.mouthVsSoundAbsP95 = pct(av.map(Math.abs), 95);
        result.longestFrozenMs = frozen.length ? Math.round(Math.max(...frozen)) : null;
        result.longestGapMs = gaps.length ? Math.round(Math.max(...gaps)) : null;
        const st = data.stats;
        result.player = {
          stalls: st.stalls,
          catchUps: st.catchUps,
          skippedMs: st.skippedMs,
          audioUnderrunMs: st.audioUnderrunMs,
          reconnects: st.reconnects,
          playback: st.playback,
          latencyMs: st.latencyMs,
        };
        result.state = data.state;
        const got = await h.req("GET", `/v1/sessions/${s.session_id}`, { key });
        result.state += `/${got.body.status}`;
      } catch (err) {
        result.error = String(err).slice(0, 200);
        result.state = String(await page.evaluate(`globalThis.player?.state().state`).catch(() => "?"));
      } finally {
        const u = proxy!.stats(), t = tcp.stats();
        result.proxy = kind === "webrtc_free"
          ? {
            udpDownSent: u.down.sent - udpBefore.down.sent,
            udpDownLost: u.down.lost - udpBefore.down.lost,
            udpDownQueueDropped: u.down.queueDropped - udpBefore.down.queueDropped,
          }
          : {
            tcpDownStalls: t.down.stalls - tcpBefore.down.stalls,
            tcpDownKbytes: Math.round((t.down.bytes - tcpBefore.down.bytes) / 1000),
          };
        await page.evaluate(`globalThis.player?.close()`).catch(() => {});
        await context.close();
        await h.req("POST", `/v1/sessions/${s.session_id}/end`, { key });
      }
      return result;
    }
  }, { impair: { seed: 3 } });
  return { runs, load, at };
}

/** The results as a markdown table. */
export function networkTable(r: { runs: RunResult[] }): string {
  const rows = [
    "| condition | player | engine → sound p50 / p95 (ms) | mouth − sound p50, \\|p95\\| (ms) | longest frozen mouth / update gap (ms) | concealed | player did | end state |",
    "|---|---|---|---|---|---|---|---|",
  ];
  for (const x of r.runs) {
    const p = x.player as Record<string, number>;
    const did = x.kind === "webrtc_free"
      ? `reconnects ${p.reconnects ?? "–"}`
      : `stalls ${p.stalls ?? "–"}, catch-ups ${p.catchUps ?? "–"}, skipped ${
        p.skippedMs ?? "–"
      } ms, underrun ${p.audioUnderrunMs ?? "–"} ms, reconnects ${p.reconnects ?? "–"}`;
    rows.push(
      `| ${x.condition} | ${x.kind} | ${x.soundP50 ?? "–"} / ${
        x.soundP95 ?? "–"
      } (${x.heard}/${x.bursts} heard) | ${x.mouthVsSoundP50 ?? "–"}, ${x.mouthVsSoundAbsP95 ?? "–"} | ${
        x.longestFrozenMs ?? "–"
      } / ${x.longestGapMs ?? "–"} | ${
        x.concealedRatio === null ? "–" : `${(x.concealedRatio * 100).toFixed(1)} %`
      } | ${did} | ${x.error ? `error: ${x.error.slice(0, 60)}` : x.state} |`,
    );
  }
  return rows.join("\n");
}

if (import.meta.main) {
  const { values } = parseArgs({
    args: Deno.args,
    options: {
      bursts: { type: "string", default: "8" },
      only: { type: "string" },
      conditions: { type: "string" },
      "realtime-engine": { type: "boolean", default: false },
    },
  });
  const kinds = (values.only?.split(",") ?? [...KINDS]) as Kind[];
  const conditions = values.conditions?.split(",") ?? Object.keys(CONDITIONS);
  for (const k of kinds) if (!KINDS.includes(k)) throw new Error(`unknown kind ${k}`);
  for (const c of conditions) if (!CONDITIONS[c]) throw new Error(`unknown condition ${c}`);
  const started = Date.now();
  const r = await benchNetwork({
    bursts: Number(values.bursts),
    kinds,
    conditions,
    realtimeEngine: values["realtime-engine"],
  });
  console.log(
    `network bench${values["realtime-engine"] ? " (strictly real-time engine)" : ""}, ${r.at}, load ${
      r.load.map((x) => x.toFixed(2)).join(" ")
    }, ${Math.round((Date.now() - started) / 1000)} s`,
  );
  console.log(networkTable(r));
  await Deno.mkdir("bench/results", { recursive: true });
  const file = `bench/results/network-${r.at.replace(/[:.]/g, "-")}.json`;
  await Deno.writeTextFile(file, JSON.stringify(r, null, 2));
  console.log(`wrote ${file}`);
}
