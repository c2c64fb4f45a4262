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

/** One unit of the lighter framing before it is framed: an H.264 access unit or an Opus packet. */
export interface FrameUnit {
  readonly kind: "video" | "audio";
  /** Presentation time, ms on the session's timeline (audio with the Opus pre-skip removed). */
  readonly timeMs: number;
  readonly durationMs: number;
  /** Video keyframe (audio: always true). */
  readonly key: boolean;
  readonly payload: Uint8Array;
}

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
  writeFrame(out, { kind, timeMs, durationMs, key, payload });
  return out;
}

/** The buffer {@link frameView} builds frames in (grown to the largest frame, one per process). */
let scratch = new Uint8Array(4096);

/**
 * `unit` framed in a buffer shared by the process: valid only until the next call, for a send that copies
 * its data before returning (a WebSocket's `send` does). A frame per client send, without an array per
 * frame: frames of more than 64 bytes are kept outside the JavaScript heap, and freeing many at once held
 * the process up.
 */
export function frameView(unit: FrameUnit): Uint8Array {
  const n = FRAME_HEADER_BYTES + unit.payload.length;
  if (scratch.length < n) scratch = new Uint8Array(Math.max(n, 2 * scratch.length));
  writeFrame(scratch, unit);
  return scratch.subarray(0, n);
}

/** Writes `unit`'s frame at the start of `out` (which has room for it). */
function writeFrame(out: Uint8Array, unit: FrameUnit): void {
  out[0] = unit.kind === "video" ? 1 : 2;
  out[1] = unit.key ? 1 : 0;
  out[2] = out[3] = 0;
  // The 64-bit time as two 32-bit halves (no BigInt, no DataView per frame): the high half is signed.
  const us = Math.round(unit.timeMs * 1000);
  const high = Math.floor(us / 2 ** 32);
  putUint32(out, 4, high >>> 0);
  putUint32(out, 8, us - high * 2 ** 32);
  putUint32(out, 12, Math.max(0, Math.round(unit.durationMs * 1000)));
  out.set(unit.payload, FRAME_HEADER_BYTES);
}

/** Writes `v` (0 … 2³² − 1) big-endian at `at`. */
function putUint32(out: Uint8Array, at: number, v: number): void {
  out[at] = v >>> 24;
  out[at + 1] = (v >>> 16) & 0xff;
  out[at + 2] = (v >>> 8) & 0xff;
  out[at + 3] = v & 0xff;
}
