// @ts-check
/**
 * Mouth vs sound as the user saw it, measured in the player from what it did: when a sound that starts after
 * a silence was heard (the audio clock's output timestamps) against when the first presented picture whose
 * mouth is open was shown (`requestVideoFrameCallback`'s display time, or the canvas draw), the mouth being
 * read from that picture itself — not from when the service meant the frame to be heard. The service's
 * stamps say nothing of a mouth drawn a frame late; this sees it (issue 33: the service said −1…+1 ms while
 * the mouth showed +23…+40 ms). One sample per sound start, as the outside measurement of `bench:player`
 * makes them. Pure (no browser API): `./player_webcodecs.js` feeds it (it reads the mouth of the frames).
 *
 * @module
 */

/** A picture shown up to this long before a sound start may be its opening (ms). */
const EARLY_MS = 150;
/** ...and up to this long after it (ms); later, the sound start has no opening (no sample). */
const LATE_MS = 400;
/** Pictures kept to calibrate closed and open, and to match sound starts with. */
const KEPT = 250;

/**
 * @typedef {object} AvMeter
 * @property {(heardAt: number) => void} soundStart A sound starting after a silence is heard at page time
 *   `heardAt` (ms).
 * @property {(shownAt: number, level: number) => void} shown A picture was shown at page time `shownAt`
 *   whose mouth is open by `level` (any scale, larger is more open: the mouth box's darkness, or how open the
 *   drawn pose is).
 * @property {(now: number) => number[]} take The samples (first open picture shown − its sound start heard,
 *   ms; + the mouth is late) whose matching is over by page time `now`, each once.
 */

/**
 * A mouth-vs-sound meter. A picture is open when its level is past halfway between the most closed and the
 * most open of the recent pictures (as the outside measurement calibrates), and only when those differ by
 * at least `minRange` (a mouth that never moved says nothing). A sound start's sample is the first open
 * picture shown within [−{@link EARLY_MS}, +{@link LATE_MS}] of it whose next picture is open too (a
 * single open picture is noise), after a closed one (the mouth opens there, rather than was already open).
 *
 * @param {{ minRange: number }} options
 * @returns {AvMeter}
 */
export function createAvMeter(options) {
  /** @type {[number, number][]} */
  const pictures = [];
  /** @type {number[]} */
  const starts = [];
  /** @param {number} now */
  const take = (now) => {
    /** @type {number[]} */
    const out = [];
    const last = pictures.length ? pictures[pictures.length - 1][0] : -Infinity;
    let lo = Infinity, hi = -Infinity;
    for (const [, l] of pictures) {
      if (l < lo) lo = l;
      if (l > hi) hi = l;
    }
    const threshold = (lo + hi) / 2;
    const moved = hi - lo >= options.minRange;
    while (starts.length) {
      const h = starts[0];
      // Over once a picture after the window was shown (or long after it, the pictures having stopped).
      if (last <= h + LATE_MS && now <= h + LATE_MS + 1000) break;
      starts.shift();
      if (!moved) continue;
      // The mouth before the window (the drawer draws only what changes: its last picture may be older).
      let i = pictures.findIndex(([t]) => t >= h - EARLY_MS);
      if (i < 0) continue;
      let sawClosed = i > 0 && pictures[i - 1][1] <= threshold;
      for (; i + 1 < pictures.length && pictures[i][0] <= h + LATE_MS; i++) {
        if (pictures[i][1] <= threshold) {
          sawClosed = true;
          continue;
        }
        if (sawClosed && pictures[i + 1][1] > threshold) {
          out.push(Math.round((pictures[i][0] - h) * 10) / 10);
          break;
        }
      }
    }
    return out;
  };
  return {
    soundStart(heardAt) {
      if (!Number.isFinite(heardAt)) return;
      if (starts.length && heardAt <= starts[starts.length - 1]) return;
      starts.push(heardAt);
      if (starts.length > 32) starts.shift();
    },
    shown(shownAt, level) {
      if (!Number.isFinite(shownAt) || !Number.isFinite(level)) return;
      // (in the order shown: a picture read late goes where it belongs)
      let i = pictures.length;
      while (i > 0 && pictures[i - 1][0] > shownAt) i--;
      pictures.splice(i, 0, [shownAt, level]);
      if (pictures.length > KEPT) pictures.shift();
    },
    take,
  };
}
