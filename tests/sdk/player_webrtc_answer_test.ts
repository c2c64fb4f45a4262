/**
 * The WebRTC player's answer: the browser takes the DTLS server's part (`a=setup:passive`), so the SFU, the
 * DTLS client, starts the handshake once its own ICE is ready (docs/media-plane.md, "Connect time").
 */
import assert from "node:assert/strict";
import { dtlsServer, receivesH264 } from "../../sdk/player_webrtc_sdp.js";

Deno.test("webrtc player: its answer makes the browser the DTLS server; nothing else in the SDP changes", () => {
  const answer = [
    "v=0",
    "m=video 9 UDP/TLS/RTP/SAVPF 96",
    "a=setup:active",
    "a=mid:v",
    "m=audio 9 UDP/TLS/RTP/SAVPF 111",
    "a=setup:active",
    "a=fmtp:111 minptime=10;useinbandfec=1",
    "",
  ];
  const crlf = dtlsServer(answer.join("\r\n"));
  assert.equal(crlf, answer.join("\r\n").replaceAll("a=setup:active", "a=setup:passive"));
  assert.equal(crlf.split("\r\n").length, answer.length);
  assert.equal(
    dtlsServer(answer.join("\n")),
    answer.join("\n").replaceAll("a=setup:active", "a=setup:passive"),
  );
  // A role the browser did not choose as active is left alone (and so is a line that only contains the text).
  for (const line of ["a=setup:passive", "a=setup:actpass", "a=x-note:a=setup:active"]) {
    assert.equal(dtlsServer(`v=0\r\n${line}\r\n`), `v=0\r\n${line}\r\n`);
  }
});

Deno.test("webrtc player: whether the browser can receive the SFU's H.264, from its receiver's capabilities", () => {
  const caps = (...types: string[]) => ({
    getCapabilities: (kind: string) =>
      kind === "video" ? { codecs: types.map((mimeType) => ({ mimeType })) } : null,
  });
  // Chromium's list, and a Firefox with OpenH264.
  assert.equal(receivesH264(caps("video/VP8", "video/rtx", "video/H264", "video/AV1")), true);
  assert.equal(receivesH264(caps("video/h264")), true);
  // Firefox without OpenH264 (Debian's Firefox ESR 153 on a machine without the internet), none at all.
  assert.equal(receivesH264(caps("video/VP8", "video/rtx", "video/VP9", "video/AV1", "video/ulpfec")), false);
  assert.equal(receivesH264(caps()), false);
  assert.equal(receivesH264({ getCapabilities: () => null }), false);
  // A browser that does not say is taken to be able to (the player then negotiates as before).
  assert.equal(receivesH264({}), true);
  assert.equal(receivesH264(undefined), true);
  // Only a codec named H.264, not one that merely contains the text.
  assert.equal(receivesH264(caps("video/H264-SVC", "video/x-h264")), false);
});
