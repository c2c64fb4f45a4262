/**
 * The worker's Janus client at the TCP level: each request leaves in one write. Deno's own `WebSocket` client
 * wrote a frame over 1 KiB as its header, then its payload, on a socket with Nagle's algorithm on: the payload
 * waited for Janus's delayed acknowledgement of the header (41–48 ms per SDP answer on loopback). A fake Janus
 * here reads the raw socket and records, for each request, how much of its frame the first read held.
 */
import assert from "node:assert/strict";
import { JanusConnection } from "../../src/media/transports/webrtc_sfu/janus.ts";

const GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";

/** The length of the client frame at the start of `b` (header and masked payload), or null if unknown yet. */
function frameLength(b: Uint8Array): number | null {
  if (b.length < 2) return null;
  const len7 = b[1] & 0x7f;
  if (len7 < 126) return 2 + 4 + len7;
  if (len7 === 126) return b.length < 4 ? null : 4 + 4 + ((b[2] << 8) | b[3]);
  return null; // no request here is that large
}

/** The payload of the client frame at the start of `b` (unmasked). */
function payloadOf(b: Uint8Array): string {
  const len7 = b[1] & 0x7f;
  const at = len7 < 126 ? 2 : 4;
  const n = len7 < 126 ? len7 : (b[2] << 8) | b[3];
  const mask = b.subarray(at, at + 4);
  const out = b.slice(at + 4, at + 4 + n);
  for (let i = 0; i < out.length; i++) out[i] ^= mask[i % 4];
  return new TextDecoder().decode(out);
}

/** An unmasked server text frame. */
function serverFrame(text: string): Uint8Array {
  const p = new TextEncoder().encode(text);
  const head = p.length < 126 ? [0x81, p.length] : [0x81, 126, p.length >> 8, p.length & 0xff];
  const out = new Uint8Array(head.length + p.length);
  out.set(head);
  out.set(p, head.length);
  return out;
}

Deno.test("janus client: a request over 1 KiB (an SDP answer) leaves in one write, never its header alone", async () => {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  /** For each request: the bytes of its frame the first read brought, and the frame's length. */
  const firstReads: { got: number; of: number }[] = [];
  let accepted: Deno.Conn | null = null;
  const served = (async () => {
    const conn = accepted = await listener.accept();
    try {
      const buf = new Uint8Array(64 * 1024);
      let head = "";
      while (!head.includes("\r\n\r\n")) {
        const n = await conn.read(buf);
        if (n === null) return;
        head += new TextDecoder().decode(buf.subarray(0, n));
      }
      const key = /sec-websocket-key: *(\S+)/i.exec(head)![1];
      const accept = new Uint8Array(await crypto.subtle.digest("SHA-1", new TextEncoder().encode(key + GUID)))
        .toBase64();
      await conn.write(new TextEncoder().encode(
        "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n" +
          `Sec-WebSocket-Accept: ${accept}\r\nSec-WebSocket-Protocol: janus-protocol\r\n\r\n`,
      ));
      let pending = new Uint8Array(0);
      for (;;) {
        const n = await conn.read(buf);
        if (n === null) return;
        // A frame whose first bytes this read brought: how much of it did the read bring?
        let startsHere = pending.length === 0;
        const joined = new Uint8Array(pending.length + n);
        joined.set(pending);
        joined.set(buf.subarray(0, n), pending.length);
        pending = joined;
        for (;;) {
          const len = frameLength(pending);
          if (startsHere && len !== null && (pending[0] & 0x0f) === 0x1) {
            firstReads.push({ got: Math.min(pending.length, len), of: len });
          }
          startsHere = false;
          if (len === null || pending.length < len) break;
          const frame = pending.slice(0, len);
          pending = pending.slice(len);
          startsHere = pending.length > 0;
          if ((frame[0] & 0x0f) !== 0x1) continue; // pongs, the close
          const req = JSON.parse(payloadOf(frame));
          await conn.write(serverFrame(JSON.stringify({ janus: "success", transaction: req.transaction })));
        }
      }
    } catch {
      // the client went away
    } finally {
      try {
        conn.close();
      } catch { /* closed */ }
      accepted = null;
    }
  })();
  const janus = await JanusConnection.open(
    `ws://127.0.0.1:${(listener.addr as Deno.NetAddr).port}`,
    "s3cret",
  );
  try {
    // Like a viewer's answer: a small request, a pause (the peer acknowledges nothing it has no answer for),
    // then ~1.6 KB.
    const sdp = "a=x\r\n".repeat(320);
    for (let i = 0; i < 8; i++) {
      await janus.request({ janus: "keepalive", session_id: 1 });
      await new Promise((r) => setTimeout(r, 30));
      await janus.request({ janus: "message", body: { request: "start" }, jsep: { type: "answer", sdp } });
    }
  } finally {
    await janus.close();
    listener.close();
    try {
      (accepted as Deno.Conn | null)?.close();
    } catch { /* closed */ }
    await served;
  }
  const big = firstReads.filter((r) => r.of > 1024);
  assert.equal(big.length, 8, JSON.stringify(firstReads));
  const split = big.filter((r) => r.got < r.of);
  assert.equal(split.length, 0, `requests whose first read held part of the frame: ${JSON.stringify(split)}`);
});
