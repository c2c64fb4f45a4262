/**
 * The players' own text messages on either transport's client socket (the media WebSocket of
 * `websocket_fmp4`, the signalling WebSocket of `webrtc_sfu`), see docs/media-plane.md:
 *
 * - `{"type":"player_stats",…}`: what a player measured since its previous report (every couple of
 *   seconds; fields in `src/metrics/session_metrics.ts`), kept as the session's figures;
 * - `{"type":"clock_sync","t":<the player's clock>}`: answered at once with the same message plus
 *   `timeline_ms`, the session's media clock now, so a player can place the media clock on its own clock
 *   (from the exchange with the shortest round trip) and measure how long after being made a frame is shown
 *   (on `webrtc_sfu` also `send_ms`: `{video, audio}`, the median time from made or due to sent, ms).
 *
 * Other text messages are not this module's.
 *
 * @module
 */
import { parsePlayerReport, type PlayerReport } from "../../metrics/session_metrics.ts";

/** The message type of a player's report. */
export const PLAYER_STATS_TYPE = "player_stats";
/** The message type of a clock exchange. */
export const CLOCK_SYNC_TYPE = "clock_sync";
/** Largest message taken, bytes (a report carries at most a few hundred numbers). */
export const MAX_PLAYER_MESSAGE_BYTES = 16 * 1024;

/** What a transport does with the players' messages. */
export interface PlayerMessageHandlers {
  /** A valid report. */
  report(report: PlayerReport): void;
  /** Sends a text message back to the client. */
  reply(text: string): void;
  /** The session's media clock now (ms), or null before the stream is configured. */
  timelineMs(): number | null;
  /**
   * What the transport adds to a clock answer (the SFU transport: how long after being made its frames and
   * sounds leave it, which a WebRTC player cannot see).
   */
  clockExtras?(): Record<string, unknown>;
}

/**
 * Reads a client's text message: a player's report or clock exchange is handled and true returned;
 * anything else (another type, not JSON, too big) returns false and is left to the caller.
 */
export function takePlayerMessage(text: string, on: PlayerMessageHandlers): boolean {
  if (text.length > MAX_PLAYER_MESSAGE_BYTES) return false;
  if (!text.includes(PLAYER_STATS_TYPE) && !text.includes(CLOCK_SYNC_TYPE)) return false;
  let msg: unknown;
  try {
    msg = JSON.parse(text);
  } catch {
    return false;
  }
  const type = (msg as { type?: unknown } | null)?.type;
  if (type === CLOCK_SYNC_TYPE) {
    const t = (msg as { t?: unknown }).t;
    const now = on.timelineMs();
    if (typeof t !== "number" || !Number.isFinite(t) || now === null) return true;
    on.reply(
      JSON.stringify({
        type: CLOCK_SYNC_TYPE,
        t,
        timeline_ms: Math.round(now * 100) / 100,
        ...on.clockExtras?.(),
      }),
    );
    return true;
  }
  const report = parsePlayerReport(msg);
  if (!report) return false;
  on.report(report);
  return true;
}
