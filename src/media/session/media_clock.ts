/**
 * The media clock of one session: one monotonic origin for both tracks (video frame `k` is due at
 * `k / fps`, audio sample `n` at `n / 48000`, so audio and video stay in sync by construction), and the one
 * wake-up that drives the session's parts. Each driven part says what to do on a tick and when it next
 * needs one; the clock wakes at the earliest of those on the plane's shared timer. Parts keep no timer of
 * their own, so a new part (a recorder's writer, a warm encoder's keep-alive) is one more driven entry.
 *
 * @module
 */
import { AUDIO_RATE } from "../ffmpeg.ts";
import { SharedTimer, type WakeUp } from "../shared_timer.ts";

/** Video ticks per second (RTP and MP4 both use 90 kHz for video). */
export const VIDEO_TIMESCALE = 90_000;

/** A part of the session the clock drives. */
export interface ClockDriven {
  /** The clock ticked at `now` (`performance.now()`). */
  tick(now: number): void;
  /** When this part next needs a tick (`performance.now()` time). */
  wakeAt(): number;
}

/** Frames due at one instant (see {@link MediaClock.dueFrames}). */
export interface DueFrames {
  /** The first frame to produce. */
  first: number;
  /** The last frame to produce (the one due now). */
  due: number;
  /** Frames skipped before `first` (too late to catch up on). */
  skipped: number;
}

/** The media clock of one session. */
export class MediaClock {
  /** The timeline's origin (`performance.now()` time). */
  t0 = 0;
  /** The clock runs (after the warm-up). */
  running = false;
  /** The next video frame the clock has not reached yet. */
  nextFrame = 0;
  readonly frameMs: number;
  readonly frameTicks: number;
  readonly samplesPerFrame: number;
  readonly #wakeUps: SharedTimer;
  readonly #driven: ClockDriven[] = [];
  #timer: WakeUp | undefined;
  #stopped = false;

  /** @param wakeUps the timer shared by a plane's sessions (default: one of its own); its clock is `performance.now()`. */
  constructor(fps: number, wakeUps?: SharedTimer) {
    this.frameMs = 1000 / fps;
    this.frameTicks = VIDEO_TIMESCALE / fps;
    this.samplesPerFrame = AUDIO_RATE / fps;
    this.#wakeUps = wakeUps ?? new SharedTimer();
  }

  /** Adds a part the clock drives; parts tick in the order they were added. */
  drive(part: ClockDriven): void {
    this.#driven.push(part);
  }

  /** Sets the timeline's origin to `now` and lets the clock run (or not, during the warm-up). */
  startAt(now: number, running: boolean): void {
    this.t0 = now;
    this.running = running;
  }

  /** The timeline position at `now`, samples at 48 kHz (fractional). */
  sampleAt(now: number): number {
    return (now - this.t0) * AUDIO_RATE / 1000;
  }

  /** When timeline sample `s` is due (`performance.now()` time). */
  timeOfSample(s: number): number {
    return this.t0 + s * 1000 / AUDIO_RATE;
  }

  /** The frame whose display time holds `now`. */
  frameAt(now: number): number {
    return Math.floor((now - this.t0) / this.frameMs);
  }

  /**
   * The frames due at `now` that have not been produced (at most `maxCatchUp` missed ones before the one due;
   * older ones are skipped), and moves the clock past them; null when none is due.
   */
  dueFrames(now: number, maxCatchUp: number): DueFrames | null {
    const due = this.frameAt(now);
    if (due < this.nextFrame) return null;
    const first = Math.max(this.nextFrame, due - maxCatchUp);
    const skipped = first - this.nextFrame;
    this.nextFrame = due + 1;
    return { first, due, skipped };
  }

  /** When the next frame is due (`performance.now()` time). */
  nextFrameAt(): number {
    return this.t0 + this.nextFrame * this.frameMs;
  }

  /** Ticks the driven parts now and schedules the next wake-up. */
  readonly tick = (): void => {
    this.#timer = undefined;
    if (this.#stopped || !this.running) return;
    const now = performance.now();
    for (const part of this.#driven) part.tick(now);
    this.schedule();
  };

  /** Schedules the wake-up at the earliest instant a driven part needs. */
  schedule(): void {
    if (this.#stopped) return;
    let wake = Infinity;
    for (const part of this.#driven) wake = Math.min(wake, part.wakeAt());
    this.#wakeUps.cancel(this.#timer);
    this.#timer = this.#wakeUps.schedule(wake, this.tick);
  }

  /** Stops the clock for good (the session stops). */
  stop(): void {
    this.#stopped = true;
    this.#wakeUps.cancel(this.#timer);
    this.#timer = undefined;
  }
}
