/**
 * The media WebSocket's lighter framing, for clients that decode the elementary streams themselves (the
 * SDK's WebCodecs player) and ask for it with the subprotocol `FRAMES_SUBPROTOCOL` (the transport registry,
 * `src/vocabulary/transports.ts`): one binary frame
 * per encoded unit — one H.264 access unit or one Opus packet — behind a 16-byte header, instead of a
 * `moof`+`mdat` fragment; the codec configuration rides in the `hello` message instead of an init segment.
 * fMP4 stays the default (`avatar-media.v0`). Layout: docs/media-plane.md, "The lighter framing".
 *
 * @module
 */

/** Bytes of a frame's header. */
export const FRAME_HEADER_BYTES = 16;

/**
 * One frame: byte 0 the kind (1 video, 2 audio), byte 1 flags (bit 0: keyframe), bytes 2–3 zero, bytes
 * 4–11 the presentation time in microseconds on the session's timeline (signed; audio with the Opus
 * pre-skip removed), bytes 12–15 the duration in microseconds, all big-endian; then the payload.
 */
export function encodeFrame(
  kind: "video" | "audio",
  timeMs: number,
  durationMs: number,
  key: boolean,
  payload: Uint8Array,
): Uint8Array {
  const out = new Uint8Array(FRAME_HEADER_BYTES + payload.length);
  out[0] = kind === "video" ? 1 : 2;
  out[1] = key ? 1 : 0;
  // The 64-bit time as two 32-bit halves (no BigInt, no DataView per frame): the high half is signed.
  const us = Math.round(timeMs * 1000);
  const high = Math.floor(us / 2 ** 32);
  putUint32(out, 4, high >>> 0);
  putUint32(out, 8, us - high * 2 ** 32);
  putUint32(out, 12, Math.max(0, Math.round(durationMs * 1000)));
  out.set(payload, FRAME_HEADER_BYTES);
  return out;
}

/** Writes `v` (0 … 2³² − 1) big-endian at `at`. */
function putUint32(out: Uint8Array, at: number, v: number): void {
  out[at] = v >>> 24;
  out[at + 1] = (v >>> 16) & 0xff;
  out[at + 2] = (v >>> 8) & 0xff;
  out[at + 3] = v & 0xff;
}
