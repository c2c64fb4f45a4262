// @ts-check
/**
 * The WebCodecs player's clock: the avatar's sound, played by an AudioWorklet on an AudioContext.
 *
 * The model (docs/media-plane.md, "The player's clock"): every medium is stamped on the session's
 * timeline (ms, the server's media clock). The player picks an **anchor** `A`: timeline instant `T` is
 * *heard* at `T + A` on the page's clock (`performance.now()`). The worklet plays each decoded audio chunk
 * at exactly the audio frame that will leave the device at that time — it reads where the device is from
 * `AudioContext.getOutputTimestamp()`, or from the context's render position and an output latency taken as
 * given where asking is not safe (Firefox on Linux, {@link assumedOutputLatency}) — and the video presenter
 * shows frame `T` when this clock says `T` is being heard ({@link AudioClock.now}). So sound and picture
 * follow one clock; if the audio device's crystal drifts from the page's clock, the worklet slews (plays up
 * to 0.2 % faster or slower) to stay on the anchor, and latency does not creep. Moving the anchor (the
 * player decides when) jumps: later inserts silence, earlier skips audio, with a short fade either way.
 *
 * Without sound (the context is suspended because autoplay was refused, or there is no audio at all) the
 * same anchor runs on the page's clock, so a no-audio or no-video mode uses the same path.
 *
 * @module
 */

/** The worklet processor's name. */
const PROCESSOR = "avatar-playout";

/** Jumps shorter than this (ms) are slewed instead (absorbs drift and measurement noise). */
export const SLEW_BELOW_MS = 12;
/** Largest speed change while slewing (fraction). */
const MAX_SLEW = 0.002;
/** Fade-in after a jump (ms). */
const FADE_MS = 4;

/**
 * The worklet's code: a timeline-stamped PCM queue played on an origin that slews or jumps. Exported for its
 * test (it runs in an AudioWorkletGlobalScope: `sampleRate`, `currentFrame`, `registerProcessor`).
 *
 * It never outputs a non-finite sample: a chunk is read only while the instant read is inside it (the
 * instant is fractional — the origin is — and so may a chunk's end be: reading past it gave `undefined`, NaN
 * out), a gain that is not a finite number is ignored and a non-finite sample plays as silence.
 */
export const WORKLET = `
class AvatarPlayout extends AudioWorkletProcessor {
  constructor(options) {
    super();
    const o = options.processorOptions;
    this.ratio = o.rate / sampleRate;          // timeline samples per context frame
    this.chunks = [];                           // { start, data } (timeline samples), sorted, no overlap
    this.origin = null;                         // context frame where timeline sample 0 plays
    this.target = null;
    this.slewFrames = o.slewBelowMs * sampleRate / 1000;
    this.maxSlew = o.maxSlew * 128;
    this.fadeLen = Math.round(o.fadeMs * sampleRate / 1000);
    this.fade = 0;
    this.gain = 1;
    this.underrun = 0; this.played = 0; this.jumps = 0;
    this.quanta = 0;
    this.port.onmessage = (e) => {
      const m = e.data;
      if (m.type === "pcm") this.add(m.start, m.data);
      else if (m.type === "origin") {
        this.target = m.origin;
        if (this.origin === null || m.jump || Math.abs(this.target - this.origin) > this.slewFrames) {
          if (this.origin !== null) { this.jumps++; this.fade = this.fadeLen; }
          this.origin = this.target;
        }
      } else if (m.type === "gain" && Number.isFinite(m.gain)) this.gain = m.gain;
      else if (m.type === "clear") this.chunks = [];
    };
  }
  add(start, data) {
    const c = this.chunks;
    const last = c[c.length - 1];
    if (last && start < last.start + last.data.length) {
      const cut = last.start + last.data.length - start;
      if (cut >= data.length) return;
      data = data.subarray(Math.ceil(cut)); start += Math.ceil(cut);
    }
    if (!last || start >= last.start) c.push({ start, data });
    else { let i = c.length; while (i > 0 && c[i - 1].start > start) i--; c.splice(i, 0, { start, data }); }
    if (c.length > 2000) c.splice(0, c.length - 2000);
  }
  sampleAt(tau) {
    const c = this.chunks;
    while (c.length && c[0].start + c[0].data.length <= tau) c.shift();
    const a = c[0];
    if (!a || tau < a.start) return null;
    const x = tau - a.start, k = Math.floor(x), f = x - k;
    const s0 = a.data[k];
    let s1 = s0;
    if (k + 1 < a.data.length) s1 = a.data[k + 1];
    else if (c[1] && c[1].start === a.start + a.data.length) s1 = c[1].data[0];
    return s0 + (s1 - s0) * f;
  }
  process(_inputs, outputs) {
    const out = outputs[0];
    const ch0 = out[0];
    if (this.origin !== null && this.target !== null && this.target !== this.origin) {
      const d = this.target - this.origin;
      this.origin += Math.max(-this.maxSlew, Math.min(this.maxSlew, d));
    }
    for (let i = 0; i < ch0.length; i++) {
      let v = 0;
      if (this.origin !== null) {
        const tau = (currentFrame + i - this.origin) * this.ratio;
        const s = tau >= 0 ? this.sampleAt(tau) : null;
        if (s === null || !Number.isFinite(s)) this.underrun++; else { v = s; this.played++; }
        if (this.fade > 0) { v *= 1 - this.fade / this.fadeLen; this.fade--; }
      }
      ch0[i] = v * this.gain;
    }
    for (let c = 1; c < out.length; c++) out[c].set(ch0);
    if (++this.quanta % 16 === 0) {
      const last = this.chunks[this.chunks.length - 1];
      this.port.postMessage({
        frame: currentFrame + ch0.length, origin: this.origin, underrun: this.underrun, played: this.played,
        jumps: this.jumps, queuedUntil: last ? last.start + last.data.length : null,
      });
    }
    return true;
  }
}
registerProcessor("${PROCESSOR}", AvatarPlayout);
`;

