// @ts-check
/**
 * Reading the media WebSocket's stream for the WebCodecs player (`./player_webcodecs.js`): the fragmented
 * MP4 the service sends by default (an init segment, then one `moof`+`mdat` per video frame or audio
 * fragment, each of one track), and the lighter framing it sends when a client asks for it (the
 * `avatar-media.frames.v0` subprotocol, see docs/media-plane.md): one binary frame per encoded unit with a
 * 16-byte header, the codec configuration in the `hello` message.
 *
 * Only what the service writes is read (no edit lists, one sample description per track), but the
 * `tfhd`/`trun` defaults and optional fields of ISO BMFF are honoured, so any fragmented MP4 of that shape
 * demuxes. Pure functions, no DOM: the same code runs in Deno's tests.
 *
 * @module
 */

/**
 * @typedef {object} TrackInfo
 * @property {number} id Track id.
 * @property {number} timescale Ticks per second of the track's times.
 */

/**
 * @typedef {object} InitInfo What the init segment says.
 * @property {TrackInfo & { codec: string; description: Uint8Array; width: number; height: number }} video
 *   The H.264 track: `codec` is the `avc1.PPCCLL` string for `VideoDecoder.configure`, `description` its
 *   AVCDecoderConfigurationRecord.
 * @property {TrackInfo & { channels: number; preSkip: number; sampleRate: number }} audio The Opus track.
 */

/**
 * @typedef {object} DemuxedSample
 * @property {Uint8Array} data
 * @property {number} time Presentation time, ms on the session's timeline (audio: Opus pre-skip removed).
 * @property {number} duration ms.
 * @property {boolean} key A sync sample (every audio sample is one).
 */

/**
 * @typedef {object} DemuxedSegment
 * @property {"video" | "audio"} kind
 * @property {DemuxedSample[]} samples
 */

const ascii = (/** @type {Uint8Array} */ b, /** @type {number} */ o) =>
  String.fromCharCode(b[o], b[o + 1], b[o + 2], b[o + 3]);

/**
 * The boxes inside `[start, end)` of `buf`: type, payload start and end.
 * @param {Uint8Array} buf
 * @param {number} start
 * @param {number} end
 * @returns {{ type: string; at: number; start: number; end: number }[]}
 */
function boxes(buf, start, end) {
  const dv = new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
  /** @type {{ type: string; at: number; start: number; end: number }[]} */
  const out = [];
  let o = start;
  while (o + 8 <= end) {
    let size = dv.getUint32(o);
    let header = 8;
    if (size === 1) {
      size = Number(dv.getBigUint64(o + 8));
      header = 16;
    } else if (size === 0) size = end - o;
    if (size < header || o + size > end) throw new Error(`malformed MP4 box at ${o}`);
    out.push({ type: ascii(buf, o + 4), at: o, start: o + header, end: o + size });
    o += size;
  }
  return out;
}

/**
 * The first child box of `type` of a box, or null.
 * @param {Uint8Array} buf
 * @param {{ start: number; end: number }} parent
 * @param {string} type
 * @param {number} [skip] bytes to skip at the start of the payload (sample entries)
 */
function child(buf, parent, type, skip = 0) {
  return boxes(buf, parent.start + skip, parent.end).find((b) => b.type === type) ?? null;
}

/**
 * The `avc1.PPCCLL` codec string of an AVCDecoderConfigurationRecord.
 * @param {Uint8Array} avcC
 */
export function avcCodecString(avcC) {
  const hex = (/** @type {number} */ n) => n.toString(16).padStart(2, "0");
  return `avc1.${hex(avcC[1])}${hex(avcC[2])}${hex(avcC[3])}`;
}

/**
 * Reads the init segment (`ftyp` + `moov`) of the service's stream: the H.264 and the Opus track.
 * Throws on anything else.
 * @param {Uint8Array} buf
 * @returns {InitInfo}
 */
export function parseInitSegment(buf) {
  const moov = boxes(buf, 0, buf.length).find((b) => b.type === "moov");
  if (!moov) throw new Error("no moov box in the init segment");
  const dv = new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
  /** @type {InitInfo["video"] | null} */
  let video = null;
  /** @type {InitInfo["audio"] | null} */
  let audio = null;
  for (const trak of boxes(buf, moov.start, moov.end).filter((b) => b.type === "trak")) {
    const tkhd = child(buf, trak, "tkhd");
    const mdia = child(buf, trak, "mdia");
    if (!tkhd || !mdia) continue;
    const id = dv.getUint32(tkhd.start + (buf[tkhd.start] === 1 ? 20 : 12));
    const mdhd = child(buf, mdia, "mdhd");
    const hdlr = child(buf, mdia, "hdlr");
    const minf = child(buf, mdia, "minf");
    const stbl = minf && child(buf, minf, "stbl");
    const stsd = stbl && child(buf, stbl, "stsd");
    if (!mdhd || !hdlr || !stsd) continue;
    const timescale = dv.getUint32(mdhd.start + (buf[mdhd.start] === 1 ? 20 : 12));
    const handler = ascii(buf, hdlr.start + 8);
    const entry = boxes(buf, stsd.start + 8, stsd.end)[0];
    if (!entry) continue;
    if (handler === "vide" && entry.type === "avc1") {
      const avcC = child(buf, entry, "avcC", 78);
      if (!avcC) throw new Error("the video track has no avcC");
      const description = buf.slice(avcC.start, avcC.end);
      video = {
        id,
        timescale,
        codec: avcCodecString(description),
        description,
        width: dv.getUint16(entry.start + 24),
        height: dv.getUint16(entry.start + 26),
      };
    } else if (handler === "soun" && entry.type === "Opus") {
      const dOps = child(buf, entry, "dOps", 28);
      if (!dOps) throw new Error("the audio track has no dOps");
      audio = {
        id,
        timescale,
        channels: buf[dOps.start + 1],
        preSkip: dv.getUint16(dOps.start + 2),
        sampleRate: 48000,
      };
    }
  }
  if (!video || !audio) throw new Error("the init segment lacks the H.264 or the Opus track");
  return { video, audio };
}

