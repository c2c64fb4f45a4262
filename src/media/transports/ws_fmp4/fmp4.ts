/**
 * A small fragmented-MP4 (ISO BMFF) writer for live streaming to Media Source Extensions: one init
 * segment (`ftyp` + `moov` with an H.264 video track and an Opus audio track) and media segments
 * (`moof` + `mdat`) that each carry samples of one track. Muxing here, from the encoders' elementary
 * streams, avoids ffmpeg's mp4 muxer, which holds every fragment until the next frame arrives.
 *
 * @module
 */
import type { OpusHead } from "../../ogg_opus.ts";

/** Track id of the video track. */
export const VIDEO_TRACK_ID = 1;
/** Track id of the audio track. */
export const AUDIO_TRACK_ID = 2;
/** Timescale of the video track (ticks per second). */
export const VIDEO_TIMESCALE = 90_000;
/** Timescale of the audio track (Opus always decodes at 48 kHz). */
export const AUDIO_TIMESCALE = 48_000;

/** What the init segment describes. */
export interface InitSegmentSpec {
  width: number;
  height: number;
  /** AVCDecoderConfigurationRecord. */
  avcC: Uint8Array;
  opus: OpusHead;
}

/** One sample of a media segment. */
export interface Sample {
  data: Uint8Array;
  /** Duration in the track's timescale. */
  duration: number;
  /** Sync sample (keyframe); audio samples are always sync samples. */
  key: boolean;
}

const enc = new TextEncoder();

function u32(n: number): Uint8Array {
  const b = new Uint8Array(4);
  new DataView(b.buffer).setUint32(0, n >>> 0);
  return b;
}
function u16(n: number): Uint8Array {
  return new Uint8Array([(n >> 8) & 0xff, n & 0xff]);
}
function u64(n: number): Uint8Array {
  const b = new Uint8Array(8);
  new DataView(b.buffer).setBigUint64(0, BigInt(n));
  return b;
}
function zeros(n: number): Uint8Array {
  return new Uint8Array(n);
}

/** Builds one box from its type and payload parts. */
export function box(type: string, ...parts: Uint8Array[]): Uint8Array {
  let size = 8;
  for (const p of parts) size += p.length;
  const out = new Uint8Array(size);
  new DataView(out.buffer).setUint32(0, size);
  out.set(enc.encode(type), 4);
  let o = 8;
  for (const p of parts) {
    out.set(p, o);
    o += p.length;
  }
  return out;
}

function fullBox(type: string, version: number, flags: number, ...parts: Uint8Array[]): Uint8Array {
  return box(
    type,
    new Uint8Array([version, (flags >> 16) & 0xff, (flags >> 8) & 0xff, flags & 0xff]),
    ...parts,
  );
}

const MATRIX = [0x00010000, 0, 0, 0, 0x00010000, 0, 0, 0, 0x40000000];
function matrix(): Uint8Array {
  const b = new Uint8Array(36);
  const dv = new DataView(b.buffer);
  MATRIX.forEach((v, i) => dv.setUint32(i * 4, v));
  return b;
}

function tkhd(trackId: number, width: number, height: number, audio: boolean): Uint8Array {
  return fullBox(
    "tkhd",
    0,
    0x3, // enabled, in movie
    u32(0),
    u32(0),
    u32(trackId),
    u32(0),
    u32(0), // duration
    zeros(8),
    u16(0), // layer
    u16(0), // alternate group
    u16(audio ? 0x0100 : 0), // volume
    u16(0),
    matrix(),
    u32(width << 16),
    u32(height << 16),
  );
}

function mdhd(timescale: number): Uint8Array {
  return fullBox("mdhd", 0, 0, u32(0), u32(0), u32(timescale), u32(0), u16(0x55c4 /* und */), u16(0));
}

function hdlr(type: "vide" | "soun", name: string): Uint8Array {
  return fullBox("hdlr", 0, 0, u32(0), enc.encode(type), zeros(12), enc.encode(name + "\0"));
}

function dinf(): Uint8Array {
  return box("dinf", fullBox("dref", 0, 0, u32(1), fullBox("url ", 0, 1)));
}

function emptyTables(): Uint8Array[] {
  return [
    fullBox("stts", 0, 0, u32(0)),
    fullBox("stsc", 0, 0, u32(0)),
    fullBox("stsz", 0, 0, u32(0), u32(0)),
    fullBox("stco", 0, 0, u32(0)),
  ];
}

function avc1(width: number, height: number, avcC: Uint8Array): Uint8Array {
  const compressor = zeros(32);
  return box(
    "avc1",
    zeros(6),
    u16(1), // data reference index
    zeros(16), // pre_defined, reserved, pre_defined[3]
    u16(width),
    u16(height),
    u32(0x00480000),
    u32(0x00480000),
    u32(0),
    u16(1), // frame count
    compressor,
    u16(0x0018),
    u16(0xffff),
    box("avcC", avcC),
  );
}

