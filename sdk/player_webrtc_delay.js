// @ts-check
/**
 * The WebRTC player's audio delay: how long a received sample waits in the browser before its sound is
 * played, read from the receiver's statistics (`getStats`), in three parts:
 *
 * 1. **the jitter buffer**: a packet's wait from its arrival until it is decoded (`jitterBufferDelay /
 *    jitterBufferEmittedCount` over the last window);
 * 2. **the decoded audio not yet played out** — NetEQ decodes a whole packet (20 ms) when its output needs
 *    more, and keeps what it does not output yet in its sync buffer, which is also where time-stretching puts
 *    the audio it inserts. The jitter buffer's figure stops at the decode, so this part is in no statistic:
 *    it is counted. The samples taken out of the jitter buffer, plus those inserted by stretching and by
 *    concealment, minus those removed by compressing, minus those put out (`totalSamplesReceived`), are the
 *    decoded samples still waiting; their mean over recent reads is a sample's mean wait (Little's law).
 *    Measured in Chromium 156 over the SFU (6 Dec, `bench:player` with the page reading the counters every
 *    250 ms): 0 or 10 ms at each read (a 20 ms packet put out 10 ms at a time: 5 ms on average), and 9.7 or
 *    19.7 ms once NetEQ had stretched the first speech by 9.7 ms — when the jitter buffer read 10 ms instead
 *    of 20, the sound no earlier: without this part the player placed such sessions' sound 10 ms early.
 *    The count is exact only while nothing is lost: with loss and jitter (`bench:network`'s `lossy` and
 *    `loss10`) it drifted by hundreds of ms, below zero. So it is read from an anchor: the count when the
 *    buffer was last known empty — at the first read, whenever the count falls below the anchor (the buffer
 *    cannot hold less than nothing: that read is the new anchor) and after any concealment (the buffer ran
 *    dry, which is why the browser concealed). An anchor set while the buffer held something is lowered at the
 *    next read that finds it empty (every other read on a clean path); what a count adds that the buffer does
 *    not hold lasts until the next concealment. Audio stretched in stays counted until then, as it stays in
 *    the buffer. Read so (`bench:network`, 6 Dec 22:00): clean 0 or 10 ms, 8.7 or 18.8 after a stretch; at 3 %
 *    loss 0–12 ms (one read of 41); at 10 % loss 0 — there the player's delay is what it was without it;
 * 3. **the playout**: from NetEQ's output to the device, as Chromium estimates it (`media-playout`:
 *    `totalPlayoutDelay / totalSamplesCount` over the last window).
 *
 * And {@link nextVideoTarget}: the video receiver's target that brings the picture back to that sound when
 * the two are far apart.
 *
 * Pure (it reads plain statistics objects): `./player_webrtc.js` feeds it.
 *
 * @module
 */

/** Reads of the decoded-but-unplayed audio averaged (one per statistics read: a few seconds). */
const HELD_READS = 8;
/** Above this the count no longer adds up (it is anchored again), ms; NetEQ's sync buffer holds far less. */
const HELD_MAX_MS = 250;
/** Opus decodes at 48 kHz in WebRTC: the sample length when the statistics give no duration, ms. */
const DEFAULT_SAMPLE_MS = 1000 / 48000;

/**
 * The counters of an audio `inbound-rtp` statistics entry this meter reads (all cumulative).
 * @typedef {object} InboundAudioCounters
 * @property {number} [jitterBufferDelay] seconds
 * @property {number} [jitterBufferEmittedCount] samples
 * @property {number} [totalSamplesReceived] samples
 * @property {number} [totalSamplesDuration] seconds
 * @property {number} [concealedSamples] samples
 * @property {number} [insertedSamplesForDeceleration] samples
 * @property {number} [removedSamplesForAcceleration] samples
 */

/**
 * The counters of a `media-playout` statistics entry this meter reads (cumulative).
 * @typedef {object} PlayoutCounters
 * @property {number} [totalPlayoutDelay] seconds
 * @property {number} [totalSamplesCount] samples
 */

/**
 * @typedef {object} AudioDelayMeter
 * @property {(audio: InboundAudioCounters, playout: PlayoutCounters | null) => number | null} update One
 *   read of the receiver's statistics: the audio delay (ms) over the window since the previous read, or null
 *   when no audio came out of the jitter buffer in it.
 * @property {() => number | null} heldMs The decoded audio not yet played out at the last read (ms; null
 *   before a read whose counters add up).
 * @property {() => void} reset A new PeerConnection: its counters start again from zero.
 */

/**
 * An audio-delay meter for one player (see the module's documentation for the three parts).
 * @returns {AudioDelayMeter}
 */
