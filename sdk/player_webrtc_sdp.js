// @ts-check
/**
 * The WebRTC player's SDP: how its answer to the SFU's offer is sent and applied, and whether the browser can
 * take the offer's video (H.264).
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

/**
 * Whether this browser can receive H.264 over WebRTC, the SFU's only video codec (constrained baseline). A
 * Firefox without Cisco's OpenH264 plugin — which it downloads when first run, so not on a machine kept off
 * the internet or where the download is turned off — cannot: its answer would refuse the video. A browser
 * that does not say (no `RTCRtpReceiver.getCapabilities`) is taken to be able to.
 * @param {{ getCapabilities?: (kind: string) => { codecs: { mimeType: string }[] } | null } | undefined} receiver
 *   `RTCRtpReceiver` (a parameter for the tests)
 */
export function receivesH264(receiver = /** @type {any} */ (globalThis).RTCRtpReceiver) {
  if (typeof receiver?.getCapabilities !== "function") return true;
  const codecs = receiver.getCapabilities("video")?.codecs ?? [];
  return codecs.some((c) => /^video\/h264$/i.test(c.mimeType));
}
