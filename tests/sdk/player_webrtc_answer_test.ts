/**
 * The WebRTC player's answer: the browser takes the DTLS server's part (`a=setup:passive`), so the SFU, the
 * DTLS client, starts the handshake once its own ICE is ready (docs/media-plane.md, "Connect time").
 */
import assert from "node:assert/strict";
import { dtlsServer } from "../../sdk/player_webrtc_sdp.js";

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
