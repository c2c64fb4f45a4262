// @ts-check
/**
 * The `websocket_fmp4` player's WebCodecs path: no media buffer to hide behind. `./player.js` uses it
 * wherever the browser has WebCodecs (`VideoDecoder`, `AudioDecoder`, an `AudioWorklet`), and Media
 * Source Extensions elsewhere; the app sees the same player either way.
 *
 * - **Receiving**: the media WebSocket's stream, in the lighter framing when the service offers it (the
 *   subprotocol `avatar-media.frames.v0`), else fMP4 (`./player_demux.js` reads both).
 * - **Sound**: Opus packets → `AudioDecoder` → PCM on the audio clock (`./player_clock.js`): timeline
 *   instant `T` is heard at `T + A` (`A`, the anchor).
 * - **Picture**: H.264 → `VideoDecoder` → `VideoFrame`s, each presented when the audio clock says its
 *   instant is being heard (minus the measured time the page takes to display a frame), in the app's
 *   `<video>` (through a `MediaStreamTrackGenerator`, or a canvas stream where that is missing).
 * - **Latency**: `A` is as small as the measured lateness of what arrives allows — the video frames (made
 *   at their instant, then encoded, sent and decoded), the audio (it must reach the worklet before the
 *   device plays it) and, video-free, the animation track's stamps (in before their picture is drawn) — plus
 *   a small guard; it rises at once when media comes later, and falls back (by
 *   skipping, in a quiet moment) when there is room to spare. After a network stall nothing is played
 *   late: what is past is skipped, and playback resumes at the live edge with the latency it had.
 * - **Measures** (reported in `stats()` and to the service): frame made → presented, the mouth vs its
 *   sound (`./player_av.js`: a sound start heard, from the audio clock, against the first shown frame whose
 *   mouth — read from the frame's pixels in the mouth's box of the avatar's art — is open; the video-free
 *   drawer reports its pictures through `canvasShown`), stalls, catch-ups, time to the first frame.
 *
 * Audio only (no `video`): the same clock and anchor; nothing is presented. Protocol and clock model:
 * docs/media-plane.md.
 *
 * @module
 */
import { createAudioClock, SLEW_BELOW_MS } from "./player_clock.js";
import { createAvMeter } from "./player_av.js";
import { createDisplayModel } from "./player_display.js";
import {
  FRAMES_SUBPROTOCOL,
  fromBase64,
  parseFrame,
  parseInitSegment,
  parseMediaSegment,
} from "./player_demux.js";

/** Media silent this long (ms) is a stall. */
const STALL_MS = 200;
/** A tick this long (ms) after the previous one found a busy page: only this much of its wait is watched. */
const BUSY_TICK_MS = 100;
/** Added to the measured lateness of media (ms). */
const GUARD_MS = 6;
/** Window of lateness measures the anchor follows (ms). */
const WINDOW_MS = 3000;
/** For this long after the first live frame, the anchor follows the last {@link SETTLE_WINDOW_MS} only. */
const SETTLE_MS = 1500;
/** Window of lateness measures while settling (the page is busy starting up: decoders, audio) (ms). */
const SETTLE_WINDOW_MS = 400;
/**
 * After a stall, lateness is not measured until playback is back at the live edge (plus this), or for at
 * most {@link RECOVERY_IGNORE_MAX_MS}: the backlog arrives late by nature (ms).
 */
const RECOVERY_IGNORE_MS = 300;
const RECOVERY_IGNORE_MAX_MS = 2000;
/** The anchor is lowered only by at least this much (ms), in a quiet moment. */
const LOWER_STEP_MS = 8;
/** ...at most this often once settled (ms)... */
const LOWER_EVERY_MS = 500;
/** ...and by at most this much at a time (ms), unless it is this far behind. */
const MAX_LOWER_MS = 150;
const FAR_BEHIND_MS = 300;
/** Far behind, the anchor waits at most this long (ms) for a quiet moment to fall in. */
const FAR_WAIT_MS = 1000;
/** ...meanwhile falling by quiet parts of at least this much (ms). */
const FAR_STEP_MS = 40;
/** The anchor rises after this many adjustments in a row found it too small, by at most this much (ms). */
const RAISE_AFTER = 2;
const MAX_RAISE_MS = 100;
/**
 * A raise that only the animation track needs waits for a quiet moment in the sound this many adjustments in
 * a row at most (~2 s; see {@link raiseNow}).
 */
const RAISE_IN_SOUND_AFTER = 8;
/** Quantiles of the lateness the anchor must cover (a later frame is skipped, a later sound is silence). */
const VIDEO_QUANTILE = 0.9;
const AUDIO_QUANTILE = 0.95;
/** A sample louder than this starts a sound (≈ −40 dBFS; the reference renderer's mouth opens at −46). */
const ONSET_LEVEL = 0.01;
/** A decoded sound unit whose RMS is above this is loud (speech): a skip there is heard. */
const LOUD_RMS = 0.01;
/** ...after this much silence (ms). */
const ONSET_QUIET_MS = 120;
/** Sound of the join burst stamped up to this long (ms) before the join is decoded (it may still play). */
const JOIN_DECODE_MS = 60;
/** A sound unit this far (ms) from where the previous one ended does not follow it ({@link soundFollows}). */
const SOUND_GAP_MS = 1;
/**
 * While settling, a sound that reaches the clock late raises the anchor to at most this far behind the
 * service's clock (`anchorMs`, ms): room for a busy start-up or reconnection. Lowered again in pauses
 * ({@link lowerBy}). 250 until 8 Dec, when a fall from far behind still skipped speech at once: a Firefox
 * page busy ~0.5 s at a reconnection (the browser tests two at a time) then skipped 140 ms of the speech
 * after the gap that the ceiling left past.
 */
const MAX_SETTLING_ANCHOR_MS = 400;
/** A frame due longer ago than this (ms) is not shown. */
const MAX_LATE_MS = 80;
/** Samples of each measure kept between two reports. */
const MAX_SAMPLES = 200;
/** Mouth vs sound samples `stats()` gives the median of (one per sound start). */
const AV_RECENT = 9;
/** The least difference between the darkest and the lightest mouth box (luma levels) that shows a mouth. */
const MOUTH_MIN_RANGE = 3;

/**
 * Whether this browser can play the stream with WebCodecs (decoders, an AudioWorklet, and a way to put
 * frames in a `<video>`).
 */
export function webCodecsSupported() {
  const g = /** @type {any} */ (globalThis);
  return typeof g.VideoDecoder === "function" && typeof g.AudioDecoder === "function" &&
    typeof g.EncodedVideoChunk === "function" && typeof g.EncodedAudioChunk === "function" &&
    typeof g.AudioWorkletNode === "function" && typeof g.AudioContext === "function" &&
    (typeof g.MediaStreamTrackGenerator === "function" ||
      (typeof g.HTMLCanvasElement === "function" && "captureStream" in g.HTMLCanvasElement.prototype));
}

/**
 * @typedef {object} SinkEvents
 * @property {() => void} playing The first frame is shown (or, after a stall, frames flow again).
 * @property {() => void} buffering Nothing new to show (a stall).
 * @property {(muted: boolean) => void} muted The sound cannot play until a user gesture (autoplay).
 * @property {(reason: string) => void} unsupported This browser cannot decode the stream after all.
 */

/**
 * @typedef {object} SinkOptions
 * @property {HTMLVideoElement | null} video Where to show the avatar (null: audio only).
 * @property {AudioContext} [audioContext]
 * @property {AudioNode} [audioOutput]
 * @property {number | "read"} [outputLatencyMs] The sound's output latency to take as given (the player's
 *   option; `createAudioClock`).
 * @property {SinkEvents} events
 * @property {(path: string) => Promise<any>} [fetchArt] Fetches the avatar's art document (a path of the
 *   service's origin, from the `hello`): its mouth box is where the frames' mouth is read.
 */

