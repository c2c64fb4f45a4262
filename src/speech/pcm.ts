/**
 * PCM16LE helpers: conversion between bytes and samples, linear resampling, loudness, frame slicing.
 *
 * On the shared speech floor (`src/speech/`, floor 0): imported by the service and by the reference engine
 * (`engine/`), which imports nothing else of `src/` (docs/architecture.md, "Floors").
 *
 * @module
 */

const LITTLE_ENDIAN_HOST = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;

/**
 * Decodes PCM16LE bytes into samples. A trailing odd byte is ignored.
 *
 * @param bytes raw little-endian 16-bit samples
 * @returns a new array of samples (never a view on `bytes`)
 */
export function pcm16FromBytes(bytes: Uint8Array): Int16Array {
  const count = bytes.byteLength >> 1;
  const out = new Int16Array(count);
  if (LITTLE_ENDIAN_HOST) {
    new Uint8Array(out.buffer).set(bytes.subarray(0, count * 2));
  } else {
    const view = new DataView(bytes.buffer, bytes.byteOffset, count * 2);
    for (let i = 0; i < count; i++) out[i] = view.getInt16(i * 2, true);
  }
  return out;
}

/**
 * Encodes samples as PCM16LE bytes.
 *
 * @param samples 16-bit samples
 * @returns a new byte array of `samples.length * 2` bytes
 */
export function pcm16ToBytes(samples: Int16Array): Uint8Array<ArrayBuffer> {
  const out = new Uint8Array(samples.length * 2);
  if (LITTLE_ENDIAN_HOST) {
    out.set(new Uint8Array(samples.buffer, samples.byteOffset, samples.byteLength));
  } else {
    const view = new DataView(out.buffer);
    for (let i = 0; i < samples.length; i++) view.setInt16(i * 2, samples[i], true);
  }
  return out;
}

/**
 * Resamples mono 16-bit audio with linear interpolation. Returns a copy when the rates are equal.
 *
 * @param samples input samples at `fromRate`
 * @param fromRate input sample rate in Hz
 * @param toRate output sample rate in Hz
 * @returns `round(samples.length * toRate / fromRate)` samples at `toRate`
 */
export function resampleLinear(samples: Int16Array, fromRate: number, toRate: number): Int16Array {
  if (!(fromRate > 0) || !(toRate > 0)) throw new RangeError("sample rates must be positive");
  if (fromRate === toRate || samples.length === 0) return samples.slice();
  const outLength = Math.max(1, Math.round(samples.length * toRate / fromRate));
  const out = new Int16Array(outLength);
  const step = fromRate / toRate;
  const last = samples.length - 1;
  for (let i = 0; i < outLength; i++) {
    const pos = i * step;
    const index = Math.floor(pos);
    if (index >= last) {
      out[i] = samples[last];
      continue;
    }
    const frac = pos - index;
    out[i] = Math.round(samples[index] + (samples[index + 1] - samples[index]) * frac);
  }
  return out;
}

/**
 * Root mean square of a block of samples (0 for an empty block), in 16-bit sample units.
 *
 * @param samples the block
 * @param start first index (default 0)
 * @param end index after the last (default `samples.length`)
 */
export function rms(samples: Int16Array, start = 0, end = samples.length): number {
  const n = end - start;
  if (n <= 0) return 0;
  let sum = 0;
  for (let i = start; i < end; i++) sum += samples[i] * samples[i];
  return Math.sqrt(sum / n);
}

/**
 * Concatenates sample arrays.
 *
 * @param parts arrays to join, in order
 * @returns one new array
 */
export function concatPcm(parts: readonly Int16Array[]): Int16Array {
  const out = new Int16Array(parts.reduce((n, p) => n + p.length, 0));
  let offset = 0;
  for (const part of parts) {
    out.set(part, offset);
    offset += part.length;
  }
  return out;
}

/**
 * Number of samples in `ms` milliseconds at `sampleRate`.
 *
 * @param ms duration in milliseconds
 * @param sampleRate rate in Hz
 */
export function samplesForMs(ms: number, sampleRate: number): number {
  return Math.round(ms * sampleRate / 1000);
}

/**
 * Cuts samples into frames of `frameSamples` as PCM16LE bytes; the last frame may be shorter.
 *
 * @param samples audio to cut
 * @param frameSamples samples per frame (> 0)
 * @returns the frames, each a separate byte array
 */
export function framePcm(samples: Int16Array, frameSamples: number): Uint8Array<ArrayBuffer>[] {
  if (!(frameSamples > 0)) throw new RangeError("frameSamples must be positive");
  const frames: Uint8Array<ArrayBuffer>[] = [];
  for (let i = 0; i < samples.length; i += frameSamples) {
    frames.push(pcm16ToBytes(samples.subarray(i, Math.min(samples.length, i + frameSamples))));
  }
  return frames;
}
