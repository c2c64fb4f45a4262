// @ts-check
/**
 * The players' reports to the service: every {@link REPORT_INTERVAL_MS}, a `player_stats` text message on
 * the player's socket (the media WebSocket, or the SFU signalling WebSocket) with what the player measured
 * since its previous report — frame made → presented and mouth vs sound samples, counters of presented and
 * dropped frames, stalls and catch-ups — and, in a connection's first report, the time from connecting to
 * the first frame. The service keeps the session's figures from them (`GET /v1/sessions/{id}/metrics`).
 * Protocol: docs/media-plane.md, "Per-session figures".
 *
 * @module
 */

/** How often a player reports (ms). */
export const REPORT_INTERVAL_MS = 2000;

/**
 * Starts reporting: every interval, `build()` gives the fields measured since the previous call and
 * `send(text)` sends the message when the socket is open (it returns false otherwise: the fields are then
 * lost, as the service could not have used them). Returns a function that stops it (after a last report).
 * @param {{ playback: string; build: () => Record<string, unknown>; send: (text: string) => boolean }} o
 * @returns {() => void}
 */
export function startReporting(o) {
  const flush = () => {
    o.send(JSON.stringify({ type: "player_stats", playback: o.playback, ...o.build() }));
  };
  const timer = setInterval(flush, REPORT_INTERVAL_MS);
  return () => {
    clearInterval(timer);
    flush();
  };
}

/** Clock exchanges at connect (the one with the shortest round trip wins), then one every so often. */
const SYNC_AT_CONNECT = 4;
const SYNC_SPACING_MS = 120;
const SYNC_EVERY_MS = 10_000;
/** Exchanges kept to pick the best from. */
const SYNC_KEPT = 8;

/**
 * Places the session's media clock on the page's clock (`performance.now()`) through `clock_sync`
 * exchanges on the player's socket: `offset()` is the page time of timeline instant 0, from the exchange
 * with the shortest round trip (its error is at most half of that round trip).
 * @param {(text: string) => boolean} send
 * @param {(offset: number) => void} [onChange]
 */
export function createClockSync(send, onChange) {
  /** @type {{ rtt: number; offset: number }[]} */
  let samples = [];
  /** @type {number | null} */
  let best = null;
  /** @type {ReturnType<typeof setTimeout>[]} */
  let timers = [];
  /** @type {ReturnType<typeof setInterval> | undefined} */
  let every;
  const ping = () => void send(JSON.stringify({ type: "clock_sync", t: performance.now() }));
  const stop = () => {
    for (const t of timers) clearTimeout(t);
    timers = [];
    clearInterval(every);
  };
  return {
    /** A connection said hello: exchange a few times now, then now and then. */
    start() {
      stop();
      samples = [];
      for (let i = 0; i < SYNC_AT_CONNECT; i++) timers.push(setTimeout(ping, i * SYNC_SPACING_MS));
      every = setInterval(ping, SYNC_EVERY_MS);
    },
    /**
     * A `clock_sync` answer.
     * @param {any} msg
     * @param {number} arrivedAt
     */
    receive(msg, arrivedAt) {
      const t = Number(msg?.t);
      const timeline = Number(msg?.timeline_ms);
      if (!Number.isFinite(t) || !Number.isFinite(timeline) || arrivedAt < t) return;
      samples.push({ rtt: arrivedAt - t, offset: (t + arrivedAt) / 2 - timeline });
      if (samples.length > SYNC_KEPT) samples.shift();
      const pick = samples.reduce((a, b) => (b.rtt < a.rtt ? b : a));
      if (best === null || Math.abs(pick.offset - best) > 0.05) {
        best = pick.offset;
        onChange?.(best);
      }
    },
    /** The page time of timeline 0, or null before any exchange. */
    offset: () => best,
    stop,
  };
}