/**
 * How late a unit stamped `t` (timeline ms) came for the anchor to cover — reaching the player at page time
 * `at`: `at − t` —, or null when it is not measured: a unit of the join burst (stamped before the join,
 * `joinT`), or one that came while playback catches up after a stall (before `measureFrom`). The burst — the
 * video since the keyframe, the sound that is not past (from {@link JOIN_DECODE_MS} before the join on, still
 * decoded and played if in time) — arrives at once, late by nature: its units within 60 ms of the join were
 * measured until 6 Dec and set the first anchor 60–85 ms later than the live ones needed, and the settling
 * then skipped that much sound in 3–5 jumps (docs/media-plane.md, "The player's clock"). Exported for its
 * test.
 * @param {number} t @param {number} at @param {number} joinT @param {number} measureFrom
 * @returns {number | null}
 */
export function lateness(t, at, joinT, measureFrom) {
  return t >= joinT && at >= measureFrom ? at - t : null;
}

/**
 * What a player does when media comes again after a stall at page time `arrivedAt`: from when lateness is
 * measured again ({@link lateness}'s `measureFrom`) and since when it is catching up (`recoveringSince`).
 * Playing on its clock (`anchored`), it skips what is past until it shows a frame on time again, and the
 * backlog's lateness is left out until then (at most {@link RECOVERY_IGNORE_MAX_MS}). Before the anchor is
 * set (a gap between the join burst and the live media) nothing is behind — the newest frame is shown at
 * once — and a catch-up, seen only against the anchor, never ends: only the backlog's own arrival
 * ({@link RECOVERY_IGNORE_MS}) is left out of what sets the anchor. (Until 7 Dec it waited the 2 s there, the
 * sound off for as long: seen on a machine whose first media came 0.6 s after the join burst.) Exported for
 * its test.
 * @param {number} arrivedAt @param {boolean} anchored
 * @returns {{ measureFrom: number; recoveringSince: number | null }}
 */
export function afterStall(arrivedAt, anchored) {
  return anchored
    ? { measureFrom: arrivedAt + RECOVERY_IGNORE_MAX_MS, recoveringSince: arrivedAt }
    : { measureFrom: arrivedAt + RECOVERY_IGNORE_MS, recoveringSince: null };
}

/**
 * Whether the media have stalled, seen from a tick at page time `now`: nothing came since `lastMediaAt` for
 * {@link STALL_MS} of the time the page was watching — up to {@link BUSY_TICK_MS} after its previous tick
 * (`previousTick`). A page that was busy (its main thread held, its ticks late) has the messages that came
 * meanwhile queued behind the tick: counting the whole wait could take a busy page for a network stall, and
 * for up to {@link RECOVERY_IGNORE_MAX_MS} after each such "stall" the media's lateness went unmeasured. (Seen
 * 8 Dec with the browser tests two at a time beside a CPU hog: pages counting 5–15 stalls kept their anchor
 * where it was for seconds while late sound was skipped as past, 20–60 ms at a time; the service was starved
 * too there, so some of those stalls were real.) Exported for its test.
 * @param {number} now @param {number} lastMediaAt @param {number} previousTick
 * @returns {boolean}
 */
export function stallSeen(now, lastMediaAt, previousTick) {
  return Math.min(now, previousTick + BUSY_TICK_MS) - lastMediaAt > STALL_MS;
}

/**
 * Where a sound unit stamped `t` stands against the end of the unit decoded before it (`endOfLast`, null
 * before the first): "next" (it follows), "had" (it ends where that one did or earlier: a unit a
 * reconnection's join burst repeats — already decoded, dropped) or "gap" (media went missing between them,
 * or a unit came out of order: the decoder restarts). Chromium's `AudioDecoder` stamps each output from the
 * first input's timestamp plus the samples put out since, whatever the later inputs' timestamps say: after a
 * reconnection's gap every output came that much early (measured 7 Dec: 160 ms), so the sound was skipped as
 * past, or played that far from its picture, for the rest of the connection. Exported for its test.
 * @param {number} t @param {number} duration @param {number | null} endOfLast
 * @returns {"next" | "had" | "gap"}
 */
export function soundFollows(t, duration, endOfLast) {
  if (endOfLast === null || Math.abs(t - endOfLast) <= SOUND_GAP_MS) return "next";
  return t + duration <= endOfLast + SOUND_GAP_MS ? "had" : "gap";
}

/** Nearest-rank median of a list (null when empty). */
const median = (/** @type {number[]} */ xs) => {
  if (!xs.length) return null;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)];
};

/**
 * Whether the anchor is raised now, by `by` ms, when the media come later than it allows (its `adjust`
 * found it too small `wanted` times in a row). While settling, at once. Afterwards after
 * {@link RAISE_AFTER} findings (a moment of lateness — the page or the network busy — is skipped like a
 * stall); a raise above {@link SLEW_BELOW_MS} (the clock's: smaller ones are slewed) jumps, inserting that
 * much silence, so one that neither the sound nor the picture needs — only the video-free player's animation track is late — waits for a quiet
 * moment in the sound, for {@link RAISE_IN_SOUND_AFTER} findings at most: silence inserted in speech is
 * heard as a gap, a mouth drawn a few ms late is not seen (a late video frame is skipped or shown late: its
 * raise does not wait). Measured on the canvas player (`bench:player --paths canvas`, 6 Dec): its raises
 * came from the animation track's lateness and 0–3 of them per 20-burst session jumped in speech; waiting,
 * none did, at the same sync and sound latency (docs/media-plane.md).
 *
 * @param {{ settling: boolean; wanted: number; by: number; mediaNeeds: boolean; quiet: () => boolean }} o
 *   `mediaNeeds`: the sound's or the picture's own lateness needs the raise; `quiet`: the sound is quiet
 *   where the silence would go (asked only when it matters).
 * @returns {boolean}
 */
export function raiseNow(o) {
  if (o.settling) return true;
  if (o.wanted < RAISE_AFTER) return false;
  if (o.by <= SLEW_BELOW_MS || o.mediaNeeds || o.wanted >= RAISE_IN_SOUND_AFTER) return true;
  return o.quiet();
}

/**
 * While the anchor settles, the anchor a sound needs that reaches the clock — decoded and handed over — at
 * page time `now`, stamped `t`, played `renderAheadMs` before it is heard: the new anchor when the current one
 * (`anchor`) is too small for it, else null. The anchor follows how late the sound *arrives*; in the first
 * moments the page also holds the decoder's outputs (the decoders, the audio context, a video-free player's
 * art start up on the same thread), and the start-up's sound reached the clock 100–200 ms after its instant
 * where the anchor allowed 75–90: it was skipped as past or played as silence — a viewer joining a talking
 * avatar missed 170–300 ms of its words with the video-free player (skipped + played as silence, p50 per
 * run; up to 570), 8–21 with the video one (measured, `bench:player` `talking_joins`, 7 Dec). Raised instead (to at most `ceiling`: the page time of the
 * service's timeline 0 + {@link MAX_SETTLING_ANCHOR_MS}), the words play whole, that much later, until the
 * anchor is lowered in their first pause. Exported for its test.
 * @param {number} anchor @param {number} t @param {number} now @param {number} renderAheadMs
 * @param {number} ceiling
 * @returns {number | null}
 */
export function settlingRaise(anchor, t, now, renderAheadMs, ceiling) {
  const next = Math.min(now - t + renderAheadMs + GUARD_MS, ceiling);
  return next > anchor + 1 ? next : null;
}

/**
 * While settling, what the picture (a video frame's lateness + the display's delay) or a video-free player's
 * animation track (a stamp's lateness + how early its picture is drawn) may ask of an anchor already set: at
 * most the sound's own need (`sound`, null when none is measured yet) + {@link MAX_LATE_MS} — a frame that
 * late is still shown, a stamp that late opens the mouth that much late, for the moment the page is busy.
 * Until 7 Dec it was unbounded: a reconnection's page busy 150 ms beside two CPU hogs decoded its first
 * frames 490–540 ms after their instants, the anchor was raised for them to ~540 ms behind the service's
 * clock while the sound needed ~200, and when the settling ended it was far behind and lowered at once,
 * skipping 147–374 ms of the speech after the reconnection (5 of 6 runs of
 * `tests/sdk/player_reconnect_browser_test.ts`). A picture late for longer raises it after the settling
 * ({@link raiseNow}). The first anchor takes the picture's need whole (the first frame is shown at once).
 * Exported for its test.
 * @param {number} need @param {number | null} sound @param {boolean} settling @param {boolean} anchored
 * @returns {number}
 */