/**
 * @typedef {object} AudioClockOptions
 * @property {AudioContext} [context] The context to play in (default: a new one, "interactive", 48 kHz).
 * @property {AudioNode} [output] Where the avatar's sound goes (default: the context's destination). An app
 *   can route it through its own graph (effects, a visualiser, a recorder).
 * @property {number} [rate] Sample rate of the PCM pushed (default 48000, Opus's).
 * @property {number | "read"} [outputLatencyMs] How long after the context renders a sample it is heard (ms):
 *   given, the clock never asks the context (`outputLatency`, `getOutputTimestamp()`); `"read"`: it asks, in
 *   Firefox on Linux too; by default it asks except there ({@link assumedOutputLatency}).
 */

/**
 * @typedef {object} AudioClockStats
 * @property {number} underrunMs Audio played as silence because it was not there in time (ms).
 * @property {number} playedMs Audio played (ms).
 * @property {number} jumps Times the anchor jumped.
 * @property {boolean} running Whether the sound plays (the context runs).
 */

/**
 * @typedef {object} AudioClock
 * @property {AudioContext} context
 * @property {() => boolean} running Whether the context runs (sound plays and drives the clock).
 * @property {() => number} now The timeline instant (ms) heard now (once anchored).
 * @property {() => number} toldNow The timeline instant (ms) heard now by the anchor last set: where the
 *   worklet plays by the time it takes a chunk pushed now (it takes the anchor's move first, in order), where
 *   {@link AudioClock.now} is where it plays until then.
 * @property {(t: number) => number} heardAt The page time (`performance.now()`) at which timeline `t` is
 *   heard.
 * @property {() => number | null} anchor The anchor `A` (ms): timeline `T` is heard at `T + A`.
 * @property {(a: number, jump?: boolean) => void} setAnchor Moves the anchor (small moves are slewed
 *   unless `jump`).
 * @property {() => number} renderAheadMs How long before being heard the worklet plays a sample (the
 *   context's base and output latency): audio must be there this early.
 * @property {(startMs: number, pcm: Float32Array) => void} push A chunk of decoded audio starting at
 *   timeline `startMs`.
 * @property {(volume: number, muted: boolean) => void} setVolume
 * @property {() => Promise<boolean>} resume Tries to start a suspended context (after a user gesture);
 *   resolves with whether it runs.
 * @property {() => AudioClockStats} stats
 * @property {() => void} close
 */

/**
 * What an output timestamp leaves out of when its sample is heard (ms). Chromium stamps the sample the
 * device plays now (`contextTime` behind `currentTime` by the output path, `performanceTime` about now);
 * Firefox (ESR 153, on a sound server) moves both back by its output latency — a sample rendered
 * `outputLatency` ago, stamped as heard then — so its stamps put every sample that much early (36 ms on a
 * PulseAudio sink, measured): its stamp is known by the page time moved as far as the context time.
 * Exported for its test.
 * @param {{ currentTime: number; outputLatency?: number }} ctx
 * @param {{ contextTime?: number; performanceTime?: number }} ts
 * @param {number} now page time when `ts` was read (ms)
 */
