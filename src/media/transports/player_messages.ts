/**
 * The players' own text messages, registered in the session's one client-message dispatcher
 * (`../client_messages.ts`), so they arrive the same way on either transport's client socket (the media
 * WebSocket of `websocket_fmp4`, the signalling WebSocket of `webrtc_sfu`), see docs/media-plane.md:
 *
 * - `{"type":"player_stats",…}`: what a player measured since its previous report (every couple of
 *   seconds; fields in `src/metrics/session_metrics.ts`), kept as the session's figures;
 * - `{"type":"clock_sync","t":<the player's clock>}`: answered at once, to the sender only, with the same
 *   message plus `timeline_ms`, the session's media clock now, so a player can place the media clock on its
 *   own clock (from the exchange with the shortest round trip) and measure how long after being made a
 *   frame is shown (on `webrtc_sfu` also `send_ms`: `{video, audio}`, the median time from made or due to
 *   sent, ms: the transport's {@link import("./transport.ts").MediaTransport.clockSyncExtras}).
 *
 * @module
 */
import { parsePlayerReport, type PlayerReport } from "../../metrics/session_metrics.ts";
import type { ClientMessages } from "../client_messages.ts";

/** The message type of a player's report. */
export const PLAYER_STATS_TYPE = "player_stats";
/** The message type of a clock exchange. */
export const CLOCK_SYNC_TYPE = "clock_sync";
/** Largest player message taken, bytes (a report carries at most a few hundred numbers). */
export const MAX_PLAYER_MESSAGE_BYTES = 16 * 1024;

/** What the players' messages need of the session. */
export interface PlayerMessageDeps {
  /** A valid report. */
  report(report: PlayerReport): void;
  /** The session's media clock now (ms), or null before the stream is configured. */
  timelineMs(): number | null;
  /**
   * What the transport adds to a clock answer (the SFU transport: how long after being made its frames and
   * sounds leave it, which a WebRTC player cannot see).
   */
  clockExtras?(): Record<string, unknown> | undefined;
}

/** Registers `player_stats` and `clock_sync` in a session's dispatcher; returns the function removing both. */
export function registerPlayerMessages(messages: ClientMessages, deps: PlayerMessageDeps): () => void {
  const options = { maxChars: MAX_PLAYER_MESSAGE_BYTES };
  const offStats = messages.on(PLAYER_STATS_TYPE, (msg) => {
    const report = parsePlayerReport(msg);
    if (report) deps.report(report);
  }, options);
  const offClock = messages.on(CLOCK_SYNC_TYPE, (msg, from) => {
    const t = msg.t;
    const now = deps.timelineMs();
    if (typeof t !== "number" || !Number.isFinite(t) || now === null) return;
    from.reply(
      JSON.stringify({
        type: CLOCK_SYNC_TYPE,
        t,
        timeline_ms: Math.round(now * 100) / 100,
        ...deps.clockExtras?.(),
      }),
    );
  }, options);
  return () => {
    offStats();
    offClock();
  };
}