export function settlingPictureNeed(need, sound, settling, anchored) {
  return settling && anchored && sound !== null ? Math.min(need, sound + MAX_LATE_MS) : need;
}

/**
 * How far (ms) the anchor is lowered now, skipping sound, when it has `step` ms to spare: the whole step
 * where the sound is quiet (the skip is not heard) — while settling in any quiet moment, afterwards every
 * {@link LOWER_EVERY_MS} at most —; far behind, by as much as is quiet (at least {@link FAR_STEP_MS}: the
 * pauses of speech are shorter than the excess), or all of it at once once it has been far behind for
 * {@link FAR_WAIT_MS} (catching up beats waiting longer for a pause). Until 6 Dec the settling
 * (the first 1.5 s) lowered at once: a viewer joining a talking avatar had the first anchor's excess — the
 * start-up's late units, 22–58 ms in 1–4 jumps per session (measured, `bench:player --paths
 * canvas,webcodecs`) — skipped out of the speech (1–3 falls inside speech in 3 of 4 sessions of a run joining
 * speech); now that speech plays whole, as much later, until its first pause (none in 4). Far behind, at
 * once while settling too: for a few hours of 7 Dec far behind waited for a quiet moment while settling, and
 * a video-free player's start on a busy page (its first sound arriving 340–580 ms after its instant, the
 * anchor raised that far) played the greeting half a second late for the whole settling, then skipped it
 * anyway; the settling's raise for the picture that had made it wait is bounded instead
 * ({@link settlingPictureNeed}). Until 8 Dec far behind fell at once, in speech too: a reconnection on a
 * starved page (a CI run of 7 Dec) had its anchor raised to 345 ms behind and then lowered to 53 in the middle
 * of a word, 352 ms of speech skipped.
 *
 * @param {{ settling: boolean; step: number; farFor: number | null; sinceLastLower: number;
 *   room: () => number }} o `farFor`: how long (ms) the anchor has been far behind (null: it is not);
 *   `room`: how much of the sound where the skip would go is decoded and quiet (ms; asked only when it
 *   matters).
 * @returns {number} 0: not now.
 */
export function lowerBy(o) {
  if (o.farFor !== null) {
    if (o.farFor >= FAR_WAIT_MS) return o.step;
    const room = Math.min(o.step, o.room());
    return room >= FAR_STEP_MS ? room : 0;
  }
  if (!o.settling && o.sinceLastLower <= LOWER_EVERY_MS) return 0;
  return o.room() >= o.step ? o.step : 0;
}

/**
 * A sliding window of (time, value) measures.
 */
class Window {
  /** @type {{ t: number; v: number }[]} */
  items = [];
  add(/** @type {number} */ t, /** @type {number} */ v) {
    this.items.push({ t, v });
    while (this.items.length && this.items[0].t < t - WINDOW_MS) this.items.shift();
  }
  /** The `p` quantile (0–1) of the values measured since `since` (page time), or null. */
  quantile(/** @type {number} */ p, since = -Infinity) {
    const s = this.items.filter((x) => x.t >= since).map((x) => x.v).sort((a, b) => a - b);
    if (!s.length) return null;
    return s[Math.min(s.length - 1, Math.floor(p * s.length))];
  }
  clear() {
    this.items.length = 0;
  }
}

/**
 * Puts `VideoFrame`s into a `<video>`: a `MediaStreamTrackGenerator`, or a canvas stream.
 * @param {HTMLVideoElement} video
 * @param {(muted: boolean) => void} onMuted
 */
function createPresenter(video, onMuted) {
  const g = /** @type {any} */ (globalThis);
  const play = () => {
    video.play().catch((err) => {
      if (err && err.name === "NotAllowedError" && !video.muted) {
        // Autoplay was refused: start muted (the app can unmute on a click; the sound follows).
        video.muted = true;
        onMuted(true);
        video.play().catch(() => {});
      }
    });
  };
  if (typeof g.MediaStreamTrackGenerator === "function") {
    const track = new g.MediaStreamTrackGenerator({ kind: "video" });
    const writer = track.writable.getWriter();
    video.srcObject = new MediaStream([track]);
    play();
    /** When the write in progress started (page time), or null. */
    let pendingSince = /** @type {number | null} */ (null);
    return {
      /** The element's `mediaTime` is the frame's own timestamp. */
      ownTime: true,
      /**
       * Shows the frame (takes it). While the page has not taken the previous one yet, the frame is
       * dropped and false returned (a write stuck for a second is given up on).
       */
      write(/** @type {VideoFrame} */ frame) {
        const now = performance.now();
        if (pendingSince !== null && now - pendingSince < 1000) {
          frame.close();
          return false;
        }
        pendingSince = now;
        const done = () => pendingSince = null;
        writer.write(frame).then(done, done);
        return true;
      },
      close() {
        void writer.close().catch(() => {});
        track.stop();
        // The stream ended: the element keeps the last picture and its clock stops.
        video.pause();
      },
    };
  }
  const canvas = document.createElement("canvas");
  const ctx = /** @type {CanvasRenderingContext2D} */ (canvas.getContext("2d"));
  video.srcObject = canvas.captureStream();
  play();
  return {
    /**
     * The element's `mediaTime` is the canvas stream's, not the frame's (Firefox): the picture shown is the
     * latest one drawn before the element took it.
     */
    ownTime: false,
    write(/** @type {VideoFrame} */ frame) {
      if (canvas.width !== frame.displayWidth) canvas.width = frame.displayWidth;
      if (canvas.height !== frame.displayHeight) canvas.height = frame.displayHeight;
      ctx.drawImage(frame, 0, 0);
      frame.close();
      return true;
    },
    close() {
      const s = /** @type {MediaStream | null} */ (video.srcObject);
      s?.getTracks().forEach((t) => t.stop());
      video.pause();
    },
  };
}

/**
 * The WebCodecs sink of the `websocket_fmp4` player (see the module documentation).
 * @param {SinkOptions} options
 */
