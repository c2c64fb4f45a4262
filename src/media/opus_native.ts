/**
 * libopus itself, in process through Deno's FFI (`Deno.dlopen`): the system's shared library (Debian's
 * `libopus0`, installed with ffmpeg), built with the CPU's vector instructions. Measured against the
 * WebAssembly build of the same library (no SIMD) on 31 s of speech, 24 kbit/s, low-delay mode: 45 vs 61
 * µs per 20 ms packet at the same complexity, identical output quality (docs/media-plane.md, "Audio").
 *
 * Loaded once per process, when this module is evaluated, on Linux only: `opus_encoder_ctl` is variadic, and Linux's calling conventions
 * (x86-64 System V, AArch64 AAPCS64) pass a variadic `int` where a fixed one goes; every setting made is read
 * back and checked, so a library that did not take it is not used. Where it does not load (no library, no
 * FFI permission, another OS), callers fall back to the WebAssembly build.
 *
 * @module
 */

const SYMBOLS = {
  opus_get_version_string: { parameters: [], result: "pointer" },
  opus_encoder_create: { parameters: ["i32", "i32", "i32", "buffer"], result: "pointer" },
  opus_encoder_destroy: { parameters: ["pointer"], result: "void" },
  opus_encode: { parameters: ["pointer", "buffer", "i32", "buffer", "i32"], result: "i32" },
  /** `opus_encoder_ctl(st, request, int value)`: the setters. */
  opus_encoder_set: { name: "opus_encoder_ctl", parameters: ["pointer", "i32", "i32"], result: "i32" },
  /** `opus_encoder_ctl(st, request, int *value)`: the getters. */
  opus_encoder_get: { name: "opus_encoder_ctl", parameters: ["pointer", "i32", "buffer"], result: "i32" },
} as const;

/** The library's file name where the native encoder is tried. */
export const NATIVE_OPUS_FILE = "libopus.so.0";

/** A loaded libopus. */
export interface NativeOpus {
  /** `opus_get_version_string()`, e.g. "libopus 1.3.1". */
  readonly version: string;
  readonly symbols: Deno.DynamicLibrary<typeof SYMBOLS>["symbols"];
}

/**
 * Loads the library. Called once, when this module is evaluated: the library is the process's (like the
 * WebAssembly module of the other backend), and is never unloaded. Not tried without the FFI permission
 * (asking for it would prompt).
 */
function load(): { lib: NativeOpus | null; why: string } {
  if (Deno.build.os !== "linux") return { lib: null, why: `not tried on ${Deno.build.os}` };
  try {
    if (Deno.permissions.querySync({ name: "ffi" }).state !== "granted") {
      return { lib: null, why: "no FFI permission (--allow-ffi)" };
    }
    const dl = Deno.dlopen(NATIVE_OPUS_FILE, SYMBOLS);
    const ptr = dl.symbols.opus_get_version_string();
    const version = ptr ? Deno.UnsafePointerView.getCString(ptr) : "libopus";
    return { lib: { version, symbols: dl.symbols }, why: "" };
  } catch (err) {
    return { lib: null, why: (err as Error).message.split("\n")[0] };
  }
}

const LOADED = load();

/** libopus through FFI (the same for the whole process), or null with the reason it did not load. */
export function nativeOpus(): { lib: NativeOpus | null; why: string } {
  return LOADED;
}

/** `OPUS_RESET_STATE` (takes no argument: the extra one of the setter's binding is ignored). */
const RESET_STATE = 4028;

/** `OPUS_SET_*` requests and their `OPUS_GET_*` twins (request + 1). */
const GET = (set: number) => set + 1;

/** One native encoder (mono). */
export class NativeOpusEncoder {
  readonly #lib: NativeOpus;
  #st: Deno.PointerValue;
  readonly #out: Uint8Array;

  /**
   * Creates the encoder and applies `settings` (`OPUS_SET_*` request → value), each read back: throws if the
   * library did not take one.
   */
  constructor(
    lib: NativeOpus,
    rate: number,
    application: number,
    settings: [number, number][],
    maxPacket: number,
  ) {
    this.#lib = lib;
    const err = new Int32Array(1);
    this.#st = lib.symbols.opus_encoder_create(rate, 1, application, new Uint8Array(err.buffer));
    if (!this.#st || err[0] !== 0) throw new Error(`opus_encoder_create failed (${err[0]})`);
    this.#out = new Uint8Array(maxPacket);
    const value = new Int32Array(1);
    for (const [ctl, v] of settings) {
      const rc = lib.symbols.opus_encoder_set(this.#st, ctl, v);
      value[0] = -1;
      const rg = lib.symbols.opus_encoder_get(this.#st, GET(ctl), new Uint8Array(value.buffer));
      if (rc < 0 || rg < 0 || value[0] !== v) {
        this.close();
        throw new Error(`opus encoder ctl ${ctl} = ${v} not taken (${rc}, ${rg}, read back ${value[0]})`);
      }
    }
  }

  /** Encodes one frame of `pcm` (its whole length); the packet is a copy the caller keeps. */
  encode(pcm: Int16Array): Uint8Array {
    if (!this.#st) throw new Error("opus encoder closed");
    const n = this.#lib.symbols.opus_encode(this.#st, pcm, pcm.length, this.#out, this.#out.length);
    if (n < 0) throw new Error(`opus encode failed (${n})`);
    return this.#out.slice(0, n);
  }

  /** `OPUS_RESET_STATE`: the encoder's state as new, its settings kept. */
  reset(): void {
    if (this.#st) this.#lib.symbols.opus_encoder_set(this.#st, RESET_STATE, 0);
  }

  /** Frees the encoder (idempotent). */
  close(): void {
    if (!this.#st) return;
    this.#lib.symbols.opus_encoder_destroy(this.#st);
    this.#st = null;
  }
}
