/**
 * A streaming FLV demuxer for the video encoder's output: ffmpeg writes H.264 in FLV because FLV tags
 * carry their length up front, so each access unit can be forwarded the moment its last byte arrives
 * (raw Annex B would only end at the next start code, one frame later). The AVC sequence header is the
 * AVCDecoderConfigurationRecord (`avcC`) and access units are already length-prefixed NAL units, exactly
 * what an `avc1` track in MP4 stores.
 *
 * @module
 */
import { ByteQueue } from "./bytes.ts";

/** One H.264 access unit in AVCC form (4-byte NAL lengths). */
export interface AvcAccessUnit {
  data: Uint8Array;
  key: boolean;
  /** Composition time offset in ms (0 without B-frames). */
  ctsMs: number;
  /** FLV timestamp in ms (the encoder's own clock; informational). */
  dtsMs: number;
}

/** What the demuxer reports. */
export interface FlvEvents {
  /** The AVCDecoderConfigurationRecord (once, before the first access unit). */
  onConfig(avcC: Uint8Array): void;
  onAccessUnit(au: AvcAccessUnit): void;
}

/** Raised on bytes that are not FLV. */
export class FlvError extends Error {
  override name = "FlvError";
}

/** Parses an FLV byte stream incrementally; call {@link FlvDemuxer.push} with each chunk read. */
export class FlvDemuxer {
  readonly #q = new ByteQueue();
  #headerDone = false;

  constructor(readonly events: FlvEvents) {}

  /** Feeds bytes; emits every complete tag. Throws {@link FlvError} on a malformed stream. */
  push(chunk: Uint8Array): void {
    this.#q.push(chunk);
    for (;;) {
      const b = this.#q.view();
      if (!this.#headerDone) {
        if (b.length < 13) return;
        if (b[0] !== 0x46 || b[1] !== 0x4c || b[2] !== 0x56) throw new FlvError("not an FLV stream");
        const headerSize = (b[5] << 24 | b[6] << 16 | b[7] << 8 | b[8]) >>> 0;
        if (b.length < headerSize + 4) return;
        this.#q.consume(headerSize + 4); // header + PreviousTagSize0
        this.#headerDone = true;
        continue;
      }
      if (b.length < 11) return;
      const type = b[0] & 0x1f;
      const size = b[1] << 16 | b[2] << 8 | b[3];
      if (b.length < 11 + size + 4) return;
      const ts = (b[7] << 24 | b[4] << 16 | b[5] << 8 | b[6]) >>> 0;
      if (type === 9 && size >= 5) this.#video(b.subarray(11, 11 + size), ts);
      this.#q.consume(11 + size + 4);
    }
  }

  #video(tag: Uint8Array, dtsMs: number): void {
    const frameType = tag[0] >> 4;
    const codecId = tag[0] & 0x0f;
    if (codecId !== 7) throw new FlvError(`unsupported FLV video codec ${codecId}`);
    const packetType = tag[1];
    let cts = tag[2] << 16 | tag[3] << 8 | tag[4];
    if (cts & 0x800000) cts -= 0x1000000;
    const body = tag.slice(5);
    if (packetType === 0) this.events.onConfig(body);
    else if (packetType === 1 && body.length > 0) {
      this.events.onAccessUnit({ data: body, key: frameType === 1, ctsMs: cts, dtsMs });
    }
  }
}

/** The RFC 6381 codec string (`avc1.PPCCLL`) of an AVCDecoderConfigurationRecord. */
export function avcCodecString(avcC: Uint8Array): string {
  const hex = (n: number) => n.toString(16).padStart(2, "0");
  return `avc1.${hex(avcC[1])}${hex(avcC[2])}${hex(avcC[3])}`;
}
