/**
 * libespeak-ng in process, through Deno's FFI (`Deno.dlopen`): speech with its word and phoneme events
 * (when each word and phoneme starts in the audio), and text → phonemes (IPA). Debian ships the library
 * with `espeak-ng` (`libespeak-ng1`; the header is in `libespeak-ng-dev`).
 *
 * The reference engine uses it to send word timings with its speech; the service uses its text-to-phoneme
 * conversion for lip sync; the lip-sync training and bench scripts use its phoneme events as ground truth.
 *
 * The library has one global state (voice, parameters, callback), so every call here is synchronous and
 * complete: nothing of one call leaks into the next. One {@link EspeakLib} per process ({@link espeakLib}).
 *
 * On the shared speech floor (`src/speech/`, floor 0): imported by the service and by the reference engine
 * (`engine/`), which imports nothing else of `src/` (docs/architecture.md, "Floors").
 *
 * @module
 */

/** One event of a synthesis: a word or a phoneme starting at `ms` in the audio. */
export interface EspeakEvent {
  type: "word" | "phoneme" | "sentence" | "end";
  /** Start in the audio, ms. */
  ms: number;
  /** Position of the word in the text, in characters counted from 1 (words only). */
  textPosition: number;
  /** Length of the word in characters (words only). */
  length: number;
  /** IPA name of the phoneme ("" for a pause; phonemes only). */
  phoneme: string;
}

/** Synthesised speech with its events. */
export interface EspeakSpeech {
  samples: Int16Array;
  sampleRate: number;
  events: EspeakEvent[];
}

/** Voice parameters of a synthesis. */
export interface EspeakVoiceOptions {
  /** espeak-ng voice, with an optional variant: `en-us`, `de`, `fr+f3`. */
  voice: string;
  /** Words per minute (80–450), default 175. */
  rate?: number;
  /** Base pitch 0–100, default 50. */
  pitch?: number;
  /** Pitch range 0–100, default 50. */
  range?: number;
}

const SYMBOLS = {
  espeak_Initialize: { parameters: ["i32", "i32", "pointer", "i32"], result: "i32" },
  espeak_SetSynthCallback: { parameters: ["function"], result: "void" },
  espeak_SetVoiceByName: { parameters: ["buffer"], result: "i32" },
  espeak_SetParameter: { parameters: ["i32", "i32", "i32"], result: "i32" },
  espeak_Synth: {
    parameters: ["buffer", "usize", "u32", "i32", "u32", "u32", "pointer", "pointer"],
    result: "i32",
  },
  espeak_Synchronize: { parameters: [], result: "i32" },
  espeak_TextToPhonemes: { parameters: ["pointer", "i32", "i32"], result: "pointer" },
} as const;

/** Where Debian (and other distributions) install the library. */
const LIBRARY_PATHS = [
  "/usr/lib/x86_64-linux-gnu/libespeak-ng.so.1",
  "/usr/lib/aarch64-linux-gnu/libespeak-ng.so.1",
  "/usr/lib64/libespeak-ng.so.1",
  "/usr/lib/libespeak-ng.so.1",
  "/usr/local/lib/libespeak-ng.so.1",
];

const AUDIO_OUTPUT_SYNCHRONOUS = 2;
const INIT_PHONEME_EVENTS = 0x0001;
const INIT_PHONEME_IPA = 0x0002;
const INIT_DONT_EXIT = 0x8000;
const CHARS_UTF8 = 1;
const PHONEMES_IPA = 0x02;
const PARAM = { rate: 1, volume: 2, pitch: 3, range: 4 } as const;
/** sizeof(espeak_EVENT) on 64-bit Linux. */
const EVENT_SIZE = 40;
const EVENT_TYPES: Record<number, EspeakEvent["type"]> = { 1: "word", 2: "sentence", 5: "end", 7: "phoneme" };

const encoder = new TextEncoder();
const decoder = new TextDecoder();
const cString = (s: string) => encoder.encode(s + "\0");

/** libespeak-ng, loaded and initialised. */
export class EspeakLib {
  readonly sampleRate: number;
  readonly #lib: Deno.DynamicLibrary<typeof SYMBOLS>;
  readonly #callback: Deno.UnsafeCallback<{ parameters: ["pointer", "i32", "pointer"]; result: "i32" }>;
  #chunks: Int16Array[] = [];
  #events: EspeakEvent[] = [];
  #voice = "";

