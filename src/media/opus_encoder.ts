/**
 * The session's audio encoder, in process: PCM16 mono at 48 kHz → Opus packets of 20 ms. One encoder per
 * session, no process. libopus itself through FFI where it loads (`opus_native.ts`: the system's library,
 * with the CPU's vector instructions), else libopus compiled to WebAssembly (`opus_wasm.ts`); the choice is
 * `SVC_OPUS_ENCODER` (docs/configuration.md). Complexity 3, 24 kbit/s, variable bitrate, the bandwidth of
 * the engine's sample rate: costs and quality of each choice measured in docs/media-plane.md ("Audio").
 *
 * Low-delay mode (CELT only): the encoder's look-ahead, the stream's pre-skip, is 2.5 ms (120 samples).
 *
 * Digital silence (the avatar is quiet half the time or more) is not encoded again and again. At the first
 * frame of digital silence the encoder is reset (`OPUS_RESET_STATE`: its settings stay): the sound before is
 * whole in the packets already made (their 2.5 ms look-ahead saw the silence coming), and left alone libopus
 * would go on coding the decaying state of its filters for ≈ 300 ms (61-byte packets of noise near −45 dBFS
 * that cost a whole encode each); reset, it codes the frame as a 3-byte silent frame, which is then repeated
 * until sound comes back. The encoder and the decoder then both go on from a silent state (a silent frame
 * resets the decoder's band energies too).
 *
 * @module
 */
import type { OpusHead } from "./ogg_opus.ts";
import { nativeOpus, NativeOpusEncoder } from "./opus_native.ts";
import { WasmOpusEncoder } from "./opus_wasm.ts";

/** Samples per Opus packet (20 ms at 48 kHz). */
export const OPUS_FRAME = 960;
/** The encoder's look-ahead in low-delay mode (RFC 7845 pre-skip), samples at 48 kHz. */
export const OPUS_PRE_SKIP = 120;
/** libopus `OPUS_SET_BITRATE`. */
const SET_BITRATE = 4002;
/** libopus `OPUS_SET_COMPLEXITY`. */
const SET_COMPLEXITY = 4010;
/** libopus `OPUS_SET_VBR` (the package's default is constant bitrate: silence would cost as much as speech). */
const SET_VBR = 4006;
/**
 * Encoder complexity (0–10). 3 costs a fifth of 10 for speech at these rates; 2 (CELT's spreading decision
 * left out) costs no less here, 1 drops the time-frequency analysis (slightly worse), 0 the transient
 * analysis and all spreading (log-spectral distance 7.5 → 12 dB): `bench/opus_encoders.ts`.
 */
export const OPUS_COMPLEXITY = 3;
/**
 * Silent packets encoded before the silent packet may be repeated instead: the first silent frame, coded
 * right after the reset.
 */
export const SILENCE_SETTLE = 1;
/** A packet this small (bytes) is a silent frame. */
const SILENT_PACKET_MAX = 8;

/**
 * The Opus DTX frame standing for a repeat of the silent packet `silent`: its TOC byte alone, a packet of one
 * frame of zero bytes (RFC 6716, 3.2.1: a frame of length 0 is discontinuous transmission). libopus decodes
 * it as a lost frame, which after a silent frame is silence; WebRTC's receiver (NetEQ) takes a packet of two
 * bytes or less for DTX and plays comfort noise without stretching time — so a viewer's jitter buffer does
 * not grow during the silence before anything is said (docs/media-plane.md, SFU "Timing").
 */
export function dtxFrame(silent: Uint8Array): Uint8Array {
  return silent.subarray(0, 1);
}

/** libopus `OPUS_SET_MAX_BANDWIDTH`. */
const SET_MAX_BANDWIDTH = 4004;
/**
 * Opus audio bandwidths (`OPUS_BANDWIDTH_*`) and the highest frequency each codes (Hz); mediumband left out
 * (CELT codes it as wideband).
 */
const BANDWIDTHS: [number, number][] = [[1101, 4000], [1103, 8000], [1104, 12000], [1105, 20000]];

/**
 * The narrowest Opus bandwidth that codes everything audio sampled at `sourceRate` can hold (its Nyquist
 * frequency): an engine speaking at 24 kHz has nothing above 12 kHz, so coding up to 20 kHz (fullband, what
 * libopus picks at 24 kbit/s) spends bits and CPU on silence. Measured on speech from a 22 kHz source
 * (docs/media-plane.md): ≈ 10 % less CPU per packet, SNR +1 dB.
 */
export function opusBandwidthFor(sourceRate: number): number {
  for (const [bw, top] of BANDWIDTHS) if (sourceRate / 2 <= top) return bw;
  return BANDWIDTHS[BANDWIDTHS.length - 1][0];
}

/** `OPUS_APPLICATION_RESTRICTED_LOWDELAY`. */
const RESTRICTED_LOWDELAY = 2051;
/** Largest Opus packet (bytes). */
const MAX_PACKET = 1276 * 3;

/** Which libopus encodes: `auto` = native where it loads, else WebAssembly. */
export type OpusBackend = "auto" | "native" | "wasm";

