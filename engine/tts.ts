/**
 * Text to speech for the reference engine: the {@link Tts} interface and an implementation that runs the
 * `espeak-ng` command line synthesiser, with a small per-(text, rate) cache.
 *
 * @module
 */

import { espeakLib, type SpeechPhoneme, speechTimings, type SpeechWord } from "../src/speech/espeak_lib.ts";
import { resampleLinear } from "../src/speech/pcm.ts";
import { parseWav } from "./wav.ts";

/** Speech with the timing of its words and phonemes (ms from its first sample). */
export interface TimedSpeech {
  samples: Int16Array;
  words: SpeechWord[];
  phonemes: SpeechPhoneme[];
}

/** Speech synthesiser producing mono 16-bit PCM. */
export interface Tts {
  /**
   * Synthesises `text`.
   *
   * @param text what to say
   * @param sampleRate the rate of the returned samples, in Hz
   * @returns mono 16-bit samples at `sampleRate`
   */
  synthesize(text: string, sampleRate: number): Promise<Int16Array>;
  /**
   * Optional: synthesises `text` with its word and phoneme timings (the engine then sends
   * `response.words`, which the avatar's lip sync uses).
   */
  synthesizeTimed?(text: string, sampleRate: number): Promise<TimedSpeech>;
}

/** Raised when speech synthesis fails (synthesiser missing, bad voice, crash, timeout). */
export class TtsError extends Error {
  /**
   * Creates the error.
   *
   * @param message human-readable cause
   */
  constructor(message: string) {
    super(message);
    this.name = "TtsError";
  }
}

/** Options of {@link EspeakTts}. */
export interface EspeakTtsOptions {
  /** espeak-ng voice (`-v`), default `"en-us"`. */
  voice?: string;
  /** Speaking rate in words per minute (`-s`), default 175. */
  wordsPerMinute?: number;
  /** Executable to run, default `"espeak-ng"` (looked up on PATH). */
  command?: string;
  /** Number of distinct (text, rate) results kept, default 64. 0 disables the cache. */
  cacheSize?: number;
  /** Kill the synthesiser after this many milliseconds, default 20000. */
  timeoutMs?: number;
}

/** Longest text handed to the synthesiser, in characters. */
export const MAX_TTS_TEXT_LENGTH = 4000;

/**
 * {@link Tts} backed by `espeak-ng --stdout` (22050 Hz 16-bit mono WAV), resampled linearly to the requested
 * rate. The text is passed on standard input (`--stdin`), never through a shell or as an argument.
 */
export class EspeakTts implements Tts {
  readonly #voice: string;
  readonly #wpm: number;
  readonly #command: string;
  readonly #cacheSize: number;
  readonly #timeoutMs: number;
  readonly #cache = new Map<string, Promise<Int16Array>>();

