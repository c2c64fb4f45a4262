/**
 * Real-time pacing of a response's audio frames: frames go out at the rate they will be played, at most
 * `leadMs` ahead of real time, and sending stops at once when the response is interrupted.
 *
 * @module
 */

/** Options of {@link PacedSender}. */
export interface PacedSenderOptions {
  /** The frames to send, in order (PCM16LE bytes). */
  frames: readonly Uint8Array[];
  /** Duration of one frame in milliseconds (the last one may be shorter; it is still paced as a whole). */
  frameMs: number;
  /** How far ahead of real time sending may run, in milliseconds (e.g. 200). */
  leadMs: number;
  /** Sends one frame. Must not throw; a sender that cannot send any more should call {@link PacedSender.stop}. */
  send: (frame: Uint8Array) => void;
  /** Monotonic clock in milliseconds (default `performance.now`). */
  now?: () => number;
}

/** Why a paced send finished. */
export type PacedResult = "completed" | "stopped";

/**
 * Sends frames paced in real time. Frame `i` is sent once `start + i * frameMs - leadMs` has passed, so the
 * first `leadMs` worth of audio leaves immediately and the rest follows at playback speed.
 */
export class PacedSender {
  readonly #o: PacedSenderOptions;
  readonly #now: () => number;
  #next = 0;
  #start = 0;
  #timer: ReturnType<typeof setTimeout> | undefined;
  #stopped = false;
  #resolve: ((result: PacedResult) => void) | undefined;
  #done: Promise<PacedResult> | undefined;

  /**
   * Prepares a paced send; nothing is sent before {@link run}.
   *
   * @param options frames, timing and the send function
   */
  constructor(options: PacedSenderOptions) {
    if (!(options.frameMs > 0)) throw new RangeError("frameMs must be positive");
    if (!(options.leadMs >= 0)) throw new RangeError("leadMs must be >= 0");
    this.#o = options;
    this.#now = options.now ?? (() => performance.now());
  }

  /** Number of frames sent so far. */
  get sentFrames(): number {
    return this.#next;
  }

  /** Total number of frames. */
  get totalFrames(): number {
    return this.#o.frames.length;
  }

  /**
   * Starts sending (idempotent).
   *
   * @returns resolves with `"completed"` after the last frame was sent, or `"stopped"` after {@link stop}
   */
  run(): Promise<PacedResult> {
    if (this.#done) return this.#done;
    this.#done = new Promise((resolve) => (this.#resolve = resolve));
    this.#start = this.#now();
    this.#tick();
    return this.#done;
  }

  /** Stops at once: no frame is sent after this returns. Idempotent. */
  stop(): void {
    if (this.#stopped) return;
    this.#stopped = true;
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#finish("stopped");
  }

  #finish(result: PacedResult): void {
    const resolve = this.#resolve;
    this.#resolve = undefined;
    resolve?.(result);
  }

  #tick = (): void => {
    this.#timer = undefined;
    const { frames, frameMs, leadMs, send } = this.#o;
    const now = this.#now();
    while (
      !this.#stopped && this.#next < frames.length && now >= this.#start + this.#next * frameMs - leadMs
    ) {
      send(frames[this.#next++]);
    }
    if (this.#stopped) return;
    if (this.#next >= frames.length) {
      this.#stopped = true;
      this.#finish("completed");
      return;
    }
    const due = this.#start + this.#next * frameMs - leadMs;
    this.#timer = setTimeout(this.#tick, Math.max(1, due - this.#now()));
  };
}