export function createWebCodecsSink(options) {
  const { video, events } = options;
  /** @type {import("./player_demux.js").InitInfo | null} */
  let init = null;
  let framing = "fmp4";
  /** A connection has said hello (media is expected). */
  let receiving = false;
  /** @type {VideoDecoder | null} */
  let videoDecoder = null;
  /** @type {AudioDecoder | null} */
  let audioDecoder = null;
  /** Where the last sound unit handed to the decoder ends (timeline ms; {@link soundFollows}). */
  let soundEnd = /** @type {number | null} */ (null);
  /** @type {{ codec: string; description: Uint8Array } | null} */
  let videoConfig = null;
  let audioChannels = 1;
  let needKey = true;
  /** @type {import("./player_clock.js").AudioClock | null} */
  let clock = null;
  /** @type {Promise<void> | null} */
  let clockReady = null;
  /** Decoded audio waiting for the clock: [startMs, pcm]. */
  /** @type {[number, Float32Array][]} */
  const audioBacklog = [];
  /** Decoded frames waiting to be shown, by timeline time. */
  /** @type {VideoFrame[]} */
  const frames = [];
  /** @type {ReturnType<typeof createPresenter> | null} */
  let presenter = null;
  let closed = false;

  // Clock and latency state (page time, ms).
  /** Page time of timeline 0 as the server's hello says (one-way delay included). */
  let skew = /** @type {number | null} */ (null);
  /** The timeline instant at the latest join (older units are the join burst). */
  let joinT = -Infinity;
  const display = createDisplayModel();
  const videoNeed = new Window();
  const audioNeed = new Window();
  /** While settling: how late the sound reaches the clock, decoded (see {@link settlingRaise}). */
  const clockNeed = new Window();
  /** Video-free: how late the animation track's stamps arrive (arrival − stamp), and how far ahead they are drawn. */
  const animationNeed = new Window();
  let animationAheadMs = 0;
  let lastLower = 0;
  /** @type {number | null} Page time since when the anchor is far behind what the media need (null: not). */
  let farSince = null;
  /** Consecutive adjustments that found the anchor too small. */
  let raiseWanted = 0;
  /** Until when the anchor settles (set with the first live frame). */
  let settleUntil = Infinity;
  /** Timeline instants where a sound starts after a silence (the mouth opens), and the last loud one. */
  /** @type {number[]} */
  const onsets = [];
  let lastLoud = -Infinity;
  /**
   * When frame `f` is due (timeline ms): its instant, or, when a sound starts after a silence within its
   * half frame either side — the frame that first shows it, the mouth opening — that sound's start, so that
   * the mouth opens when the sound is heard (a frame covers 40 ms: its instant alone can be 20 ms off).
   */
  const dueOf = (/** @type {VideoFrame} */ f) => {
    const t = f.timestamp / 1000;
    const half = (f.duration ?? 40000) / 2000;
    for (const o of onsets) if (o > t - half && o <= t + half) return o;
    return t;
  };
  /** Loudness of recent audio chunks: [startMs, endMs, rms]. */
  /** @type {[number, number, number][]} */
  const loudness = [];

  // Stalls.
  let lastMediaAt = performance.now();
  let stalled = false;
  let stallStart = 0;
  /** Lateness is measured again from then (page time). */
  let measureFrom = -Infinity;
  /** @type {number | null} */
  let recoveringSince = null;
  let buffering = false;

  // Measures.
  const counters = {
    audioDecodedMs: 0,
    framesDecoded: 0,
    framesPresented: 0,
    framesDropped: 0,
    stalls: 0,
    stallMs: 0,
    catchUps: 0,
    skippedMs: 0,
    /** Of it, sound that was loud (speech not heard). */
    speechSkippedMs: 0,
    /** @type {number | null} */
    lastCatchUpMs: null,
  };
  /** Counters at the last report. */
  let reported = { ...counters, underrunMs: 0 };
  /** @type {number[]} */
  let latencySamples = [];
  /** @type {number[]} */
  let avSamples = [];
  /** Recent presentation measures for stats(): [pageTime, latency (null: a canvas picture), av]. */
  /** @type {[number, number | null, number | null][]} */
  const recent = [];
  /** The latest mouth vs sound samples, for stats(). */
  /** @type {number[]} */
  const avRecent = [];
  /** Mouth vs sound as shown (`./player_av.js`): the mouths read from the shown frames' pixels. */
  const meter = createAvMeter({ minRange: MOUTH_MIN_RANGE });
  /** The mouth's box of the avatar's art (view-box px) and the view box's width, once known. */
  let mouthArt = /** @type {MouthArt | null} */ (null);
  let artRequested = false;
  /** Moves the meter's finished samples to the report and stats(). */
  const collectAv = (/** @type {number} */ now) => {
    for (const v of meter.take(now)) {
      if (avSamples.length < MAX_SAMPLES) avSamples.push(v);
      avRecent.push(v);
      if (avRecent.length > AV_RECENT) avRecent.shift();
    }
  };
  /**
   * Frames written to the page: timestamp (µs) → page time written, the refresh it waited for (as the display
   * model knew it then), when it was due (timeline ms).
   */
  /** @type {Map<number, { at: number; refreshAt: number; due: number }>} */
  const written = new Map();
  let lastPresentedTs = -1;
  /** The timestamp of the latest frame seen shown (µs). */
  let lastShownTs = -1;
  let firstFrameShown = false;
  /** @type {((at: number) => void) | null} */
  let firstFrameListener = null;
  let lastTickAt = 0;

  // ---- clock ----

  const ensureClock = () => {
    clockReady ??= createAudioClock({
      context: options.audioContext,
      output: options.audioOutput,
      outputLatencyMs: options.outputLatencyMs,
    }).then(
      (c) => {
        if (closed) {
          c.close();
          return;
        }
        clock = c;
        applyVolume();
        events.muted(!c.running());
        if (!c.running()) startUnlock();
        for (const [t, pcm] of audioBacklog.splice(0)) pushAudio(t, pcm);
      },
      (err) => events.unsupported(`the audio clock could not start: ${err}`),
    );
  };

  const applyVolume = () => {
    if (clock && video) clock.setVolume(video.volume, video.muted);
  };
  const onVolume = () => {
    applyVolume();
    // Unmuting (a click) is the user gesture a suspended context needs.
    if (clock && video && !video.muted && !clock.running()) {
      void clock.resume().then((running) => events.muted(!running));
    }
  };
  video?.addEventListener("volumechange", onVolume);

  // A context autoplay rules keep suspended starts on the page's next user gesture, which a video-free
  // player (no element to unmute) has no other way to get; a muted element keeps its sound off until it is
  // unmuted.
  const UNLOCK_EVENTS = ["pointerdown", "keydown", "touchend", "click"];
  let unlocking = false;
  const onGesture = () => {
    if (!clock || closed || (video && video.muted)) return;
    void clock.resume().then((running) => {
      events.muted(!running);
      if (running) stopUnlock();
    });
  };
  const startUnlock = () => {
    if (unlocking || typeof document === "undefined") return;
    unlocking = true;
    for (const t of UNLOCK_EVENTS) document.addEventListener(t, onGesture, true);
  };
  const stopUnlock = () => {
    if (!unlocking) return;
    unlocking = false;
    for (const t of UNLOCK_EVENTS) document.removeEventListener(t, onGesture, true);
  };

  /** The anchor, once set. */
  const anchor = () => clock?.anchor() ?? null;

  /** The most the settling raises the anchor to for its sound (see {@link settlingRaise}). */
  const settlingCeiling = () => skew === null ? Infinity : skew + MAX_SETTLING_ANCHOR_MS;

  /** Sets the anchor from the lateness measured so far (first time, or when more is needed). */
  const adjustAnchor = (/** @type {number} */ now) => {
    if (!clock) return;
    const settling = now < settleUntil;
    const current = anchor();
    // While settling, the last moments only; afterwards nothing from the (busy) start-up.
    const since = settling ? now - SETTLE_WINDOW_MS : settleUntil - SETTLE_WINDOW_MS;
    const v = videoNeed.quantile(VIDEO_QUANTILE, since);
    const a = audioNeed.quantile(AUDIO_QUANTILE, since);
    // (while settling, also how late the sound reaches the clock: the start-up holds its decoded sound)
    const d = (settling || current === null) ? clockNeed.quantile(AUDIO_QUANTILE, since) : null;
    const parts = [];
    if (a !== null) parts.push(a + clock.renderAheadMs());
    if (d !== null) parts.push(Math.min(d + clock.renderAheadMs(), settlingCeiling() - GUARD_MS));
    /** What the sound needs. */
    const sound = parts.length ? Math.max(...parts) : null;
    const picture = (/** @type {number} */ need) =>
      settlingPictureNeed(need, sound, settling, current !== null);
    if (v !== null) parts.push(picture(v + display.maxDelay()));
    /** What the sound and the picture need, without the animation track. */
    const mediaTarget = parts.length ? Math.max(...parts) + GUARD_MS : null;
    // Video-free: a stamp of the animation track must be in before the picture of its instant is drawn.
    const n = animationNeed.quantile(VIDEO_QUANTILE, since);
    if (n !== null) parts.push(picture(n + animationAheadMs));
    if (!parts.length) return;
    const target = Math.max(...parts) + GUARD_MS;
    if (current === null) {
      clock.setAnchor(target, true);
      return;
    }
    if (target > current + 1) {
      // Media comes later than the anchor allows. A moment of it (the page or the network busy) is
      // skipped like a stall; if it lasts, play later (silence is inserted — where the sound is quiet
      // when only the animation track is late), by steps.
      raiseWanted++;
      const next = Math.min(target, current + MAX_RAISE_MS);
      const from = clock.now();
      const raise = raiseNow({
        settling,
        wanted: raiseWanted,
        by: next - current,
        mediaNeeds: mediaTarget !== null && mediaTarget > current + 1,
        // (silence goes where nothing is decoded yet: no sound is cut)
        quiet: () => loudMs(from, from + next - current + 20) === 0,
      });
      if (raise) clock.setAnchor(next, next - current > SLEW_BELOW_MS);
      return;
    }
    raiseWanted = 0;
    if (target < current - LOWER_STEP_MS) {
      // Room to spare: lower it where the sound is quiet (while settling all of it, later by steps), or
      // at once when far behind.
      const excess = current - target - 2;
      const step = settling ? excess : Math.min(excess, MAX_LOWER_MS);
      const from = clock.now();
      const far = excess > FAR_BEHIND_MS;
      if (!far) farSince = null;
      else farSince ??= now;
      const by = lowerBy({
        settling,
        step,
        farFor: farSince === null ? null : now - farSince,
        sinceLastLower: now - lastLower,
        room: () => quietRoom(from, step + 20) - 20,
      });
      if (by > 0) {
        clock.setAnchor(current - by, true);
        counters.skippedMs += by;
        counters.speechSkippedMs += loudMs(from, from + by);
        lastLower = now;
        if (by === step) farSince = null;
      }
    } else farSince = null;
  };

  /** How much of the decoded audio in [from, to) (timeline ms) is loud (ms). */
  const loudMs = (/** @type {number} */ from, /** @type {number} */ to) => {
    let ms = 0;
    for (const [s, e, rms] of loudness) {
      if (rms > LOUD_RMS) ms += Math.max(0, Math.min(e, to) - Math.max(s, from));
    }
    return ms;
  };

  /**
   * How much of the sound from `from` on (timeline ms) is quiet, up to `max` ms: decoded and quiet, or a hole
   * before the last decoded sound (what a reconnection's gap lost: it never comes, it plays as silence). Sound
   * after the last decoded is not known to be quiet: on a starved page a fall into what was still to be
   * decoded skipped it as past when it came, speech or not. (A CI run of 8 Dec fell 560 ms at once, into a
   * word, after a second far behind: the play position had been in a reconnection's hole, taken for unknown.)
   */
  const quietRoom = (/** @type {number} */ from, /** @type {number} */ max) => {
    let at = from;
    for (const [s, e, rms] of loudness) {
      if (e <= at) continue;
      if (rms > LOUD_RMS) {
        at = Math.max(at, s);
        break;
      }
      at = e;
      if (at >= from + max) break;
    }
    return Math.min(at, from + max) - from;
  };

  // ---- decoding ----

  const setupDecoders = () => {
    if (!init && !videoConfig) return;
    const vc = videoConfig ??
      (init ? { codec: init.video.codec, description: init.video.description } : null);
    if (!vc) return;
    try {
      audioDecoder?.close();
    } catch { /* closed */ }
    try {
      videoDecoder?.close();
    } catch { /* closed */ }
    audioDecoder = new AudioDecoder({
      output: onAudioData,
      error: (e) => {
        audioDecoder = null;
        console.warn("avatar player: audio decoder error", e);
        setupAudioDecoder();
      },
    });
    setupAudioDecoder();
    if (video) {
      videoDecoder = new VideoDecoder({
        output: onVideoFrame,
        error: (e) => {
          console.warn("avatar player: video decoder error", e);
          videoDecoder = null;
          if (!closed) events.unsupported(`the video decoder failed: ${e}`);
        },
      });
      activeVideoConfig = vc;
      configureVideo();
      needKey = true;
    }
  };

  /** @type {{ codec: string; description: Uint8Array } | null} */
  let activeVideoConfig = null;
  const configureVideo = () => {
    if (!videoDecoder || !activeVideoConfig) return;
    videoDecoder.configure({
      codec: activeVideoConfig.codec,
      description: activeVideoConfig.description,
      optimizeForLatency: true,
    });
  };

  const setupAudioDecoder = () => {
    if (closed) return;
    if (!audioDecoder) {
      audioDecoder = new AudioDecoder({
        output: onAudioData,
        error: () => {
          audioDecoder = null;
        },
      });
    }
    audioDecoder.configure({ codec: "opus", sampleRate: 48000, numberOfChannels: audioChannels });
  };

  /** @param {AudioData} data */
  function onAudioData(data) {
    if (closed) {
      data.close();
      return;
    }
    const n = data.numberOfFrames;
    const pcm = new Float32Array(n);
    data.copyTo(pcm, { planeIndex: 0, format: "f32-planar" });
    if (data.numberOfChannels > 1) {
      const other = new Float32Array(n);
      data.copyTo(other, { planeIndex: 1, format: "f32-planar" });
      for (let i = 0; i < n; i++) pcm[i] = (pcm[i] + other[i]) / 2;
    }
    const t = data.timestamp / 1000;
    const rate = data.sampleRate;
    data.close();
    counters.audioDecodedMs += n * 1000 / rate;
    let sum = 0;
    for (let i = 0; i < n; i++) {
      // A decoder's non-finite sample plays as silence (a NaN reaching the output is a click, or mutes it).
      if (!Number.isFinite(pcm[i])) pcm[i] = 0;
      const x = pcm[i];
      sum += x * x;
      if (x > ONSET_LEVEL || x < -ONSET_LEVEL) {
        const at = t + i * 1000 / rate;
        // A sound after a silence: the picture that shows it is shown when it is heard.
        if (at - lastLoud > ONSET_QUIET_MS) {
          onsets.push(at);
          if (onsets.length > 32) onsets.shift();
          // When it is heard: the audio clock's mapping of the device's output timestamps.
          if (clock && anchor() !== null && clock.running()) meter.soundStart(clock.heardAt(at));
        }
        lastLoud = at;
      }
    }
    loudness.push([t, t + n * 1000 / rate, Math.sqrt(sum / Math.max(1, n))]);
    if (loudness.length > 300) loudness.shift();
    if (!clock) {
      audioBacklog.push([t, pcm]);
      if (audioBacklog.length > 200) audioBacklog.shift();
      return;
    }
    pushAudio(t, pcm);
  }

  const pushAudio = (/** @type {number} */ t, /** @type {Float32Array} */ pcm) => {
    const c = /** @type {import("./player_clock.js").AudioClock} */ (clock);
    const now = performance.now();
    // A reconnection's join burst — its sound from JOIN_DECODE_MS before the hello, the words just before the
    // gap — is raised for too (not measured): judged against the anchor of before the gap it was skipped as
    // past, 20–80 ms of speech, before the live sound after it raised the anchor (a busy page, 8 Dec).
    const raisable = now >= measureFrom && t >= joinT - (anchor() === null ? 0 : JOIN_DECODE_MS);
    if (raisable && (now < settleUntil || anchor() === null)) {
      if (t >= joinT) clockNeed.add(now, now - t);
      // The start-up's sound is raised for, not skipped (settlingRaise); before the first anchor (a clock
      // that started after the settling), it is what sets it.
      const current = anchor();
      const raised = current === null
        ? null
        : settlingRaise(current, t, now, c.renderAheadMs(), settlingCeiling());
      if (raised !== null) c.setAnchor(raised, raised - /** @type {number} */ (current) > SLEW_BELOW_MS);
    }
    const a = anchor();
    // Audio already past is skipped (never played late): past where the worklet plays once it has taken the
    // anchor's last move (a raise just made for this very sound is not in the worklet yet, and judged against
    // the worklet's present place the sound it makes room for was skipped).
    if (a !== null && t + pcm.length / 48 < c.toldNow()) {
      // (skipped media is counted on the sound, which is continuous)
      counters.skippedMs += pcm.length / 48;
      counters.speechSkippedMs += loudMs(t, t + pcm.length / 48);
      return;
    }
    if (!video && recoveringSince !== null && a !== null && t >= c.toldNow()) {
      // Video-free, on time again after a stall: its sound is what shows it (a player with a picture, its
      // frames). Until 8 Dec its catch-up never ended, its lateness unmeasured for 2 s after each stall —
      // the anchor left where it was while a starved page's late sound was skipped as past.
      caughtUp(now);
    }
    c.push(t, pcm);
  };

  /** Playback is back at the live edge after a stall (page time `now`): lateness is measured again soon. */
  const caughtUp = (/** @type {number} */ now) => {
    counters.catchUps++;
    counters.lastCatchUpMs = Math.round(now - /** @type {number} */ (recoveringSince));
    recoveringSince = null;
    measureFrom = Math.min(measureFrom, now + RECOVERY_IGNORE_MS);
  };

  /** @param {VideoFrame} frame */
  function onVideoFrame(frame) {
    if (closed) {
      frame.close();
      return;
    }
    counters.framesDecoded++;
    const now = performance.now();
    const t = frame.timestamp / 1000;
    const late = lateness(t, now, joinT, measureFrom);
    if (late !== null) videoNeed.add(now, late);
    // (the first live frame starts the settling and sets the anchor)
    if (t >= joinT && settleUntil === Infinity) settleUntil = now + SETTLE_MS;
    if (anchor() === null && t >= joinT) adjustAnchor(now);
    // Keep them in order (they come in order; a reconnect may repeat a few).
    if (frames.length && frames[frames.length - 1].timestamp >= frame.timestamp) {
      frame.close();
      return;
    }
    frames.push(frame);
    if (frames.length > 50) {
      /** @type {VideoFrame} */ (frames.shift()).close();
      counters.framesDropped++;
    }
    // A canvas stream (Firefox) takes the canvas at the paint of the refresh it is drawn in: drawn in an
    // animation frame, a frame was shown 14–18 ms later (507 of 544, measured in a bench run); drawn between
    // two refreshes, it waited for the next paint, 19–31 ms (114 of 132), a refresh later than the display
    // model places it. Drawn on decode, it is shown no sooner than drawn in the next animation frame: there,
    // frames are drawn in animation frames only.
    if (!presenter || presenter.ownTime) present();
  }

  /** @param {import("./player_demux.js").DemuxedSegment} seg @param {number} arrivedAt */
  const decode = (seg, arrivedAt) => {
    for (const s of seg.samples) {
      if (seg.kind === "video") {
        if (!videoDecoder || videoDecoder.state !== "configured") continue;
        if (needKey && !s.key) continue;
        needKey = false;
        if (s.key && recoveringSince !== null && videoDecoder.decodeQueueSize > 2) {
          // Catching up after a stall with frames still to decode: they are past; start again here.
          videoDecoder.reset();
          configureVideo();
        }
        videoDecoder.decode(
          new EncodedVideoChunk({
            type: s.key ? "key" : "delta",
            timestamp: Math.round(s.time * 1000),
            duration: Math.round(s.duration * 1000),
            data: s.data,
          }),
        );
      } else {
        if (!audioDecoder || audioDecoder.state !== "configured") continue;
        // Sound from before the join (the start of the GOP) is past: not worth decoding.
        if (s.time + s.duration < joinT - JOIN_DECODE_MS) continue;
        const follows = soundFollows(s.time, s.duration, soundEnd);
        if (follows === "had") continue;
        if (follows === "gap") {
          // (its outputs are stamped from the next input on)
          audioDecoder.reset();
          setupAudioDecoder();
        }
        soundEnd = s.time + s.duration;
        const late = lateness(s.time, arrivedAt, joinT, measureFrom);
        if (late !== null) {
          audioNeed.add(arrivedAt, late);
          // Without a picture the sound alone sets the anchor (from its first live unit on).
          if (!video && settleUntil === Infinity) settleUntil = arrivedAt + SETTLE_MS;
        }
        audioDecoder.decode(
          new EncodedAudioChunk({
            type: "key",
            timestamp: Math.round(s.time * 1000),
            duration: Math.round(s.duration * 1000),
            data: s.data,
          }),
        );
      }
    }
  };

  // ---- presenting ----

  const present = () => {
    if (closed || !video || !frames.length) return;
    presenter ??= createPresenter(video, events.muted);
    const a = anchor();
    const c = clock;
    /** @type {VideoFrame | null} */
    let pick = null;
    if (a === null || !c || !firstFrameShown) {
      // Before the clock runs (the join burst): the newest decoded frame, at once.
      pick = /** @type {VideoFrame} */ (frames.pop());
      for (const f of frames.splice(0)) f.close();
    } else {
      // The timeline instant heard when a frame written now is shown; a frame is written when that display
      // is the nearest to its due instant it can get (a later write would show it a refresh later).
      const t = c.now() + display.delay(performance.now());
      const early = display.tolerance();
      let i = -1;
      for (let k = 0; k < frames.length; k++) {
        if (dueOf(frames[k]) <= t + early) i = k;
        else break;
      }
      if (i < 0) return;
      const late = frames.splice(0, i);
      for (const f of late) {
        if (f.timestamp > lastPresentedTs) {
          counters.framesDropped++;
        }
        f.close();
      }
      pick = /** @type {VideoFrame} */ (frames.shift());
      if (pick.timestamp / 1000 < t - MAX_LATE_MS) {
        // Too late to show (the page was busy, or a backlog is being decoded): skipped, never shown late.
        counters.framesDropped++;
        pick.close();
        return;
      }
    }
    if (!pick) return;
    const ts = pick.timestamp;
    const now = performance.now();
    if (ts <= lastPresentedTs) {
      pick.close();
      return;
    }
    const due = dueOf(pick);
    if (!presenter.write(pick)) return;
    lastPresentedTs = ts;
    counters.framesPresented++;
    written.set(ts, { at: now, refreshAt: display.refreshAfter(now), due });
    if (written.size > 100) written.delete(/** @type {number} */ (written.keys().next().value));
    // On time again after a stall.
    if (recoveringSince !== null && a !== null && c && ts / 1000 + a >= now - 40) caughtUp(now);
    if (buffering && firstFrameShown) {
      buffering = false;
      events.playing();
    }
    if (!firstFrameShown) {
      firstFrameShown = true;
      // The sound starts up once the first picture is out (its start-up would hold the first picture back).
      setTimeout(ensureClock, 0);
      // Without requestVideoFrameCallback, the first frame counts as shown now.
      if (typeof (/** @type {any} */ (video)).requestVideoFrameCallback !== "function") {
        firstFrameListener?.(now);
      }
    }
  };

  /**
   * Reads the mouth of the picture the element shows now (the frame just presented, whatever happened to it
   * after the player wrote it) into the mouth-vs-sound meter, as shown at `shownAt`.
   * @param {HTMLVideoElement} v
   * @param {number} shownAt
   */
  const readMouth = (v, shownAt) => {
    if (!mouthArt || typeof VideoFrame !== "function") return;
    /** @type {VideoFrame} */
    let shown;
    try {
      shown = new VideoFrame(v);
    } catch {
      return; // (nothing to read yet)
    }
    const k = shown.displayWidth / mouthArt.size;
    const b = mouthArt.box;
    mouthDarkness(shown, { x: b.x * k, y: b.y * k, width: b.width * k, height: b.height * k }).then(
      (d) => d !== null && meter.shown(shownAt, d),
      () => {},
    ).finally(() => shown.close());
  };

  /** Measures each displayed frame: when it was shown, how late, against its sound. */
  const watchFrames = () => {
    const v = /** @type {any} */ (video);
    if (!v || typeof v.requestVideoFrameCallback !== "function") return;
    /** @param {number} now @param {any} md */
    const onFrame = (now, md) => {
      if (closed) return;
      const shownAt = md.expectedDisplayTime ?? md.presentationTime ?? performance.now();
      let ts = Math.round((md.mediaTime ?? NaN) * 1e6);
      let w = written.get(ts);
      if (w === undefined && presenter && !presenter.ownTime) {
        // A canvas stream: the frame the element shows is the latest drawn before it was handed to the
        // compositor (its mouth is read from the element's picture all the same).
        const taken = md.presentationTime ?? now;
        for (const [t, e] of written) {
          if (e.at > taken) break;
          ts = t;
          w = e;
        }
        if (w !== undefined && ts === lastShownTs) w = undefined; // (the same picture again)
      }
      if (w !== undefined) {
        lastShownTs = ts;
        display.shown(w.refreshAt, shownAt);
        const t = ts / 1000;
        const latency = skew === null ? null : shownAt - (t + skew);
        readMouth(v, shownAt);
        if (latency !== null && latency > -1000 && latency < 60000) {
          if (latencySamples.length < MAX_SAMPLES) latencySamples.push(Math.round(latency * 10) / 10);
          recent.push([shownAt, latency, null]);
          if (recent.length > 75) recent.shift();
        }
        if (firstFrameListener) {
          const l = firstFrameListener;
          firstFrameListener = null;
          l(shownAt);
        }
      }
      v.requestVideoFrameCallback(onFrame);
    };
    v.requestVideoFrameCallback(onFrame);
  };

  /** Runs every animation frame (and on a timer when the page is hidden): stalls, anchor, presentation. */
  const tick = () => {
    if (closed) return;
    const now = performance.now();
    const previousTick = lastTickAt;
    lastTickAt = now;
    if (!stalled && receiving && stallSeen(now, lastMediaAt, previousTick)) {
      stalled = true;
      stallStart = lastMediaAt;
    }
    if (stalled && !buffering && firstFrameShown && (!frames.length)) {
      buffering = true;
      events.buffering();
    }
    adjustAnchorThrottled(now);
    present();
    collectAv(now);
  };
  let lastAdjust = 0;
  const adjustAnchorThrottled = (/** @type {number} */ now) => {
    // (with a picture the first live frame sets the anchor; without one, the first adjustment here)
    if (now - lastAdjust < (now < settleUntil ? 100 : 250) || (anchor() === null && video)) return;
    // Video-free, the first anchor waits for the first live sound to reach the clock (settlingRaise).
    if (anchor() === null && !video && !clockNeed.items.length) return;
    lastAdjust = now;
    adjustAnchor(now);
  };
  /** @type {number} */
  let raf = 0;
  const loop = (/** @type {number} */ t) => {
    display.refresh(t);
    tick();
    if (!closed) raf = requestAnimationFrame(loop);
  };
  if (typeof requestAnimationFrame === "function") raf = requestAnimationFrame(loop);
  // The picture's way into the element starts up while the socket connects (after it was opened); the
  // sound (context, worklet: tens of milliseconds of the page's time) once the first picture is out, or now
  // without a picture.
  setTimeout(() => {
    if (closed) return;
    if (video) presenter ??= createPresenter(video, events.muted);
    else ensureClock();
  }, 0);
  const housekeeping = setInterval(() => {
    if (performance.now() - lastTickAt > 60) tick();
  }, 50);
  watchFrames();

  // ---- the sink's interface ----

  return {
    /** @type {"webcodecs"} */
    playback: /** @type {"webcodecs"} */ ("webcodecs"),
    /**
     * Timeline instants (ms) where a sound starts after a silence, as the decoded audio shows them (the
     * last 32): the video-free drawer opens the mouth on them, as the video presenter shows its frames.
     */
    soundStarts() {
      return onsets.slice();
    },
    /** Subprotocols offered before `avatar-media.v0`. */
    subprotocols: [FRAMES_SUBPROTOCOL],
    /**
     * A connection said hello. `protocol` is the subprotocol the service selected.
     * @param {any} msg
     * @param {string} protocol
     * @param {number} arrivedAt
     */
    hello(msg, protocol, arrivedAt) {
      framing = protocol === FRAMES_SUBPROTOCOL ? "frames" : "fmp4";
      if (typeof msg.timeline_ms === "number") {
        // A first estimate (the hello's delivery delay included) until `clock_sync` answers.
        skew ??= arrivedAt - msg.timeline_ms;
        if (joinT !== -Infinity) {
          // A reconnection: what comes after this hello is the live edge (the join burst is older than
          // `joinT`), not a stall's backlog to skip through. The player settles anew from its first live unit
          // — nothing plays in the gap, so the sound after it is raised for as at the start-up, not skipped
          // as past when the page is slow to take it in (a page busy 150 ms then skipped up to 160 ms of the
          // speech after it, busy 250 ms up to 200).
          if (stalled) {
            stalled = false;
            counters.stalls++;
            counters.stallMs += Math.round(arrivedAt - stallStart);
          }
          recoveringSince = null;
          measureFrom = -Infinity;
          settleUntil = Infinity;
        }
        joinT = msg.timeline_ms;
      }
      lastMediaAt = arrivedAt;
      receiving = true;
      needKey = true;
      if (video && !mouthArt) {
        // Where the frames' mouth is (mouth vs sound as shown): in the hello, else (an older service) in the
        // art, fetched once, after the hello.
        mouthArt = mouthPlace(msg);
        if (!mouthArt && !artRequested && typeof msg.art_path === "string" && options.fetchArt) {
          artRequested = true;
          options.fetchArt(msg.art_path).then(
            (doc) => mouthArt = mouthPlace(doc),
            (err) => console.warn("avatar player: the avatar's art did not load (no mouth vs sound)", err),
          );
        }
      }
      // (with a picture, the sound starts up once the first frame is out)
      if (!video || firstFrameShown) ensureClock();
      if (framing === "frames" && msg.video === null) {
        // A video-free connection (`video=0`): audio units only.
        audioChannels = Number(msg.codecs?.audio?.channels) || 1;
        if (!audioDecoder) setupAudioDecoder();
        return;
      }
      if (framing === "frames") {
        const v = msg.codecs?.video;
        const a = msg.codecs?.audio;
        if (!v?.codec || !v?.description) {
          events.unsupported("the service's hello has no codec configuration");
          return;
        }
        const next = { codec: String(v.codec), description: fromBase64(String(v.description)) };
        audioChannels = Number(a?.channels) || 1;
        if (
          !videoConfig || videoConfig.codec !== next.codec ||
          !sameBytes(videoConfig.description, next.description)
        ) {
          videoConfig = next;
          setupDecoders();
        }
      }
    },
    /**
     * A binary message of the stream.
     * @param {ArrayBuffer} data
     * @param {number} arrivedAt
     */
    media(data, arrivedAt) {
      if (closed) return;
      const buf = new Uint8Array(data);
      if (stalled) {
        // Media again after a stall: what is past is skipped from here on (never played late).
        stalled = false;
        counters.stalls++;
        counters.stallMs += Math.round(arrivedAt - stallStart);
        ({ measureFrom, recoveringSince } = afterStall(arrivedAt, anchor() !== null));
      }
      lastMediaAt = arrivedAt;
      try {
        if (framing === "frames") {
          decode(parseFrame(buf), arrivedAt);
        } else if (!init || isInitSegment(buf)) {
          const next = parseInitSegment(buf);
          const changed = !init || !sameBytes(init.video.description, next.video.description);
          init = next;
          audioChannels = next.audio.channels;
          if (changed) setupDecoders();
        } else {
          decode(parseMediaSegment(buf, init), arrivedAt);
        }
      } catch (err) {
        console.warn("avatar player: unreadable media message", err);
      }
    },
    /** Barge-in: the little buffered speech plays out (the anchor is a few tens of ms). */
    interrupt() {},
    /**
     * Video-free: a stamp of the animation track (timeline `tMs`) arrived at page time `arrivedAt`; the drawer
     * draws an instant up to `aheadMs` before it is heard. The anchor covers their lateness as it covers the
     * video frames' (on a device with a short output path the sound was heard before its visemes were in:
     * Firefox on a sound server, 10 ms, the mouth 18–28 ms late; Chromium's 40 ms path hid it).
     * @param {number} tMs @param {number} arrivedAt @param {number} aheadMs
     */
    animationArrived(tMs, arrivedAt, aheadMs) {
      animationAheadMs = aheadMs;
      const late = lateness(tMs, arrivedAt, joinT, measureFrom);
      if (late !== null) animationNeed.add(arrivedAt, late);
    },
    /** The timeline instant (ms) heard now, once the audio clock is anchored; else null. */
    timelineNow() {
      return clock && clock.anchor() !== null ? clock.now() : null;
    },
    /**
     * Video-free: the canvas drawn for timeline instant `instantMs` (the mouth, eyes and head of that instant)
     * was on screen at page time `shownAt`. Measured like a video frame: a presented frame, and its offset
     * against the sound of that instant, heard at the audio clock's output time (+: the picture is late).
     */
    canvasShown(/** @type {number} */ instantMs, /** @type {number} */ shownAt) {
      if (closed) return;
      counters.framesPresented++;
      const heard = clock && anchor() !== null && clock.running() ? clock.heardAt(instantMs) : null;
      const av = heard === null || !Number.isFinite(heard) ? null : shownAt - heard;
      if (av === null || av < -1000 || av > 60000) return;
      if (avSamples.length < MAX_SAMPLES) avSamples.push(Math.round(av * 10) / 10);
      recent.push([shownAt, null, av]);
      if (recent.length > 75) recent.shift();
    },
    /** The connection dropped (a reconnect follows). */
    disconnected() {},
    /** The page time of timeline 0, from the clock exchanges. */
    clockOffset(/** @type {number} */ offset) {
      skew = offset;
    },
    /** Resolves `cb` with the page time the first frame was shown. */
    onFirstFrame(/** @type {(at: number) => void} */ cb) {
      firstFrameListener = cb;
    },
    /** Counters and current figures for `stats()`. */
    stats() {
      const now = performance.now();
      const window = recent.filter((r) => r[0] > now - 2000);
      const lat = median(window.flatMap((r) => (r[1] === null ? [] : [r[1]])));
      collectAv(now);
      // (video: per sound start, the mouth read from the shown frames; video-free: each canvas picture)
      const av = video ? median(avRecent) : median(window.flatMap((r) => (r[2] === null ? [] : [r[2]])));
      const a = clock?.stats();
      return {
        framesDecoded: counters.framesDecoded,
        framesDropped: counters.framesDropped,
        latencyMs: lat === null ? 0 : Math.round(lat),
        avOffsetMs: av === null ? null : Math.round(av * 10) / 10,
        stalls: counters.stalls,
        catchUps: counters.catchUps,
        lastCatchUpMs: counters.lastCatchUpMs,
        skippedMs: Math.round(counters.skippedMs),
        speechSkippedMs: Math.round(counters.speechSkippedMs),
        audioUnderrunMs: Math.round(a?.underrunMs ?? 0),
        audioDecodedMs: Math.round(counters.audioDecodedMs),
        anchorMs: skew === null || anchor() === null
          ? null
          : Math.round(/** @type {number} */ (anchor()) - skew),
      };
    },
    /** What was measured since the last call, for the service (`player_stats`). */
    report() {
      collectAv(performance.now());
      const under = clock?.stats().underrunMs ?? 0;
      const out = {
        frame_latency_ms: latencySamples,
        av_offset_ms: avSamples,
        presented_frames: counters.framesPresented - reported.framesPresented,
        dropped_frames: counters.framesDropped - reported.framesDropped,
        stalls: counters.stalls - reported.stalls,
        stall_ms: counters.stallMs - reported.stallMs,
        catch_ups: counters.catchUps - reported.catchUps,
        skipped_ms: Math.round(counters.skippedMs - reported.skippedMs),
        catch_up_ms: counters.catchUps > reported.catchUps ? counters.lastCatchUpMs : null,
        audio_underrun_ms: Math.round(under - reported.underrunMs),
      };
      reported = { ...counters, underrunMs: under };
      latencySamples = [];
      avSamples = [];
      return out;
    },
    close() {
      if (closed) return;
      closed = true;
      if (raf) cancelAnimationFrame(raf);
      clearInterval(housekeeping);
      video?.removeEventListener("volumechange", onVolume);
      stopUnlock();
      for (const f of frames.splice(0)) f.close();
      for (const d of [videoDecoder, audioDecoder]) {
        try {
          d?.close();
        } catch { /* closed */ }
      }
      presenter?.close();
      clock?.close();
    },
  };
}