  /**
   * Creates a synthesiser (nothing is started until the first call).
   *
   * @param options voice, rate, executable, cache size and timeout
   */
  constructor(options: EspeakTtsOptions = {}) {
    this.#voice = options.voice ?? "en-us";
    this.#wpm = options.wordsPerMinute ?? 175;
    this.#command = options.command ?? "espeak-ng";
    this.#cacheSize = options.cacheSize ?? 64;
    this.#timeoutMs = options.timeoutMs ?? 20_000;
    if (!/^[A-Za-z0-9_+\-./]+$/.test(this.#voice)) {
      throw new TtsError(`invalid espeak-ng voice "${this.#voice}"`);
    }
    if (!(this.#wpm >= 80 && this.#wpm <= 450)) throw new TtsError("wordsPerMinute must be within 80..450");
  }

  /** The voice in use. */
  get voice(): string {
    return this.#voice;
  }

  /**
   * Like {@link synthesize}, with word and phoneme timings, through libespeak-ng in process (same voice
   * and rate). Without the library (or with another `command`), the command line's audio comes without
   * timings.
   */
  async synthesizeTimed(text: string, sampleRate: number): Promise<TimedSpeech> {
    const lib = this.#command === "espeak-ng" ? espeakLib() : null;
    const clean = text.replace(/\s+/g, " ").trim().slice(0, MAX_TTS_TEXT_LENGTH);
    if (!lib || clean === "") {
      return { samples: await this.synthesize(text, sampleRate), words: [], phonemes: [] };
    }
    let speech;
    try {
      speech = lib.synthesize(clean, { voice: this.#voice, rate: this.#wpm });
    } catch (err) {
      throw new TtsError(`libespeak-ng failed: ${(err as Error).message}`);
    }
    const timings = speechTimings(speech, clean);
    return { samples: resampleLinear(speech.samples, speech.sampleRate, sampleRate), ...timings };
  }

  /** {@inheritDoc Tts.synthesize} */
  async synthesize(text: string, sampleRate: number): Promise<Int16Array> {
    if (!Number.isInteger(sampleRate) || sampleRate < 1000 || sampleRate > 192_000) {
      throw new TtsError(`unsupported sample rate ${sampleRate}`);
    }
    const clean = text.replace(/\s+/g, " ").trim().slice(0, MAX_TTS_TEXT_LENGTH);
    if (clean === "") return new Int16Array(0);
    const key = `${sampleRate}\u0000${clean}`;
    let pending = this.#cache.get(key);
    if (pending) {
      this.#cache.delete(key); // refresh LRU position
      this.#cache.set(key, pending);
    } else {
      const created = this.#run(clean).then((wav) => resampleLinear(wav.samples, wav.sampleRate, sampleRate));
      pending = created;
      if (this.#cacheSize > 0) {
        this.#cache.set(key, created);
        created.catch(() => {
          if (this.#cache.get(key) === created) this.#cache.delete(key);
        });
        while (this.#cache.size > this.#cacheSize) this.#cache.delete(this.#cache.keys().next().value!);
      }
    }
    return (await pending).slice();
  }

  async #run(text: string) {
    const controller = new AbortController();
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      controller.abort();
    }, this.#timeoutMs);
    try {
      let child: Deno.ChildProcess;
      try {
        child = new Deno.Command(this.#command, {
          args: ["--stdout", "--stdin", "-v", this.#voice, "-s", String(this.#wpm)],
          stdin: "piped",
          stdout: "piped",
          stderr: "piped",
          signal: controller.signal,
        }).spawn();
      } catch (err) {
        if (err instanceof Deno.errors.NotFound) {
          throw new TtsError(
            `${this.#command} not found on PATH; install espeak-ng (apt-get install espeak-ng)`,
          );
        }
        throw new TtsError(`cannot start ${this.#command}: ${(err as Error).message}`);
      }
      const writer = child.stdin.getWriter();
      const written = writer.write(new TextEncoder().encode(text + "\n")).then(() => writer.close()).catch(
        () => {},
      );
      const [output] = await Promise.all([child.output(), written]);
      if (timedOut) throw new TtsError(`${this.#command} timed out after ${this.#timeoutMs} ms`);
      if (!output.success) {
        const stderr = new TextDecoder().decode(output.stderr).trim().split("\n")[0] ?? "";
        throw new TtsError(`${this.#command} failed (exit ${output.code})${stderr ? `: ${stderr}` : ""}`);
      }
      try {
        return parseWav(output.stdout);
      } catch (err) {
        throw new TtsError(`${this.#command} produced unreadable audio: ${(err as Error).message}`);
      }
    } finally {
      clearTimeout(timer);
    }
  }
}

/**
 * Checks that the espeak-ng executable can be run (used by the CLI to fail early with a clear message).
 *
 * @param command executable name or path, default `"espeak-ng"`
 * @throws TtsError if it is missing or does not start
 */
export async function checkEspeak(command = "espeak-ng"): Promise<void> {
  try {
    const out = await new Deno.Command(command, { args: ["--version"], stdout: "null", stderr: "null" })
      .output();
    if (!out.success) throw new TtsError(`${command} --version failed (exit ${out.code})`);
  } catch (err) {
    if (err instanceof TtsError) throw err;
    if (err instanceof Deno.errors.NotFound) {
      throw new TtsError(`${command} not found on PATH; install espeak-ng (apt-get install espeak-ng)`);
    }
    throw new TtsError(`cannot start ${command}: ${(err as Error).message}`);
  }
}