export function unstampedLatency(ctx, ts, now) {
  if (ts.contextTime === undefined || ts.performanceTime === undefined) return 0;
  const lead = (ctx.currentTime - ts.contextTime) * 1000;
  return lead > 1 && Math.abs(now - ts.performanceTime - lead) < 1 ? lead : 0;
}

/**
 * The output latency (ms) the clock assumes where asking the browser for it is not safe: Firefox on Linux,
 * whose first read of `outputLatency` (or `getOutputTimestamp()`, computed from it) can deadlock the page and
 * every page's sound on a PulseAudio client (docs/media-plane.md, "In Firefox"). Measured there, on a
 * PulseAudio null sink (7 Dec): the sound server's account of Firefox's stream just after each write, when
 * the context's `currentTime` moves on — 46–48 ms at 8 launches (between writes it drains to 18–31 ms, and
 * Firefox's own answer, one reading kept, fell anywhere in 32.7–54.4).
 */
export const ASSUMED_FIREFOX_LINUX_LATENCY_MS = 47;

/**
 * The output latency the clock takes as given instead of asking the browser (ms), or null to ask: the
 * player's `outputLatencyMs` option when a number; with `"read"`, null; by default
 * {@link ASSUMED_FIREFOX_LINUX_LATENCY_MS} in Firefox on Linux (not Android's: another sound backend) and
 * null elsewhere. Exported for its test.
 * @param {number | "read" | undefined} option
 * @param {string} userAgent
 * @returns {number | null}
 */
export function assumedOutputLatency(option, userAgent) {
  if (typeof option === "number") return option;
  if (option === "read") return null;
  return /Firefox\//.test(userAgent) && /Linux/.test(userAgent) && !/Android/.test(userAgent)
    ? ASSUMED_FIREFOX_LINUX_LATENCY_MS
    : null;
}

/** Output-timestamp readings the device's offset is taken from (one every {@link READ_EVERY_MS}). */
const DEVICE_READINGS = 30;
const READ_EVERY_MS = 100;

/**
 * The device's offset (page time − device time of the sample being heard, ms) from recent readings of
 * `getOutputTimestamp()`: their 10th percentile (the third least of 30). A reading is late, not early:
 * Chromium's pairs the two times of one audio callback (200 readings within 0.5 ms of each other, measured),
 * but Firefox's pairs the context time of its last callback with a page time of now, so a reading taken
 * between two callbacks is late by the time since the last one (on a PulseAudio sink its readings spread
 * over ~19 ms, a callback's block: in windows of 30, the median 7–14 ms above the second least). Their median
 * put Firefox's sound half a block late and moved with the readings; the least readings are those taken
 * nearest a callback (not the very least: two stray readings, 17 and 31 ms below the rest, were seen in 200).
 * Exported for its test.
 * @param {number[]} readings
 */
export function deviceOffsetFrom(readings) {
  const sorted = [...readings].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 10)];
}

/**
 * Creates the clock: loads the worklet into the context (resolves once it can play).
 * @param {AudioClockOptions} [options]
 * @returns {Promise<AudioClock>}
 */