/** The libopus an encoder of `backend` uses here, and why the native one is not used (when it is not). */
export function opusBackend(
  backend: OpusBackend = "auto",
): { backend: "native" | "wasm"; version: string; why: string } {
  if (backend === "wasm") return { backend: "wasm", version: "libopus 1.4 (WebAssembly)", why: "asked for" };
  const { lib, why } = nativeOpus();
  if (lib) return { backend: "native", version: lib.version, why: "" };
  if (backend === "native") throw new Error(`native libopus did not load: ${why}`);
  return { backend: "wasm", version: "libopus 1.4 (WebAssembly)", why };
}

/** An in-process Opus encoder (mono, 48 kHz, 20 ms packets). */
export class OpusEncoder {
  readonly #enc: NativeOpusEncoder | WasmOpusEncoder;
  /** The libopus that encodes. */
  readonly backend: "native" | "wasm";
  /** Samples waiting for a whole packet. */
  readonly #pending = new Int16Array(OPUS_FRAME);
  #fill = 0;
  #closed = false;
  /** Whole silent packets in a row. */
  #silentRun = 0;
  /** Packets at the end of the stream that were repeats of the silent packet (the encoder did not see them). */
  #repeatRun = 0;
  /** The settled silent packet of the current silence. */
  #silence: Uint8Array | null = null;
  /** Packets encoded and packets repeated (counters). */
  readonly stats = { encoded: 0, repeated: 0 };

  constructor(
    bitrate: number,
    options: {
      /** Which libopus ({@link opusBackend}; `native` throws where it does not load). Default `auto`. */
      backend?: OpusBackend;
      /** {@link OPUS_COMPLEXITY} unless given (the benches compare). */
      complexity?: number;
      /** The rate the sound was sampled at before it was brought to 48 kHz (default 48000: fullband). */
      sourceRate?: number;
    } = {},
  ) {
    const { backend = "auto", complexity = OPUS_COMPLEXITY, sourceRate = 48000 } = options;
    const settings: [number, number][] = [
      [SET_BITRATE, bitrate],
      [SET_COMPLEXITY, complexity],
      [SET_VBR, 1],
      [SET_MAX_BANDWIDTH, opusBandwidthFor(sourceRate)],
    ];
    const lib = opusBackend(backend).backend === "native" ? nativeOpus().lib : null;
    this.#enc = lib
      ? new NativeOpusEncoder(lib, 48000, RESTRICTED_LOWDELAY, settings, MAX_PACKET)
      : new WasmOpusEncoder(48000, RESTRICTED_LOWDELAY, settings, MAX_PACKET, OPUS_FRAME);
    this.backend = lib ? "native" : "wasm";
  }

  /** The stream's identification header (what an MP4 `dOps` box or a decoder needs). */
  get head(): OpusHead {
    return { channels: 1, preSkip: OPUS_PRE_SKIP, inputSampleRate: 48000, outputGain: 0 };
  }

  /**
   * Encodes `pcm`; calls `out` with each whole packet (a multiple of 960 samples is encoded at once) and
   * whether it is a repeat of the settled silent packet (libopus did not code it; a receiver may be sent an
   * Opus DTX frame in its place: {@link dtxFrame}).
   */
  encode(pcm: Int16Array, out: (packet: Uint8Array, samples: number, repeat: boolean) => void): void {
    if (this.#closed) return;
    let i = 0;
    while (i < pcm.length) {
      const n = Math.min(OPUS_FRAME - this.#fill, pcm.length - i);
      this.#pending.set(pcm.subarray(i, i + n), this.#fill);
      this.#fill += n;
      i += n;
      if (this.#fill === OPUS_FRAME) {
        this.#fill = 0;
        const packet = this.#packet();
        out(packet, OPUS_FRAME, this.#repeatRun > 0);
      }
    }
  }

  /** One packet of the pending samples (see the module documentation for silence). */
  #packet(): Uint8Array {
    const pcm = this.#pending;
    let silent = true;
    for (let i = 0; i < pcm.length; i++) {
      if (pcm[i] !== 0) {
        silent = false;
        break;
      }
    }
    this.#silentRun = silent ? this.#silentRun + 1 : 0;
    if (!silent) this.#silence = null;
    else if (this.#silence) {
      this.stats.repeated++;
      this.#repeatRun++;
      return this.#silence;
    }
    this.#repeatRun = 0;
    if (silent && this.#silentRun === 1) this.#enc.reset();
    const packet = this.#enc.encode(pcm);
    this.stats.encoded++;
    if (this.#silentRun >= SILENCE_SETTLE && packet.length <= SILENT_PACKET_MAX) this.#silence = packet;
    return packet;
  }

  /**
   * Packets at the end of the stream made so far that were repeats of the silent packet: libopus did not
   * code them, so its state is what it was before them, and {@link retract} can take them back.
   */
  get repeatRun(): number {
    return this.#repeatRun;
  }

  /**
   * Takes back the last `n` packets, never sent (the caller drops them): the next packet continues the
   * stream from before them, exactly as if they had not been made. Only repeats of the silent packet can be
   * taken back ({@link repeatRun}; libopus's state did not move with them): returns false, taking back
   * nothing, when one of them was not, or a partial packet is pending.
   */
  retract(n: number): boolean {
    if (n <= 0) return true;
    if (n > this.#repeatRun || this.#fill !== 0) return false;
    this.#repeatRun -= n;
    this.#silentRun -= n;
    return true;
  }

  /** Frees the encoder. */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#enc.close();
  }
}