  private constructor(lib: Deno.DynamicLibrary<typeof SYMBOLS>) {
    this.#lib = lib;
    this.sampleRate = lib.symbols.espeak_Initialize(
      AUDIO_OUTPUT_SYNCHRONOUS,
      0,
      null,
      INIT_PHONEME_EVENTS | INIT_PHONEME_IPA | INIT_DONT_EXIT,
    );
    if (this.sampleRate <= 0) throw new Error("espeak_Initialize failed (espeak-ng-data missing?)");
    this.#callback = new Deno.UnsafeCallback(
      { parameters: ["pointer", "i32", "pointer"], result: "i32" } as const,
      (wav, n, events) => {
        if (wav && n > 0) {
          this.#chunks.push(new Int16Array(Deno.UnsafePointerView.getArrayBuffer(wav, n * 2).slice(0)));
        }
        if (events) this.#readEvents(new Deno.UnsafePointerView(events));
        return 0;
      },
    );
    lib.symbols.espeak_SetSynthCallback(this.#callback.pointer);
  }

  /**
   * Loads the library; throws when it is missing or cannot start.
   *
   * libespeak-ng keeps its state (voice, callback) in globals, and Deno runs workers (and parallel test
   * modules) as threads of one process, where every `dlopen` of one file shares those globals. So each
   * load maps a private copy of the library file (copied to a temporary file, removed once mapped): every
   * isolate gets its own espeak-ng.
   */
  static open(path?: string): EspeakLib {
    const file = path ?? LIBRARY_PATHS.find((p) => {
      try {
        return Deno.statSync(p).isFile;
      } catch {
        return false;
      }
    });
    if (!file) return new EspeakLib(Deno.dlopen("libespeak-ng.so.1", SYMBOLS));
    const copy = Deno.makeTempFileSync({ prefix: "libespeak-ng-", suffix: ".so" });
    try {
      Deno.copyFileSync(file, copy);
      return new EspeakLib(Deno.dlopen(copy, SYMBOLS));
    } finally {
      Deno.removeSync(copy);
    }
  }

  #readEvents(view: Deno.UnsafePointerView): void {
    for (let off = 0; off < EVENT_SIZE * 100_000; off += EVENT_SIZE) {
      const code = view.getInt32(off);
      if (code === 0) return;
      const type = EVENT_TYPES[code];
      if (!type) continue;
      let phoneme = "";
      if (type === "phoneme") {
        const bytes = new Uint8Array(8);
        for (let i = 0; i < 8; i++) bytes[i] = view.getUint8(off + 32 + i);
        const end = bytes.indexOf(0);
        phoneme = decoder.decode(bytes.subarray(0, end < 0 ? 8 : end));
      }
      this.#events.push({
        type,
        ms: view.getInt32(off + 16),
        textPosition: view.getInt32(off + 8),
        length: view.getInt32(off + 12),
        phoneme,
      });
    }
  }

  #setVoice(voice: string): void {
    if (voice === this.#voice) return;
    if (!/^[A-Za-z0-9_+\-.]+$/.test(voice)) throw new Error(`invalid espeak-ng voice "${voice}"`);
    if (this.#lib.symbols.espeak_SetVoiceByName(cString(voice)) !== 0) {
      this.#voice = "";
      throw new Error(`espeak-ng has no voice "${voice}"`);
    }
    this.#voice = voice;
  }

  /** Speaks `text` (UTF-8; SSML when `ssml`), returning the audio and its word and phoneme events. */
  synthesize(text: string, options: EspeakVoiceOptions, ssml = false): EspeakSpeech {
    this.#setVoice(options.voice);
    const s = this.#lib.symbols;
    s.espeak_SetParameter(PARAM.rate, clamp(options.rate ?? 175, 80, 450), 0);
    s.espeak_SetParameter(PARAM.pitch, clamp(options.pitch ?? 50, 0, 100), 0);
    s.espeak_SetParameter(PARAM.range, clamp(options.range ?? 50, 0, 100), 0);
    s.espeak_SetParameter(PARAM.volume, 100, 0);
    this.#chunks = [];
    this.#events = [];
    const buf = cString(text);
    const flags = CHARS_UTF8 | (ssml ? 0x10 : 0);
    const rc = s.espeak_Synth(buf, BigInt(buf.length), 0, 1, 0, flags, null, null);
    s.espeak_Synchronize();
    if (rc !== 0) throw new Error(`espeak_Synth failed (${rc})`);
    const total = this.#chunks.reduce((n, c) => n + c.length, 0);
    const samples = new Int16Array(total);
    let at = 0;
    for (const c of this.#chunks) {
      samples.set(c, at);
      at += c.length;
    }
    const events = this.#events;
    this.#chunks = [];
    this.#events = [];
    return { samples, sampleRate: this.sampleRate, events };
  }

  /**
   * The phonemes of `text` in IPA, one string per clause, phonemes separated by one space and words by two
   * or more (stress marks stay attached to the phoneme after them).
   */
  textToPhonemes(text: string, voice: string): string[] {
    this.#setVoice(voice);
    const buf = cString(text);
    const ptr = new BigUint64Array(1);
    ptr[0] = BigInt(Deno.UnsafePointer.value(Deno.UnsafePointer.of(buf)));
    const pp = Deno.UnsafePointer.of(ptr);
    const out: string[] = [];
    for (let guard = 0; ptr[0] !== 0n && guard < 10_000; guard++) {
      const r = this.#lib.symbols.espeak_TextToPhonemes(pp, CHARS_UTF8, PHONEMES_IPA | (0x20 << 8));
      if (r) out.push(new Deno.UnsafePointerView(r).getCString());
    }
    return out;
  }
}

