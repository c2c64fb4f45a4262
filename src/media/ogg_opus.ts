/**
 * A streaming Ogg demuxer for the audio encoder's output (Opus in Ogg, one packet per page): yields the
 * `OpusHead` identification header and each audio packet with its duration.
 *
 * @module
 */
import { ByteQueue } from "./bytes.ts";

/** The fields of `OpusHead` an MP4 `dOps` box needs. */
export interface OpusHead {
  channels: number;
  preSkip: number;
  inputSampleRate: number;
  outputGain: number;
}

/** What the demuxer reports. */
export interface OggOpusEvents {
  onHead(head: OpusHead): void;
  /** One Opus packet; `samples` is its duration at 48 kHz. */
  onPacket(data: Uint8Array, samples: number): void;
}

/** Raised on bytes that are not Ogg Opus. */
export class OggError extends Error {
  override name = "OggError";
}

/** Duration of an Opus packet at 48 kHz, from its TOC byte and frame count (RFC 6716 §3.1). */
export function opusPacketSamples(packet: Uint8Array): number {
  if (packet.length === 0) return 0;
  const toc = packet[0];
  const config = toc >> 3;
  let frameSamples: number;
  if (config < 12) frameSamples = [480, 960, 1920, 2880][config & 3]; // SILK: 10/20/40/60 ms
  else if (config < 16) frameSamples = [480, 960][config & 1]; // hybrid: 10/20 ms
  else frameSamples = [120, 240, 480, 960][config & 3]; // CELT: 2.5/5/10/20 ms
  const code = toc & 3;
  const frames = code === 0 ? 1 : code === 3 ? (packet.length > 1 ? packet[1] & 0x3f : 0) : 2;
  return frameSamples * frames;
}

/** Parses an Ogg Opus byte stream incrementally. */
export class OggOpusDemuxer {
  readonly #q = new ByteQueue();
  #pending: Uint8Array[] = [];
  #headers = 0;

  constructor(readonly events: OggOpusEvents) {}

  /** Feeds bytes; emits the header and every complete packet. Throws {@link OggError} on bad input. */
  push(chunk: Uint8Array): void {
    this.#q.push(chunk);
    for (;;) {
      const b = this.#q.view();
      if (b.length < 27) return;
      if (b[0] !== 0x4f || b[1] !== 0x67 || b[2] !== 0x67 || b[3] !== 0x53) {
        throw new OggError("lost Ogg sync");
      }
      const nseg = b[26];
      if (b.length < 27 + nseg) return;
      let bodyLen = 0;
      for (let i = 0; i < nseg; i++) bodyLen += b[27 + i];
      if (b.length < 27 + nseg + bodyLen) return;
      let off = 27 + nseg;
      for (let i = 0; i < nseg; i++) {
        const lace = b[27 + i];
        this.#pending.push(b.slice(off, off + lace));
        off += lace;
        if (lace < 255) this.#packet();
      }
      this.#q.consume(27 + nseg + bodyLen);
    }
  }

  #packet(): void {
    const parts = this.#pending;
    this.#pending = [];
    let n = 0;
    for (const p of parts) n += p.length;
    const data = new Uint8Array(n);
    let o = 0;
    for (const p of parts) {
      data.set(p, o);
      o += p.length;
    }
    if (this.#headers === 0) {
      if (n < 19 || new TextDecoder().decode(data.subarray(0, 8)) !== "OpusHead") {
        throw new OggError("missing OpusHead");
      }
      const dv = new DataView(data.buffer);
      this.events.onHead({
        channels: data[9],
        preSkip: dv.getUint16(10, true),
        inputSampleRate: dv.getUint32(12, true),
        outputGain: dv.getInt16(16, true),
      });
      this.#headers++;
      return;
    }
    if (this.#headers === 1) { // OpusTags
      this.#headers++;
      return;
    }
    if (n > 0) this.events.onPacket(data, opusPacketSamples(data));
  }
}
