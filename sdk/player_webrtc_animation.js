// @ts-check
/**
 * Video-free over WebRTC: where the animation track's stamps fall on the sound the browser plays.
 *
 * Why this way: WebRTC hides the sound's own timestamps (the SFU rewrites them per viewer, and the page
 * sees only what is playing, not which instant of the session's timeline it is), and a clock exchanged
 * over the signalling socket measures another path than the media's. But the service sends each animation
 * message when its stamp is due on the media clock, beside the sound of that instant (same lead, same ICE
 * path, same moment: `src/media/transports/webrtc_sfu/animation_channel.ts`). So a message stamped `t`
 * arrives about when the sound of `t` arrives, and that sound is heard one audio delay later (the jitter
 * buffer and the playout, which the browser reports in `getStats`):
 *
 *     heard(t) = t + median(arrival − t over recent messages) + audio delay
 *
 * The median keeps the path's typical delay and ignores a message that came late (jitter, a late stamp);
 * the jitter buffer holds the sound at a steady delay above the path's, so a typical message is still on
 * time for its sound. Loss costs nothing here: a lost message is one sample less.
 *
 * The channel is lossy, so each datagram also carries the messages sent before it (`prev`) and the last one
 * is sent again when nothing follows it soon (`repeat: true`); {@link createSeenMessages} lets the player
 * apply each message once.
 *
 * @module
 */

/** The label of the data channel the SFU sends the animation track on (Janus's default label). */
export const ANIMATION_CHANNEL_LABEL = "JanusDataChannel";
/** Unordered, never retransmitted: a late or lost state is superseded by the next one. */
export const ANIMATION_CHANNEL_OPTIONS = Object.freeze({ ordered: false, maxRetransmits: 0 });
/** Arrivals kept for the median. */
const KEPT = 64;
/** The audio delay assumed before the browser has reported one, ms. */
const DEFAULT_AUDIO_DELAY_MS = 50;

/**
 * @typedef {object} StampMap
 * @property {(tMs: number, arrivedAt: number) => void} arrived A message stamped `tMs` arrived at page time `arrivedAt`.
 * @property {(audioDelayMs: number | null) => number | null} delay Page time of a stamp's sound minus the stamp (ms); null before any message.
 * @property {(pageMs: number, audioDelayMs: number | null) => number | null} heardAt The timeline instant heard at page time `pageMs`.
 */

/**
 * Whether `m` is a message of the animation track (`viseme`, `face` or `head` with a numeric stamp).
 * @param {any} m
 * @returns {boolean}
 */
export function animationMessage(m) {
  return typeof m?.t_ms === "number" && (m.type === "viseme" || m.type === "face" || m.type === "head");
}

/**
 * The message without what the channel added (`prev`, `repeat`).
 * @param {any} m
 * @returns {any}
 */
export function strip(m) {
  const { prev: _prev, repeat: _repeat, ...rest } = m;
  return rest;
}

/** Messages remembered to recognise a copy (the channel carries each one at most 4 times, close together). */
const SEEN_KEPT = 256;

/**
 * The messages applied so far, by type and stamp: `has(m)` says whether `m` was seen, and remembers it.
 * @returns {{ has: (m: any) => boolean }}
 */
export function createSeenMessages() {
  /** @type {Set<string>} */
  const keys = new Set();
  return {
    has(m) {
      const key = `${m.type}:${m.t_ms}`;
      if (keys.has(key)) return true;
      keys.add(key);
      if (keys.size > SEEN_KEPT) keys.delete(keys.values().next().value ?? "");
      return false;
    },
  };
}

/** @returns {StampMap} */
export function createStampMap() {
  /** @type {number[]} */
  const lags = [];
  /** @type {number | null} */
  let median = null;
  return {
    arrived(tMs, arrivedAt) {
      lags.push(arrivedAt - tMs);
      if (lags.length > KEPT) lags.shift();
      const sorted = [...lags].sort((a, b) => a - b);
      median = sorted[sorted.length >> 1];
    },
    delay(audioDelayMs) {
      return median === null ? null : median + (audioDelayMs ?? DEFAULT_AUDIO_DELAY_MS);
    },
    heardAt(pageMs, audioDelayMs) {
      const d = this.delay(audioDelayMs);
      return d === null ? null : pageMs - d;
    },
  };
}