function clamp(v: number, lo: number, hi: number): number {
  return Math.round(Math.min(hi, Math.max(lo, v)));
}

/** Why {@link espeakLib} returns null ("" when it does not). */
export let espeakLibError = "";

/**
 * The process's libespeak-ng, loaded when this module is first imported (so a test's resource
 * sanitizer never sees it appear), or null when it cannot be loaded (not installed, no FFI permission,
 * Deno Deploy): see `espeakLibError`.
 */
const shared: EspeakLib | null = (() => {
  try {
    return EspeakLib.open();
  } catch (err) {
    espeakLibError = (err as Error).message;
    return null;
  }
})();

/** The process's libespeak-ng, or null when it cannot be loaded (the reason is in `espeakLibError`). */
export function espeakLib(): EspeakLib | null {
  return shared;
}

/** A timed word of a synthesis, ms from the start of its audio. */
export interface SpeechWord {
  word: string;
  start_ms: number;
  end_ms: number;
}

/** A timed phoneme of a synthesis (IPA; "" for a pause), ms from the start of its audio. */
export interface SpeechPhoneme {
  phoneme: string;
  start_ms: number;
  end_ms: number;
}

const VOICELESS_STOPS = /^[ˈˌ]?(p|t|k|tʃ|ts|pf|tɕ|c|q)$/;

/**
 * The words and phonemes of a synthesis with their spans. Phonemes run from their event to the next
 * one. espeak-ng starts a voiceless stop at its burst; the silent closure before it (lips or tongue
 * already shut) is given to the stop, up to 100 ms, as phoneticians (and Festival's segments) do. A word
 * runs from its event to the end of its last phoneme.
 */
export function speechTimings(
  speech: EspeakSpeech,
  text: string,
): { words: SpeechWord[]; phonemes: SpeechPhoneme[] } {
  const { samples, sampleRate, events } = speech;
  const durMs = samples.length * 1000 / sampleRate;
  const ph = events.filter((e) => e.type === "phoneme");
  const phonemes: SpeechPhoneme[] = [];
  for (let i = 0; i < ph.length; i++) {
    const end = Math.min(durMs, i + 1 < ph.length ? ph[i + 1].ms : durMs);
    if (end > ph[i].ms) phonemes.push({ phoneme: ph[i].phoneme, start_ms: ph[i].ms, end_ms: end });
  }
  const quiet = (fromMs: number, toMs: number) => {
    const a = Math.max(0, Math.round(fromMs * sampleRate / 1000)), b = Math.round(toMs * sampleRate / 1000);
    for (let i = a; i < Math.min(samples.length, b); i++) if (Math.abs(samples[i]) > 24) return false;
    return true;
  };
  for (let i = 1; i < phonemes.length; i++) {
    const p = phonemes[i], prev = phonemes[i - 1];
    if (!VOICELESS_STOPS.test(p.phoneme)) continue;
    let start = p.start_ms;
    const limit = Math.max(prev.start_ms + 20, p.start_ms - 100);
    while (start - 5 >= limit && quiet(start - 5, start)) start -= 5;
    prev.end_ms = start;
    p.start_ms = start;
  }
  const chars = [...text];
  const wordEvents = events.filter((e) => e.type === "word");
  const words: SpeechWord[] = [];
  for (let i = 0; i < wordEvents.length; i++) {
    const e = wordEvents[i];
    const nextMs = i + 1 < wordEvents.length ? wordEvents[i + 1].ms : durMs;
    const inWord = phonemes.filter((p) => p.start_ms >= e.ms - 1 && p.start_ms < nextMs && p.phoneme !== "");
    const word = chars.slice(e.textPosition - 1, e.textPosition - 1 + e.length).join("")
      .replace(/[^\p{L}\p{N}'’-]/gu, "");
    if (!word || inWord.length === 0) continue;
    words.push({
      word,
      start_ms: Math.round(Math.min(e.ms, inWord[0].start_ms)),
      end_ms: Math.round(inWord[inWord.length - 1].end_ms),
    });
  }
  return { words, phonemes };
}
