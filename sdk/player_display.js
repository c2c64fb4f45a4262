// @ts-check
/**
 * The WebCodecs player's model of the page's display: when a frame written now reaches the screen, so that
 * each frame can be written at the moment that shows it at the refresh nearest its due instant. Pure (no
 * browser API): `./player_webcodecs.js` feeds it.
 *
 * @module
 */

/** Time the page takes to display a frame, until measured (ms). */
const DEFAULT_DISPLAY_MS = 20;
/** The page's refresh interval until measured (ms). */
const DEFAULT_REFRESH_MS = 1000 / 60;
/** Display delays kept for their median. */
const DISPLAY_SAMPLES = 15;

/** Nearest-rank median of a non-empty list. */
const median = (/** @type {number[]} */ xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

/**
 * @typedef {object} DisplayModel
 * @property {(t: number) => void} refresh A refresh began at page time `t` (a `requestAnimationFrame`
 *   timestamp).
 * @property {(now: number) => number} refreshAfter The refresh a frame written at page time `now` waits for
 *   (page time): the first after `now` — or after the latest refresh's stamp when that reads later: Firefox
 *   stamps a refresh up to a ms after the `performance.now()` its callback reads (its clock is coarsened to
 *   1 ms), and a frame written in that callback waits for the next refresh, not that one.
 * @property {(refreshAt: number, shownAt: number) => void} shown A frame that waited for refresh `refreshAt`
 *   (what {@link DisplayModel.refreshAfter} said when it was written) was shown at `shownAt` (its expected
 *   display time; page times).
 * @property {(now: number) => number} delay How long after page time `now` a frame written then is shown (ms).
 * @property {() => number} maxDelay The longest such delay: a write just after a refresh (ms).
 * @property {() => number} tolerance How far from its due instant a frame is shown at the nearest refresh:
 *   half a refresh (ms).
 */

/**
 * When a frame written to the page now reaches the screen. The page shows what it was given at its next
 * refresh (vsync) plus a steady time (the compositor's): a frame written in a refresh's callback waits a
 * whole refresh more than one written (as it is decoded) just before the next refresh — one average delay
 * for both puts frames up to a refresh off, early or late. The refreshes come from
 * `requestAnimationFrame` (its timestamp is the refresh's), the steady part from each shown frame's
 * expected display time (`requestVideoFrameCallback`) against the refresh its write waited for. A frame
 * written when the display this predicts is within half a refresh of its due instant — not earlier, not
 * later — is shown at the refresh nearest that instant.
 *
 * @returns {DisplayModel}
 */
export function createDisplayModel() {
  let period = DEFAULT_REFRESH_MS;
  /** The latest refresh (page time), once known. */
  let last = /** @type {number | null} */ (null);
  /** Shown − the refresh the write waited for (ms), recent ones. */
  /** @type {number[]} */
  const after = [];
  let lag = /** @type {number | null} */ (null);
  /** The refresh a write at page time `w` waits for (`w` itself until refreshes are known). */
  const next = (/** @type {number} */ w) =>
    last === null ? w : last + (Math.floor((Math.max(w, last) - last) / period) + 1) * period;
  return {
    refresh(/** @type {number} */ t) {
      if (last !== null && t > last) {
        const d = t - last;
        const n = Math.round(d / period);
        // (refreshes skipped while the page was busy count as whole ones)
        if (n >= 1 && n <= 4 && Math.abs(d / n - period) < period / 4) period += (d / n - period) * 0.05;
      }
      if (last === null || t > last) last = t;
    },
    refreshAfter: next,
    shown(/** @type {number} */ refreshAt, /** @type {number} */ shownAt) {
      // (the refresh as it was known at the write: worked out again now, from later refreshes and a period
      // refined since, a write at a refresh's stamp could fall on either side of it)
      const d = shownAt - refreshAt;
      if (d < -period || d > 200) return;
      after.push(d);
      if (after.length > DISPLAY_SAMPLES) after.shift();
      lag = median(after);
    },
    delay(/** @type {number} */ now) {
      // (until 6 Dec from `now` itself: in Firefox a third of the frames, drawn in refresh callbacks whose
      // clock read before the refresh's stamp, seemed due at that very refresh and were drawn a refresh late)
      return lag === null || last === null ? DEFAULT_DISPLAY_MS : next(now) + lag - now;
    },
    maxDelay() {
      return lag === null || last === null ? DEFAULT_DISPLAY_MS : lag + period;
    },
    tolerance() {
      return period / 2;
    },
  };
}
