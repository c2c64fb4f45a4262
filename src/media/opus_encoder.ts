/**
 * The session's audio encoder, in process: PCM16 mono at 48 kHz → Opus packets of 20 ms, with libopus
 * compiled to WebAssembly (`opusscript`, libopus 1.4). One encoder per session, no process: measured at
 * about 0.25 % of a core while speaking and 0.1 % in silence (complexity 3, 24 kbit/s; see
 * docs/media-plane.md), about 90 KB of memory each (the WebAssembly module is shared).
 *
 * Low-delay mode (CELT only): the encoder's look-ahead, the stream's pre-skip, is 2.5 ms (120 samples).
 *
 * Digital silence (the avatar is quiet half the time or more) is not encoded again and again: once the
 * encoder has settled on silence (after {@link SILENCE_SETTLE} silent packets, when its packet is a silent
 * frame of 3 bytes), that packet is repeated until sound comes back; the encoder then goes on from a silent
 * state, as the decoder does. Variable bitrate (libopus's default, set explicitly).
 *
 * @module
 */
// The package's WebAssembly build, driven directly: its JavaScript wrapper (`opusscript`'s index.js) writes
// each encoder's samples through views taken once, at twice the address it allocated — past about 80
// encoders that lands outside the heap ("offset is out of bounds") or on other encoders' memory.
import createOpusModule from "opusscript/build/opusscript_native_wasm.js";
import type { OpusHead } from "./ogg_opus.ts";

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
/** Encoder complexity (0–10): 3 costs a fifth of 10 for speech at these rates. */
const COMPLEXITY = 3;
/**
 * Silent packets encoded before the settled silent packet may be repeated instead (libopus keeps coding
 * the tail of the sound for ≈ 260 ms of digital silence, 61-byte packets at 24 kb/s, then sends 3-byte
 * silent frames).
 */
export const SILENCE_SETTLE = 16;
/** A packet this small (bytes) is a silent frame. */
const SILENT_PACKET_MAX = 8;

/** The parts of the build's Emscripten module used here. */
interface OpusModule {
  OpusScriptHandler: {
    new (rate: number, channels: number, application: number): OpusHandler;
    destroy_handler(h: OpusHandler): void;
  };
  _malloc(bytes: number): number;
  _free(ptr: number): void;
  /** Views of the module's memory (replaced when the memory grows: read them at each use). */
  HEAPU8: Uint8Array;
  HEAPU16: Uint16Array;
}

/** The build's encoder handle (`src/opusscript_encoder.cpp` of opusscript). */
interface OpusHandler {
  /**
   * Encodes `frameSize` samples at `input`: first packs `bytes` samples in place from one 16-bit slot per
   * byte (`input[i] = input[2i + 1] << 8 | input[2i]`; 0: the input already holds the samples).
   */
  _encode(input: number, bytes: number, output: number, frameSize: number): number;
  _encoder_ctl(ctl: number, arg: number): number;
}

/** `OPUS_APPLICATION_RESTRICTED_LOWDELAY`. */
const RESTRICTED_LOWDELAY = 2051;
/** Largest Opus packet (bytes). */
const MAX_PACKET = 1276 * 3;

let opusModule: OpusModule | null = null;
/** The shared WebAssembly module (instantiated on first use, synchronously). */
function opusLib(): OpusModule {
  return opusModule ??= (createOpusModule as unknown as () => OpusModule)();
}

/** An in-process Opus encoder (mono, 48 kHz, 20 ms packets). */
export class OpusEncoder {
  readonly #lib: OpusModule;
  readonly #enc: OpusHandler;
  /** The input slots (one 16-bit slot per PCM byte) and the output packet, in the module's memory. */
  readonly #in: number;
  readonly #out: number;
  /** Samples waiting for a whole packet. */
  readonly #pending = new Int16Array(OPUS_FRAME);
  #fill = 0;
  #closed = false;
  /** Whole silent packets in a row. */
  #silentRun = 0;
  /** The settled silent packet of the current silence. */
  #silence: Uint8Array | null = null;
  /** Packets encoded and packets repeated (counters). */
  readonly stats = { encoded: 0, repeated: 0 };

  constructor(bitrate: number) {
    this.#lib = opusLib();
    this.#enc = new this.#lib.OpusScriptHandler(48000, 1, RESTRICTED_LOWDELAY);
    this.#in = this.#lib._malloc(OPUS_FRAME * 2 * 2);
    this.#out = this.#lib._malloc(MAX_PACKET);
    for (const [ctl, value] of [[SET_BITRATE, bitrate], [SET_COMPLEXITY, COMPLEXITY], [SET_VBR, 1]]) {
      const rc = this.#enc._encoder_ctl(ctl, value);
      if (rc < 0) throw new Error(`opus encoder ctl ${ctl} failed (${rc})`);
    }
  }

  /** The stream's identification header (what an MP4 `dOps` box or a decoder needs). */
  get head(): OpusHead {
    return { channels: 1, preSkip: OPUS_PRE_SKIP, inputSampleRate: 48000, outputGain: 0 };
  }

  /** Encodes `pcm`; calls `out` with each whole packet (a multiple of 960 samples is encoded at once). */
  encode(pcm: Int16Array, out: (packet: Uint8Array, samples: number) => void): void {
    if (this.#closed) return;
    let i = 0;
    while (i < pcm.length) {
      const n = Math.min(OPUS_FRAME - this.#fill, pcm.length - i);
      this.#pending.set(pcm.subarray(i, i + n), this.#fill);
      this.#fill += n;
      i += n;
      if (this.#fill === OPUS_FRAME) {
        this.#fill = 0;
        out(this.#packet(), OPUS_FRAME);
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
      return this.#silence;
    }
    // The samples themselves, copied as they are (views taken now: the memory may have grown since the last
    // call); 0 "bytes" for the handler to pack, so it hands them to opus_encode untouched (its packing
    // loop turns one 16-bit slot per byte into samples: converting every byte to a slot cost a fifth of
    // the encoder's time).
    this.#lib.HEAPU16.set(new Uint16Array(pcm.buffer, pcm.byteOffset, pcm.length), this.#in >> 1);
    const n = this.#enc._encode(this.#in, 0, this.#out, OPUS_FRAME);
    if (n < 0) throw new Error(`opus encode failed (${n})`);
    const packet = this.#lib.HEAPU8.slice(this.#out, this.#out + n);
    this.stats.encoded++;
    if (this.#silentRun >= SILENCE_SETTLE && packet.length <= SILENT_PACKET_MAX) this.#silence = packet;
    return packet;
  }

  /** Frees the encoder's WebAssembly memory. */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#lib.OpusScriptHandler.destroy_handler(this.#enc);
    this.#lib._free(this.#in);
    this.#lib._free(this.#out);
  }
}
