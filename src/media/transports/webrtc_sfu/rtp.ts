/**
 * RTP for the SFU transport (RFC 3550): packetizing the encoders' output for a Janus Streaming mountpoint
 * — H.264 in packetization mode 1 (RFC 6184: single NAL unit packets and FU-A fragments, the marker on the
 * last packet of an access unit, SPS and PPS sent in band before every IDR) and Opus (RFC 7587: one packet
 * per RTP packet) — and reading the microphone's Opus RTP that Janus forwards back.
 *
 * Hand-written because it is small and exact: the only npm packages that do it are whole WebRTC stacks.
 *
 * @module
 */

/** Largest RTP payload sent (fits a 1500-byte MTU with IP/UDP/SRTP overhead to spare). */
export const RTP_MAX_PAYLOAD = 1200;

/** One RTP stream's state: SSRC, sequence number and timestamp offset (all random at start). */
export class RtpStream {
  readonly ssrc: number;
  #seq: number;
  readonly #tsOffset: number;

  constructor(readonly payloadType: number) {
    const r = crypto.getRandomValues(new Uint32Array(3));
    this.ssrc = r[0] >>> 0;
    this.#seq = r[1] & 0xffff;
    this.#tsOffset = r[2] >>> 0;
  }

  /** One RTP packet: a 12-byte header (no CSRC, no extension) and the payload parts. */
  packet(timestamp: number, marker: boolean, ...parts: Uint8Array[]): Uint8Array {
    const len = parts.reduce((n, p) => n + p.length, 0);
    const out = new Uint8Array(12 + len);
    const dv = new DataView(out.buffer);
    out[0] = 0x80;
    out[1] = (marker ? 0x80 : 0) | (this.payloadType & 0x7f);
    dv.setUint16(2, this.#seq);
    this.#seq = (this.#seq + 1) & 0xffff;
    dv.setUint32(4, (this.#tsOffset + timestamp) >>> 0);
    dv.setUint32(8, this.ssrc);
    let o = 12;
    for (const p of parts) {
      out.set(p, o);
      o += p.length;
    }
    return out;
  }
}

/** The NAL units of an access unit in AVCC form (4-byte big-endian lengths). */
export function avccNalUnits(au: Uint8Array): Uint8Array[] {
  const out: Uint8Array[] = [];
  const dv = new DataView(au.buffer, au.byteOffset, au.byteLength);
  for (let o = 0; o + 4 <= au.length;) {
    const n = dv.getUint32(o);
    if (n === 0 || o + 4 + n > au.length) break;
    out.push(au.subarray(o + 4, o + 4 + n));
    o += 4 + n;
  }
  return out;
}

/** The SPS and PPS NAL units of an AVCDecoderConfigurationRecord. */
export function avcCParameterSets(avcC: Uint8Array): Uint8Array[] {
  const out: Uint8Array[] = [];
  let o = 5;
  const numSps = avcC[o++] & 0x1f;
  for (let i = 0; i < numSps && o + 2 <= avcC.length; i++) {
    const n = avcC[o] << 8 | avcC[o + 1];
    out.push(avcC.subarray(o + 2, o + 2 + n));
    o += 2 + n;
  }
  const numPps = avcC[o++] ?? 0;
  for (let i = 0; i < numPps && o + 2 <= avcC.length; i++) {
    const n = avcC[o] << 8 | avcC[o + 1];
    out.push(avcC.subarray(o + 2, o + 2 + n));
    o += 2 + n;
  }
  return out;
}

/** NAL unit types left out of the RTP stream: access unit delimiters and SEI (x264's banner). */
const SKIPPED_NAL_TYPES = new Set([6, 9]);

/**
 * Packetizes one H.264 access unit (AVCC) at `timestamp` (90 kHz): NAL units up to
 * {@link RTP_MAX_PAYLOAD} bytes go whole, larger ones as FU-A fragments; `parameterSets` (SPS, PPS) are
 * sent first when given (before an IDR). The last packet carries the marker bit.
 */
export function packetizeH264(
  stream: RtpStream,
  au: Uint8Array,
  timestamp: number,
  parameterSets: Uint8Array[] = [],
): Uint8Array[] {
  const nals = [...parameterSets, ...avccNalUnits(au).filter((n) => !SKIPPED_NAL_TYPES.has(n[0] & 0x1f))];
  const packets: Uint8Array[] = [];
  nals.forEach((nal, i) => {
    const lastNal = i === nals.length - 1;
    if (nal.length <= RTP_MAX_PAYLOAD) {
      packets.push(stream.packet(timestamp, lastNal, nal));
      return;
    }
    const indicator = (nal[0] & 0xe0) | 28;
    const type = nal[0] & 0x1f;
    for (let o = 1; o < nal.length; o += RTP_MAX_PAYLOAD - 2) {
      const end = Math.min(nal.length, o + RTP_MAX_PAYLOAD - 2);
      const header = (o === 1 ? 0x80 : 0) | (end === nal.length ? 0x40 : 0) | type;
      packets.push(
        stream.packet(
          timestamp,
          lastNal && end === nal.length,
          Uint8Array.of(indicator, header),
          nal.subarray(o, end),
        ),
      );
    }
  });
  return packets;
}

/** A parsed RTP packet. */
export interface RtpPacket {
  payloadType: number;
  sequence: number;
  timestamp: number;
  ssrc: number;
  marker: boolean;
  payload: Uint8Array;
}

/** Parses an RTP packet (CSRCs, header extension and padding skipped); null when it is not RTP. */
export function parseRtp(buf: Uint8Array): RtpPacket | null {
  if (buf.length < 12 || buf[0] >> 6 !== 2) return null;
  const dv = new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
  const cc = buf[0] & 0x0f;
  let o = 12 + cc * 4;
  if (buf[0] & 0x10) {
    if (o + 4 > buf.length) return null;
    o += 4 + dv.getUint16(o + 2) * 4;
  }
  let end = buf.length;
  if (buf[0] & 0x20) end -= buf[buf.length - 1];
  if (o > end) return null;
  const pt = buf[1] & 0x7f;
  if (pt >= 72 && pt <= 79) return null; // RTCP on the same port
  return {
    payloadType: pt,
    sequence: dv.getUint16(2),
    timestamp: dv.getUint32(4),
    ssrc: dv.getUint32(8),
    marker: (buf[1] & 0x80) !== 0,
    payload: buf.subarray(o, end),
  };
}
