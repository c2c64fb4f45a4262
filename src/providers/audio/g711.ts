/**
 * G.711 µ-law and A-law (ITU-T G.711), the 8 kHz telephony codecs two of the vendors offer: one byte per
 * sample, decoded through a 256-entry table and encoded with the standard segment search.
 *
 * @module
 */

const BIAS = 0x84;
const CLIP = 32635;

function decodeMulawByte(byte: number): number {
  const u = ~byte & 0xff;
  const t = (((u & 0x0f) << 3) + BIAS) << ((u & 0x70) >> 4);
  return u & 0x80 ? BIAS - t : t - BIAS;
}

function decodeAlawByte(byte: number): number {
  const a = byte ^ 0x55;
  let t = (a & 0x0f) << 4;
  const seg = (a & 0x70) >> 4;
  if (seg === 0) t += 8;
  else t = (t + 0x108) << (seg - 1);
  return a & 0x80 ? t : -t;
}

const MULAW_TABLE = Int16Array.from({ length: 256 }, (_, i) => decodeMulawByte(i));
const ALAW_TABLE = Int16Array.from({ length: 256 }, (_, i) => decodeAlawByte(i));

/** Decodes µ-law bytes to PCM16 samples (into `out` when given: at least as long as `bytes`). */
export function decodeMulaw(bytes: Uint8Array, out = new Int16Array(bytes.length)): Int16Array {
  for (let i = 0; i < bytes.length; i++) out[i] = MULAW_TABLE[bytes[i]];
  return out.length === bytes.length ? out : out.subarray(0, bytes.length);
}

/** Decodes A-law bytes to PCM16 samples (into `out` when given: at least as long as `bytes`). */
export function decodeAlaw(bytes: Uint8Array, out = new Int16Array(bytes.length)): Int16Array {
  for (let i = 0; i < bytes.length; i++) out[i] = ALAW_TABLE[bytes[i]];
  return out.length === bytes.length ? out : out.subarray(0, bytes.length);
}

/** Encodes one PCM16 sample to µ-law. */
export function mulawByte(sample: number): number {
  let s = sample;
  const sign = s < 0 ? 0x80 : 0;
  if (sign) s = -s;
  if (s > CLIP) s = CLIP;
  s += BIAS;
  let exponent = 7;
  for (let mask = 0x4000; (s & mask) === 0 && exponent > 0; mask >>= 1) exponent--;
  const mantissa = (s >> (exponent + 3)) & 0x0f;
  return ~(sign | (exponent << 4) | mantissa) & 0xff;
}

/** Encodes PCM16 samples to µ-law bytes. */
export function encodeMulaw(samples: Int16Array): Uint8Array {
  const out = new Uint8Array(samples.length);
  for (let i = 0; i < samples.length; i++) out[i] = mulawByte(samples[i]);
  return out;
}

/** Encodes one PCM16 sample to A-law. */
export function alawByte(sample: number): number {
  let s = sample >> 3;
  let mask: number;
  if (s >= 0) mask = 0xd5;
  else {
    mask = 0x55;
    s = -s - 1;
  }
  const ends = [0x1f, 0x3f, 0x7f, 0xff, 0x1ff, 0x3ff, 0x7ff, 0xfff];
  let seg = 0;
  while (seg < 8 && s > ends[seg]) seg++;
  if (seg >= 8) return 0x7f ^ mask;
  let a = seg << 4;
  a |= seg < 2 ? (s >> 1) & 0x0f : (s >> seg) & 0x0f;
  return a ^ mask;
}

/** Encodes PCM16 samples to A-law bytes. */
export function encodeAlaw(samples: Int16Array): Uint8Array {
  const out = new Uint8Array(samples.length);
  for (let i = 0; i < samples.length; i++) out[i] = alawByte(samples[i]);
  return out;
}
