/**
 * libopus compiled to WebAssembly (`opusscript`'s build, libopus 1.4, no SIMD): the encoder where the
 * native library does not load (`opus_native.ts`). One module per process, shared by every encoder.
 *
 * @module
 */
// The package's WebAssembly build, driven directly: its JavaScript wrapper (`opusscript`'s index.js) writes
// each encoder's samples through views taken once, at twice the address it allocated — past about 80
// encoders that lands outside the heap ("offset is out of bounds") or on other encoders' memory.
import createOpusModule from "opusscript/build/opusscript_native_wasm.js";

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

let opusModule: OpusModule | null = null;
/** The shared WebAssembly module (instantiated on first use, synchronously). */
function opusLib(): OpusModule {
  return opusModule ??= (createOpusModule as unknown as () => OpusModule)();
}

/** One WebAssembly encoder (mono). */
export class WasmOpusEncoder {
  readonly #lib: OpusModule;
  readonly #enc: OpusHandler;
  /** The input samples and the output packet, in the module's memory. */
  readonly #in: number;
  readonly #out: number;
  readonly #maxPacket: number;
  #closed = false;

  /** Creates the encoder and applies `settings` (`OPUS_SET_*` request → value). */
  constructor(
    rate: number,
    application: number,
    settings: [number, number][],
    maxPacket: number,
    maxFrame: number,
  ) {
    this.#lib = opusLib();
    this.#enc = new this.#lib.OpusScriptHandler(rate, 1, application);
    this.#in = this.#lib._malloc(maxFrame * 2);
    this.#out = this.#lib._malloc(maxPacket);
    this.#maxPacket = maxPacket;
    for (const [ctl, value] of settings) {
      const rc = this.#enc._encoder_ctl(ctl, value);
      if (rc < 0) {
        this.close();
        throw new Error(`opus encoder ctl ${ctl} failed (${rc})`);
      }
    }
  }

  /** Encodes one frame of `pcm` (its whole length); the packet is a copy the caller keeps. */
  encode(pcm: Int16Array): Uint8Array {
    if (this.#closed) throw new Error("opus encoder closed");
    // The samples themselves, copied as they are (views taken now: the memory may have grown since the last
    // call); 0 "bytes" for the handler to pack, so it hands them to opus_encode untouched (its packing
    // loop turns one 16-bit slot per byte into samples: converting every byte to a slot cost a fifth of
    // the encoder's time).
    this.#lib.HEAPU16.set(new Uint16Array(pcm.buffer, pcm.byteOffset, pcm.length), this.#in >> 1);
    const n = this.#enc._encode(this.#in, 0, this.#out, pcm.length);
    if (n < 0) throw new Error(`opus encode failed (${n})`);
    if (n > this.#maxPacket) throw new Error(`opus packet of ${n} bytes`);
    return this.#lib.HEAPU8.slice(this.#out, this.#out + n);
  }

  /** `OPUS_RESET_STATE`: the encoder's state as new, its settings kept (the handler passes its argument on; unused). */
  reset(): void {
    if (!this.#closed) this.#enc._encoder_ctl(4028, 0);
  }

  /** Frees the encoder's WebAssembly memory (idempotent). */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#lib.OpusScriptHandler.destroy_handler(this.#enc);
    this.#lib._free(this.#in);
    this.#lib._free(this.#out);
  }
}
