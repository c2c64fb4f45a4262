/**
 * RIFF/WAVE parsing for 16-bit PCM, tolerant of streaming writers (such as `espeak-ng --stdout`) that put a
 * placeholder size in the `RIFF` and `data` headers because they cannot seek back.
 *
 * @module
 */

/** Decoded WAV audio. */
export interface WavAudio {
  /** Sample rate in Hz, from the `fmt ` chunk. */
  sampleRate: number;
  /** Number of channels in the file. */
  channels: number;
  /** Mono samples (multi-channel files are mixed down by averaging). */
  samples: Int16Array;
}

function fourcc(view: DataView, offset: number): string {
  return String.fromCharCode(
    view.getUint8(offset),
    view.getUint8(offset + 1),
    view.getUint8(offset + 2),
    view.getUint8(offset + 3),
  );
}

/**
 * Parses a WAV file holding 16-bit integer PCM (format 1, or WAVE_FORMAT_EXTENSIBLE with the PCM subformat).
 * Walks the chunk list to find `fmt ` and `data`; a `data` size beyond the end of the buffer (a streaming
 * placeholder) is clamped to what is present.
 *
 * @param bytes the whole file
 * @returns the sample rate, channel count and mono samples
 * @throws Error if the file is not a RIFF/WAVE 16-bit PCM file
 */
export function parseWav(bytes: Uint8Array): WavAudio {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (bytes.byteLength < 12 || fourcc(view, 0) !== "RIFF" || fourcc(view, 8) !== "WAVE") {
    throw new Error("not a RIFF/WAVE file");
  }
  let offset = 12;
  let format: { audioFormat: number; channels: number; sampleRate: number; bits: number } | null = null;
  while (offset + 8 <= bytes.byteLength) {
    const id = fourcc(view, offset);
    const size = view.getUint32(offset + 4, true);
    const body = offset + 8;
    if (id === "fmt ") {
      if (size < 16 || body + 16 > bytes.byteLength) throw new Error("truncated fmt chunk");
      let audioFormat = view.getUint16(body, true);
      if (audioFormat === 0xfffe && size >= 40 && body + 26 <= bytes.byteLength) {
        audioFormat = view.getUint16(body + 24, true); // SubFormat GUID starts with the format code
      }
      format = {
        audioFormat,
        channels: view.getUint16(body + 2, true),
        sampleRate: view.getUint32(body + 4, true),
        bits: view.getUint16(body + 14, true),
      };
    } else if (id === "data") {
      if (!format) throw new Error("data chunk before fmt chunk");
      if (format.audioFormat !== 1 || format.bits !== 16) {
        throw new Error(`unsupported WAV encoding (format ${format.audioFormat}, ${format.bits} bits)`);
      }
      if (format.channels < 1 || format.sampleRate < 1) throw new Error("invalid WAV fmt chunk");
      const available = Math.min(size, bytes.byteLength - body);
      const frameBytes = 2 * format.channels;
      const frames = Math.floor(available / frameBytes);
      const samples = new Int16Array(frames);
      for (let i = 0; i < frames; i++) {
        let sum = 0;
        for (let c = 0; c < format.channels; c++) sum += view.getInt16(body + i * frameBytes + c * 2, true);
        samples[i] = Math.round(sum / format.channels);
      }
      return { sampleRate: format.sampleRate, channels: format.channels, samples };
    }
    offset = body + size + (size & 1);
  }
  throw new Error(format ? "no data chunk" : "no fmt chunk");
}

/**
 * Encodes mono 16-bit samples as a canonical 44-byte-header WAV file (used by tests and tools).
 *
 * @param samples mono samples
 * @param sampleRate rate in Hz
 * @returns the WAV file bytes
 */
export function encodeWav(samples: Int16Array, sampleRate: number): Uint8Array<ArrayBuffer> {
  const dataBytes = samples.length * 2;
  const out = new Uint8Array(44 + dataBytes);
  const view = new DataView(out.buffer);
  const ascii = (offset: number, text: string) => {
    for (let i = 0; i < text.length; i++) view.setUint8(offset + i, text.charCodeAt(i));
  };
  ascii(0, "RIFF");
  view.setUint32(4, 36 + dataBytes, true);
  ascii(8, "WAVE");
  ascii(12, "fmt ");
  view.setUint32(16, 16, true);
  view.setUint16(20, 1, true);
  view.setUint16(22, 1, true);
  view.setUint32(24, sampleRate, true);
  view.setUint32(28, sampleRate * 2, true);
  view.setUint16(32, 2, true);
  view.setUint16(34, 16, true);
  ascii(36, "data");
  view.setUint32(40, dataBytes, true);
  for (let i = 0; i < samples.length; i++) view.setInt16(44 + i * 2, samples[i], true);
  return out;
}