export async function createAudioClock(options = {}) {
  const rate = options.rate ?? 48000;
  let owned = false;
  let context = options.context;
  if (!context) {
    owned = true;
    try {
      context = new AudioContext({ latencyHint: "interactive", sampleRate: rate });
    } catch {
      context = new AudioContext({ latencyHint: "interactive" });
    }
  }
  const ctx = context;
  const url = URL.createObjectURL(new Blob([WORKLET], { type: "text/javascript" }));
  try {
    await ctx.audioWorklet.addModule(url);
  } finally {
    URL.revokeObjectURL(url);
  }
  const node = new AudioWorkletNode(ctx, PROCESSOR, {
    numberOfInputs: 0,
    numberOfOutputs: 1,
    outputChannelCount: [1],
    processorOptions: { rate, slewBelowMs: SLEW_BELOW_MS, maxSlew: MAX_SLEW, fadeMs: FADE_MS },
  });
  node.connect(options.output ?? ctx.destination);
  if (ctx.state === "suspended") await Promise.race([ctx.resume(), new Promise((r) => setTimeout(r, 200))]);

  /** Anchor A (ms), null until set. */
  /** @type {number | null} */
  let anchor = null;
  /** Page time minus the audio device's time of the sample being heard (ms), from recent readings. */
  /** @type {number | null} */
  let deviceOffset = null;
  /** @type {number[]} */
  const readings = [];
  /** The worklet's last report. */
  let state = { frame: 0, origin: /** @type {number | null} */ (null), underrun: 0, played: 0, jumps: 0 };
  /** The origin the worklet was last told (context frames). */
  /** @type {number | null} */
  let origin = null;
  node.port.onmessage = (e) => {
    state = e.data;
  };

  const running = () => ctx.state === "running";

  /** The output latency taken as given (ms), or null: asked of the context. */
  const assumed = assumedOutputLatency(
    options.outputLatencyMs,
    globalThis.navigator?.userAgent ?? "",
  );

  /**
   * Samples `getOutputTimestamp()`: page time − device time of the sample being heard (ms). With the latency
   * assumed, the context's render position heard that much after now (what Firefox's stamp amounts to,
   * {@link unstampedLatency}; a reading between two audio callbacks is late as Firefox's are).
   */
  const readDevice = () => {
    if (!running()) return;
    if (assumed !== null) {
      readings.push(performance.now() - ctx.currentTime * 1000 + assumed);
      if (readings.length > DEVICE_READINGS) readings.shift();
      deviceOffset = deviceOffsetFrom(readings);
      return;
    }
    const ts = ctx.getOutputTimestamp?.();
    if (!ts || ts.contextTime === undefined || ts.performanceTime === undefined || !ts.performanceTime) {
      return;
    }
    readings.push(ts.performanceTime - ts.contextTime * 1000 + unstampedLatency(ctx, ts, performance.now()));
    if (readings.length > DEVICE_READINGS) readings.shift();
    deviceOffset = deviceOffsetFrom(readings);
  };

  /** Tells the worklet where timeline sample 0 plays (context frames). */
  const sendOrigin = (/** @type {boolean} */ jump) => {
    if (anchor === null || deviceOffset === null) return;
    // Timeline T (ms) is heard at page time T + A, i.e. at device time T + A − deviceOffset.
    const next = (anchor - deviceOffset) * ctx.sampleRate / 1000;
    if (!jump && origin !== null && Math.abs(next - origin) < 0.5) return;
    origin = next;
    node.port.postMessage({ type: "origin", origin: next, jump });
  };

  const timer = setInterval(() => {
    readDevice();
    sendOrigin(false);
  }, READ_EVERY_MS);
  readDevice();

  return {
    context: ctx,
    running,
    now() {
      const t = performance.now();
      if (anchor === null) return -Infinity;
      if (running() && deviceOffset !== null && state.origin !== null && origin !== null) {
        // Where the worklet really is (it may be slewing towards the origin it was told).
        const lag = (state.origin - origin) * 1000 / ctx.sampleRate;
        return t - anchor - lag;
      }
      return t - anchor;
    },
    toldNow: () => anchor === null ? -Infinity : performance.now() - anchor,
    heardAt(t) {
      if (anchor === null) return NaN;
      const lag = running() && state.origin !== null && origin !== null
        ? (state.origin - origin) * 1000 / ctx.sampleRate
        : 0;
      return t + anchor + lag;
    },
    anchor: () => anchor,
    setAnchor(a, jump = false) {
      const first = anchor === null;
      anchor = a;
      if (deviceOffset === null) readDevice();
      sendOrigin(jump || first);
    },
    renderAheadMs() {
      const base = (ctx.baseLatency ?? 0) * 1000;
      const out = assumed ?? (ctx.outputLatency ?? 0) * 1000;
      return base + out + 128_000 / ctx.sampleRate;
    },
    push(startMs, pcm) {
      // Whole samples: a timestamp's microsecond rounding is no sub-sample position, and chunks that follow
      // each other then meet exactly (the interpolation reads across them).
      node.port.postMessage({ type: "pcm", start: Math.round(startMs * rate / 1000), data: pcm }, [
        pcm.buffer,
      ]);
    },
    setVolume(volume, muted) {
      node.port.postMessage({ type: "gain", gain: muted ? 0 : Math.max(0, Math.min(1, volume)) });
    },
    async resume() {
      if (!running()) await ctx.resume().catch(() => {});
      if (running()) {
        readings.length = 0;
        readDevice();
        sendOrigin(true);
      }
      return running();
    },
    stats() {
      return {
        underrunMs: state.underrun * 1000 / ctx.sampleRate,
        playedMs: state.played * 1000 / ctx.sampleRate,
        jumps: state.jumps,
        running: running(),
      };
    },
    close() {
      clearInterval(timer);
      node.port.onmessage = null;
      node.disconnect();
      if (owned) void ctx.close().catch(() => {});
    },
  };
}
