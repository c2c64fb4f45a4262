/**
 * Video encoders started ahead, so that a video client does not wait for one to start. An ffmpeg process
 * takes about 170 ms from spawn to its first encoded frame on the project's 2-core VM (loading its shared
 * libraries, opening x264), and about 12 ms when it was spawned ahead and is only waiting for its first frame
 * (measured side by side: `bench/encoder_start.ts`). A session's video pipeline exists only while a video
 * client watches, so every connect that finds no pipeline — the first viewer of a session that started
 * without one, a reconnect after the last viewer left, a second session — paid the 170 ms.
 *
 * The plane keeps {@link EncoderSpares.size} encoders of its one set of arguments (the plane's format, CRF and
 * GOP) spawned and idle (blocked on their input: no CPU; one process's memory each). A pipeline takes one
 * (`take`), and another is spawned in its place as soon as the taken one has given its first output (not in
 * the same instant: the first frame is being encoded, and a spawn is ~170 ms of a core), or after
 * {@link REFILL_DELAY_MS} at the latest. A spare that died is replaced, never handed out. The first spare is
 * spawned when the first pipeline takes one (a process that never streams video keeps none); `close` stops
 * them all.
 *
 * @module
 */
import { EncoderProcess } from "./ffmpeg.ts";

/**
 * How long after a take its replacement is spawned at the latest (ms), when the taken encoder has given no
 * output before. Waiting this long every time left a start ~420 ms without a spare (250 ms, then the spawn):
 * a second session starting in that window got a cold encoder (`bench --quick`, 5 Dec: connect → first
 * frame 200–400 ms for one connect in two when sessions started back to back).
 */
const REFILL_DELAY_MS = 250;

/** Encoders of one set of arguments started ahead (see the module documentation). */
export class EncoderSpares {
  readonly #spares: EncoderProcess[] = [];
  #refill: ReturnType<typeof setTimeout> | undefined;
  /** When the scheduled refill runs (performance.now()). */
  #refillAt = 0;
  #closed = false;
  /** Encoders handed out already started (for tests and figures). */
  warmTakes = 0;
  /** Encoders handed out started at the take (no spare was ready). */
  coldTakes = 0;

  constructor(
    readonly path: string,
    readonly args: readonly string[],
    /** Spares kept (0: none; every take spawns). */
    readonly size = 1,
    /** The latest a take's replacement is spawned when the taken encoder gives no output (ms). */
    readonly refillDelayMs = REFILL_DELAY_MS,
  ) {}

  /**
   * An encoder of these arguments, giving its output to `onData` (each chunk valid only during the call, as
   * `EncoderProcess.spawn` says): a spare when one is ready.
   */
  take(onData: (chunk: Uint8Array) => void): EncoderProcess {
    let enc: EncoderProcess | undefined;
    while ((enc = this.#spares.shift()) && enc.hasExited) void enc.exited;
    let first = true;
    const output = (chunk: Uint8Array) => {
      if (first) {
        first = false;
        this.#scheduleRefill(0); // its first frame is out: the replacement's spawn no longer delays it
      }
      onData(chunk);
    };
    if (enc) {
      this.warmTakes++;
      enc.attach(output);
    } else {
      this.coldTakes++;
      enc = EncoderProcess.spawn(this.path, [...this.args], output);
    }
    this.#scheduleRefill(this.refillDelayMs);
    return enc;
  }

  /** Spares ready now. */
  get ready(): number {
    return this.#spares.filter((e) => !e.hasExited).length;
  }

  /** Stops every spare (and any refill to come). */
  async close(): Promise<void> {
    this.#closed = true;
    clearTimeout(this.#refill);
    this.#refill = undefined;
    await Promise.all(this.#spares.splice(0).map((e) => e.stop(0)));
  }

  /** Spawns the missing spares in `delayMs` (or sooner, when a refill is already due sooner). */
  #scheduleRefill(delayMs: number): void {
    if (this.#closed || this.size <= 0) return;
    const at = performance.now() + delayMs;
    if (this.#refill !== undefined) {
      if (this.#refillAt <= at) return;
      clearTimeout(this.#refill);
    }
    this.#refillAt = at;
    this.#refill = setTimeout(() => {
      this.#refill = undefined;
      if (this.#closed) return;
      for (
        let i = this.#spares.findIndex((e) => e.hasExited);
        i >= 0;
        i = this.#spares.findIndex((e) => e.hasExited)
      ) {
        this.#spares.splice(i, 1);
      }
      try {
        while (this.#spares.length < this.size) {
          this.#spares.push(EncoderProcess.spawn(this.path, [...this.args], null));
        }
      } catch { /* ffmpeg cannot start now: the next take spawns its own and tries again */ }
    }, delayMs);
  }
}