/**
 * How open the mouth of a video frame is: the darkness (255 − mean luma) of the mouth's box, read from the
 * frame (`VideoFrame.copyTo` of that rectangle only: a few kB). `box` is in the frame's display pixels.
 * Resolves null when the frame's pixel format is not one it reads.
 *
 * @param {VideoFrame} frame (not closed by this function; it must stay open until the promise settles)
 * @param {{ x: number; y: number; width: number; height: number }} box
 * @returns {Promise<number | null>}
 */
async function mouthDarkness(frame, box) {
  const f = frame.format;
  if (!f) return null;
  const vr = frame.visibleRect ?? { x: 0, y: 0, width: frame.codedWidth, height: frame.codedHeight };
  const sx = vr.width / frame.displayWidth, sy = vr.height / frame.displayHeight;
  // (chroma-subsampled formats want a rectangle on even pixels)
  const even = (/** @type {number} */ n) => Math.max(0, Math.floor(n / 2) * 2);
  const x = even(vr.x + box.x * sx), y = even(vr.y + box.y * sy);
  const width = Math.min(even(box.width * sx + 1), vr.x + vr.width - x);
  const height = Math.min(even(box.height * sy + 1), vr.y + vr.height - y);
  if (width <= 0 || height <= 0) return null;
  const rect = { x, y, width, height };
  const buf = new Uint8Array(frame.allocationSize({ rect }));
  const layout = await frame.copyTo(buf, { rect });
  const { offset, stride } = layout[0];
  let sum = 0;
  if (f.startsWith("I4") || f === "NV12") {
    for (let r = 0; r < height; r++) {
      for (let c = 0, i = offset + r * stride; c < width; c++, i++) sum += buf[i];
    }
  } else if (f === "RGBA" || f === "RGBX" || f === "BGRA" || f === "BGRX") {
    const [ri, bi] = f.startsWith("RGB") ? [0, 2] : [2, 0];
    for (let r = 0; r < height; r++) {
      for (let c = 0, i = offset + r * stride; c < width; c++, i += 4) {
        sum += 0.2126 * buf[i + ri] + 0.7152 * buf[i + 1] + 0.0722 * buf[i + bi];
      }
    }
  } else return null;
  return 255 - sum / (width * height);
}

/**
 * @typedef {{ box: { x: number; y: number; width: number; height: number }; size: number }} MouthArt
 */

/**
 * Where the avatar's art draws the mouth, from a video client's hello or the art document (both carry
 * `mouth_box` and `view_box` in view-box px), or null when `o` has no valid one.
 * @param {any} o
 * @returns {MouthArt | null}
 */
export function mouthPlace(o) {
  const b = o?.mouth_box, size = Number(o?.view_box?.[0]);
  const valid = b && [b.x, b.y, b.width, b.height, size].every((n) => Number.isFinite(n) && n >= 0) &&
    size > 0;
  return valid ? { box: { x: b.x, y: b.y, width: b.width, height: b.height }, size } : null;
}

/** Whether a binary message is an init segment (starts with `ftyp`). */
function isInitSegment(/** @type {Uint8Array} */ b) {
  return b.length > 8 && b[4] === 0x66 && b[5] === 0x74 && b[6] === 0x79 && b[7] === 0x70;
}

function sameBytes(/** @type {Uint8Array} */ a, /** @type {Uint8Array} */ b) {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}
