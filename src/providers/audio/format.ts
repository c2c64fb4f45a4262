/**
 * Audio formats on a vendor's wire and the conversions between them and the service's PCM16: agent audio
 * (base64, PCM16LE or G.711) is decoded to PCM16 at the vendor's rate (the media plane resamples it to its
 * 48 kHz clock, as for every engine), and the microphone's PCM16 at the service's input rate is resampled to
 * the vendor's rate and encoded to base64.
 *
 * @module
 */
import { decodeAlaw, decodeMulaw, encodeAlaw, encodeMulaw } from "./g711.ts";
import { SincResampler } from "./resampler.ts";

/** An audio format on a vendor's wire (mono). */
export interface WireAudioFormat {
  encoding: "pcm_s16le" | "mulaw" | "alaw";
  sampleRate: number;
}

/** Rate of the microphone audio the service takes from its clients for vendor engines (Hz). */
export const SERVICE_INPUT_RATE = 24000;

/** Lowest and highest PCM rates accepted from a vendor. */
const MIN_RATE = 8000;
const MAX_RATE = 48000;

/**
 * Parses `pcm_16000`, `ulaw_8000`, `mulaw_8000` or `alaw_8000` (the vendors' `<encoding>_<rate>` names);
 * null for anything else.
 */
export function parseRateFormat(name: unknown): WireAudioFormat | null {
  if (typeof name !== "string") return null;
  const m = /^(pcm|ulaw|mulaw|alaw)_(\d{4,5})$/.exec(name);
  if (!m) return null;
  const sampleRate = Number(m[2]);
  if (m[1] === "pcm") {
    return sampleRate >= MIN_RATE && sampleRate <= MAX_RATE ? { encoding: "pcm_s16le", sampleRate } : null;
  }
  if (sampleRate !== 8000) return null;
  return { encoding: m[1] === "alaw" ? "alaw" : "mulaw", sampleRate };
}

/**
 * Decodes base64 chunks of agent audio to PCM16 samples (an odd trailing PCM byte is dropped), into buffers
 * reused from chunk to chunk (one decoder per engine connection): the samples returned are valid until the
 * next call. The media plane copies what it keeps, so a vendor's audio
 * costs no array per chunk (arrays of more than 64 bytes live outside the JavaScript heap, and freeing many
 * at once held the process up). Malformed base64 throws a `SyntaxError`, as `Uint8Array.fromBase64` does.
 */
export class AgentAudioDecoder {
  #bytes = new Uint8Array(0);
  #samples = new Int16Array(0);

  decode(base64: string, format: WireAudioFormat): Int16Array {
    // At most 3 bytes per 4 characters (whitespace and padding only make it fewer); even, for the samples.
    const most = Math.ceil(base64.length / 4) * 3 + 1;
    if (this.#bytes.length < most) this.#bytes = new Uint8Array(Math.max(most, 2 * this.#bytes.length, 4096));
    const { read, written } = this.#bytes.setFromBase64(base64);
    // (setFromBase64 stops where the buffer is full; it is never full here, so all was read)
    if (read !== base64.length) throw new SyntaxError("agent audio: base64 not read to its end");
    const bytes = this.#bytes.subarray(0, written);
    if (format.encoding === "pcm_s16le") return new Int16Array(bytes.buffer, 0, written >> 1);
    if (this.#samples.length < written) this.#samples = new Int16Array(this.#bytes.length);
    return format.encoding === "mulaw" ? decodeMulaw(bytes, this.#samples) : decodeAlaw(bytes, this.#samples);
  }
}

/** PCM16LE bytes as samples (copied only when the bytes are not 2-aligned). */
export function pcmSamples(pcm: Uint8Array): Int16Array {
  const n = pcm.byteLength >> 1;
  if (pcm.byteOffset % 2 === 0) return new Int16Array(pcm.buffer, pcm.byteOffset, n);
  return new Int16Array(pcm.slice(0, n * 2).buffer);
}

/** Turns the service's microphone PCM16 into base64 chunks in a vendor's input format. */
export class UserAudioEncoder {
  readonly #resampler: SincResampler | null;

  constructor(readonly format: WireAudioFormat, readonly inputRate = SERVICE_INPUT_RATE) {
    this.#resampler = inputRate === format.sampleRate
      ? null
      : new SincResampler(inputRate, format.sampleRate);
  }

  /** Encodes PCM16LE bytes at the input rate; null when the chunk yields no sample yet. */
  encode(pcm: Uint8Array): string | null {
    const samples = this.#resampler ? this.#resampler.process(pcmSamples(pcm)) : pcmSamples(pcm);
    if (samples.length === 0) return null;
    return this.#bytes(samples).toBase64();
  }

  /** `ms` milliseconds of silence in the vendor's format, base64 (keeps a vendor fed while nobody talks). */
  silence(ms: number): string {
    return this.#bytes(new Int16Array(Math.round(this.format.sampleRate * ms / 1000))).toBase64();
  }

  #bytes(samples: Int16Array): Uint8Array {
    if (this.format.encoding === "mulaw") return encodeMulaw(samples);
    if (this.format.encoding === "alaw") return encodeAlaw(samples);
    return new Uint8Array(samples.buffer, samples.byteOffset, samples.byteLength);
  }
}