/**
 * Reads one media segment (`moof` + `mdat`, samples of one track) of the service's stream.
 * @param {Uint8Array} buf
 * @param {InitInfo} init
 * @returns {DemuxedSegment}
 */
export function parseMediaSegment(buf, init) {
  const top = boxes(buf, 0, buf.length);
  const moof = top.find((b) => b.type === "moof");
  if (!moof) throw new Error("no moof box in the media segment");
  const dv = new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
  const traf = child(buf, moof, "traf");
  const tfhd = traf && child(buf, traf, "tfhd");
  const tfdt = traf && child(buf, traf, "tfdt");
  const trun = traf && child(buf, traf, "trun");
  if (!traf || !tfhd || !tfdt || !trun) throw new Error("the media segment lacks tfhd, tfdt or trun");
  const tfhdFlags = dv.getUint32(tfhd.start) & 0xffffff;
  const trackId = dv.getUint32(tfhd.start + 4);
  let p = tfhd.start + 8;
  let base = moof.at; // the moof's first byte (default-base-is-moof, and the default of a first traf)
  if (tfhdFlags & 0x01) {
    base = Number(dv.getBigUint64(p));
    p += 8;
  }
  if (tfhdFlags & 0x02) p += 4; // sample description index
  let defaultDuration = 0;
  let defaultSize = 0;
  let defaultFlags = 0;
  if (tfhdFlags & 0x08) defaultDuration = dv.getUint32((p += 4) - 4);
  if (tfhdFlags & 0x10) defaultSize = dv.getUint32((p += 4) - 4);
  if (tfhdFlags & 0x20) defaultFlags = dv.getUint32((p += 4) - 4);
  const decodeTime = buf[tfdt.start] === 1
    ? Number(dv.getBigUint64(tfdt.start + 4))
    : dv.getUint32(tfdt.start + 4);
  const video = trackId === init.video.id;
  if (!video && trackId !== init.audio.id) throw new Error(`unknown track ${trackId}`);
  const track = video ? init.video : init.audio;
  const trunFlags = dv.getUint32(trun.start) & 0xffffff;
  const count = dv.getUint32(trun.start + 4);
  p = trun.start + 8;
  let offset = base;
  if (trunFlags & 0x01) offset = base + dv.getInt32((p += 4) - 4);
  let firstFlags = null;
  if (trunFlags & 0x04) firstFlags = dv.getUint32((p += 4) - 4);
  const skip = video ? 0 : init.audio.preSkip;
  /** @type {DemuxedSample[]} */
  const samples = [];
  let t = decodeTime;
  for (let i = 0; i < count; i++) {
    const duration = trunFlags & 0x100 ? dv.getUint32((p += 4) - 4) : defaultDuration;
    const size = trunFlags & 0x200 ? dv.getUint32((p += 4) - 4) : defaultSize;
    let flags = trunFlags & 0x400 ? dv.getUint32((p += 4) - 4) : defaultFlags;
    if (i === 0 && firstFlags !== null) flags = firstFlags;
    if (trunFlags & 0x800) p += 4; // composition time offset (no B-frames here)
    if (offset + size > buf.length) throw new Error("a sample runs past the end of the segment");
    samples.push({
      data: buf.subarray(offset, offset + size),
      time: (t - skip) * 1000 / track.timescale,
      duration: duration * 1000 / track.timescale,
      key: !video || (flags & 0x00010000) === 0, // sample_is_non_sync_sample clear
    });
    offset += size;
    t += duration;
  }
  return { kind: video ? "video" : "audio", samples };
}

/** Subprotocol of the lighter framing (asked for next to `avatar-media.v0`). */
export const FRAMES_SUBPROTOCOL = "avatar-media.frames.v0";
/** Bytes of a light frame's header. */
export const FRAME_HEADER_BYTES = 16;

/**
 * Reads one binary frame of the lighter framing: byte 0 the kind (1 video, 2 audio), byte 1 flags (bit 0:
 * keyframe), bytes 2–3 reserved, bytes 4–11 the presentation time in microseconds on the session's timeline
 * (audio: Opus pre-skip removed), bytes 12–15 the duration in microseconds (all big-endian), then one H.264
 * access unit (AVCC, 4-byte lengths) or one Opus packet.
 * @param {Uint8Array} buf
 * @returns {DemuxedSegment}
 */
export function parseFrame(buf) {
  if (buf.length < FRAME_HEADER_BYTES) throw new Error("a media frame shorter than its header");
  const dv = new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
  const kind = buf[0] === 1 ? "video" : buf[0] === 2 ? "audio" : null;
  if (!kind) throw new Error(`unknown media frame kind ${buf[0]}`);
  return {
    kind,
    samples: [{
      data: buf.subarray(FRAME_HEADER_BYTES),
      time: Number(dv.getBigInt64(4)) / 1000,
      duration: dv.getUint32(12) / 1000,
      key: kind === "audio" || (buf[1] & 1) === 1,
    }],
  };
}

/**
 * Decodes the base64 of a `hello`'s codec description.
 * @param {string} b64
 */
export function fromBase64(b64) {
  const s = atob(b64);
  const out = new Uint8Array(s.length);
  for (let i = 0; i < s.length; i++) out[i] = s.charCodeAt(i);
  return out;
}
