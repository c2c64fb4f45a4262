// @ts-check
/**
 * The WebRTC player's SDP: how its answer to the SFU's offer is sent and applied.
 *
 * @module
 */

/**
 * The subscriber's answer as sent and applied: the browser takes the DTLS server's part (`a=setup:passive`
 * where it chose `active`). How a viewer connects fast (measured on loopback, `bench:player --paths
 * webrtc_sfu --connects 6` with page-side timings, 6 Dec): its answer goes out at once, without its ICE
 * candidates (the SFU learns the browser's address from its connectivity checks, as peer-reflexive
 * candidates, as SFUs commonly do; gathering took ~65 ms); the player applies it only once the service says
 * the SFU has it (`started`), so the browser's first connectivity check is answered (sent before, it was
 * dropped and the next came ~50 ms later); and as the DTLS server the browser is ready before the SFU's ICE
 * is, where as the client its first handshake message reached an SFU not ready yet and was resent ~50 ms
 * later. Both Chromium and Firefox accept the changed role (checked with two PeerConnections in each).
 * @param {string} sdp
 */
export function dtlsServer(sdp) {
  return sdp.replace(/^a=setup:active(\r?)$/gm, "a=setup:passive$1");
}
