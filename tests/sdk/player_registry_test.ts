/**
 * `createPlayer` picks its player by the transport `stream_metadata.transport` names, through one registry
 * (sdk/player.js `PLAYERS`), not by which endpoint field is set: seen here without a browser, by which
 * player's option checks answer (the fMP4 player wants a `<video>`, the WebRTC player an `sfu_endpoint`).
 * The players themselves are exercised in Chromium (`player_browser_test.ts`, `tests/media/sfu_*`).
 *
 * @module
 */
import assert from "node:assert/strict";

// Loaded by URL: player.js is type-checked with the DOM libraries (`tests/sdk/browser.deno.json`, in
// `deno task ok`), which this test's own check has not.
const { createPlayer } = await import(new URL("../../sdk/player.js", import.meta.url).href) as {
  createPlayer(options: unknown): unknown;
};

const webrtc = /createWebRtcPlayer needs streamMetadata\.sfu_endpoint/;
const fmp4 = /createPlayer: video must be a <video> element/;
const play = (streamMetadata: Record<string, unknown> | undefined) => () =>
  createPlayer({ clientToken: "t", streamMetadata });

Deno.test("player registry: the transport stream_metadata names picks the player, whatever endpoint is set", () => {
  assert.throws(play({ transport: "webrtc_sfu", media_url: "wss://svc.test/media" }), webrtc);
  assert.throws(play({ transport: "websocket_fmp4", sfu_endpoint: "wss://svc.test/sfu" }), fmp4);
});

Deno.test("player registry: a transport this SDK has no player for is refused, naming the ones it has", () => {
  assert.throws(
    play({ transport: "carrier_pigeon", media_url: "wss://svc.test/media" }),
    (e: Error) =>
      e instanceof TypeError && e.message.includes('"carrier_pigeon"') &&
      e.message.includes("websocket_fmp4, webrtc_sfu"),
  );
});

Deno.test("player registry: without transport (mediaUrl only, or an older service) the endpoint field decides", () => {
  // (`sfu_endpoint` without `transport` goes to the WebRTC player, which needs a real page to fail cleanly:
  // tests/sdk/player_tool_calls_browser_test.ts creates its WebRTC player so, in Chromium.)
  assert.throws(play({ media_url: "wss://svc.test/media" }), fmp4);
  assert.throws(play(undefined), fmp4);
});