function opusEntry(head: OpusHead): Uint8Array {
  const dOps = new Uint8Array(11);
  const dv = new DataView(dOps.buffer);
  dOps[0] = 0; // version
  dOps[1] = head.channels;
  dv.setUint16(2, head.preSkip);
  dv.setUint32(4, head.inputSampleRate);
  dv.setInt16(8, head.outputGain);
  dOps[10] = 0; // channel mapping family 0 (mono/stereo)
  return box(
    "Opus",
    zeros(6),
    u16(1),
    zeros(8),
    u16(head.channels),
    u16(16),
    u16(0),
    u16(0),
    u32(AUDIO_TIMESCALE << 16 >>> 0),
    box("dOps", dOps),
  );
}

function trak(trackId: number, spec: InitSegmentSpec, audio: boolean): Uint8Array {
  const entry = audio ? opusEntry(spec.opus) : avc1(spec.width, spec.height, spec.avcC);
  const mediaHeader = audio ? fullBox("smhd", 0, 0, zeros(4)) : fullBox("vmhd", 0, 1, zeros(8));
  return box(
    "trak",
    tkhd(trackId, audio ? 0 : spec.width, audio ? 0 : spec.height, audio),
    box(
      "mdia",
      mdhd(audio ? AUDIO_TIMESCALE : VIDEO_TIMESCALE),
      hdlr(audio ? "soun" : "vide", audio ? "audio" : "video"),
      box("minf", mediaHeader, dinf(), box("stbl", fullBox("stsd", 0, 0, u32(1), entry), ...emptyTables())),
    ),
  );
}

function trex(trackId: number): Uint8Array {
  return fullBox("trex", 0, 0, u32(trackId), u32(1), u32(0), u32(0), u32(0));
}

/** The init segment (`ftyp` + `moov`) for a video + audio stream. */
export function initSegment(spec: InitSegmentSpec): Uint8Array {
  const ftyp = box(
    "ftyp",
    enc.encode("iso6"),
    u32(0),
    enc.encode("iso6"),
    enc.encode("isom"),
    enc.encode("avc1"),
    enc.encode("mp41"),
  );
  const mvhd = fullBox(
    "mvhd",
    0,
    0,
    u32(0),
    u32(0),
    u32(1000),
    u32(0),
    u32(0x00010000), // rate
    u16(0x0100), // volume
    zeros(10),
    matrix(),
    zeros(24),
    u32(AUDIO_TRACK_ID + 1), // next track id
  );
  const moov = box(
    "moov",
    mvhd,
    trak(VIDEO_TRACK_ID, spec, false),
    trak(AUDIO_TRACK_ID, spec, true),
    box("mvex", trex(VIDEO_TRACK_ID), trex(AUDIO_TRACK_ID)),
  );
  const out = new Uint8Array(ftyp.length + moov.length);
  out.set(ftyp);
  out.set(moov, ftyp.length);
  return out;
}

const FLAG_SYNC = 0x02000000; // sample_depends_on = 2 (independent)
const FLAG_NON_SYNC = 0x01010000; // depends on others, non-sync sample

/**
 * One media segment (`moof` + `mdat`) with samples of one track, starting at `baseDecodeTime` (in the
 * track's timescale).
 */
export function mediaSegment(
  sequence: number,
  trackId: number,
  baseDecodeTime: number,
  samples: readonly Sample[],
): Uint8Array {
  const mfhd = fullBox("mfhd", 0, 0, u32(sequence));
  const tfhd = fullBox("tfhd", 0, 0x020000, /* default-base-is-moof */ u32(trackId));
  const tfdt = fullBox("tfdt", 1, 0, u64(baseDecodeTime));
  const entries = new Uint8Array(samples.length * 12);
  const dv = new DataView(entries.buffer);
  let mdatSize = 8;
  samples.forEach((s, i) => {
    dv.setUint32(i * 12, s.duration);
    dv.setUint32(i * 12 + 4, s.data.length);
    dv.setUint32(i * 12 + 8, s.key ? FLAG_SYNC : FLAG_NON_SYNC);
    mdatSize += s.data.length;
  });
  // trun: data offset, duration, size, flags present
  const trunHeaderLen = 8 + 4 + 4 + 4;
  const trunLen = trunHeaderLen + entries.length;
  const moofLen = 8 + mfhd.length + 8 + tfhd.length + tfdt.length + trunLen;
  const trun = fullBox("trun", 0, 0x000701, u32(samples.length), u32(moofLen + 8), entries);
  const moof = box("moof", mfhd, box("traf", tfhd, tfdt, trun));
  const out = new Uint8Array(moof.length + mdatSize);
  out.set(moof);
  new DataView(out.buffer).setUint32(moof.length, mdatSize);
  out.set(enc.encode("mdat"), moof.length + 4);
  let o = moof.length + 8;
  for (const s of samples) {
    out.set(s.data, o);
    o += s.data.length;
  }
  return out;
}