export function createAudioDelayMeter() {
  /** @type {{ jb: number, emitted: number, playout: number, played: number, concealed: number } | null} */
  let prev = null;
  /** The count (ms) when the sync buffer was last known empty; null: none yet. */
  /** @type {number | null} */
  let anchor = null;
  /** @type {number[]} */
  const held = [];
  return {
    heldMs: () => held.at(-1) ?? null,
    update(audio, playout) {
      const now = {
        jb: audio.jitterBufferDelay ?? 0,
        emitted: audio.jitterBufferEmittedCount ?? 0,
        playout: playout?.totalPlayoutDelay ?? 0,
        played: playout?.totalSamplesCount ?? 0,
        concealed: audio.concealedSamples ?? 0,
      };
      const before = prev;
      prev = now;
      const count = countedMs(audio);
      if (count !== null) {
        if (anchor === null || count < anchor || (before !== null && now.concealed > before.concealed)) {
          anchor = count;
        }
        if (count - anchor > HELD_MAX_MS) anchor = count; // (counters that no longer add up)
        held.push(count - anchor);
        if (held.length > HELD_READS) held.shift();
      }
      if (!before || now.emitted <= before.emitted) return null;
      const jitterBuffer = (now.jb - before.jb) / (now.emitted - before.emitted) * 1000;
      const played = now.played - before.played;
      const out = played > 0 ? (now.playout - before.playout) / played * 1000 : 0;
      const decoded = held.length ? held.reduce((s, x) => s + x, 0) / held.length : 0;
      return jitterBuffer + decoded + out;
    },
    reset() {
      prev = null;
      anchor = null;
      held.length = 0;
    },
  };
}

/**
 * The count of decoded samples not yet put out (ms): taken out of the jitter buffer + inserted + concealed −
 * removed − put out. Exact while nothing is lost; null when the counters are missing.
 * @param {InboundAudioCounters} a
 * @returns {number | null}
 */
function countedMs(a) {
  const out = a.totalSamplesReceived;
  const taken = a.jitterBufferEmittedCount;
  if (typeof out !== "number" || typeof taken !== "number") return null;
  const samples = taken + (a.insertedSamplesForDeceleration ?? 0) - (a.removedSamplesForAcceleration ?? 0) +
    (a.concealedSamples ?? 0) - out;
  const sampleMs = out > 0 && (a.totalSamplesDuration ?? 0) > 0
    ? /** @type {number} */ (a.totalSamplesDuration) * 1000 / out
    : DEFAULT_SAMPLE_MS;
  return samples * sampleMs;
}

/**
 * The player moves the picture only when its median offset is past this, ms: more than half a frame, where
 * the browser's synchroniser has left the streams apart (below, Chromium's own figures usually hold them
 * closer than this, and the estimate is good to a few ms: nothing to gain there).
 */
export const STEER_DEADBAND_MS = 20;
/** The part of the offset taken off in one step (the rest at the next reads: no overshoot on noise). */
const STEER_GAIN = 0.5;
/** The video jitter buffer's target is kept within this, ms. */
const STEER_MAX_MS = 400;
/** Pictures needed since the last step before another. */
export const STEER_MIN_PICTURES = 15;

/**
 * The video receiver's next `jitterBufferTarget` (ms) to bring the picture back to its sound when they are
 * far apart: the player's mouth-vs-sound estimates of the pictures shown since the last step (a picture's
 * delay − its sound's, from the statistics above; + the mouth is late) move the target against their median
 * by half of it, when the median is past {@link STEER_DEADBAND_MS}. Chromium's A/V synchroniser leaves
 * streams alone while they differ by less than 30 ms (`kMinDeltaMs`, `stream_synchronization.cc`) and, with
 * the sound played through a PulseAudio sink, left the mouth 10–101 ms ahead of it (6 Dec, `bench:player
 * --device`: the sound waited 55–210 ms in its jitter buffer). A target of 0 leaves the browser its own
 * estimate.
 *
 * @param {number} current The target set now, ms.
 * @param {number[]} offsets Mouth vs sound of the pictures shown since the last step, ms.
 * @returns {number} The target to set (the same when nothing is to change).
 */
export function nextVideoTarget(current, offsets) {
  if (offsets.length < STEER_MIN_PICTURES) return current;
  const sorted = [...offsets].sort((a, b) => a - b);
  const median = sorted[sorted.length >> 1];
  if (Math.abs(median) <= STEER_DEADBAND_MS) return current;
  const next = Math.round(current - median * STEER_GAIN);
  return Math.min(STEER_MAX_MS, Math.max(0, next));
}
