/**
 * Energy-based voice activity detection over mono PCM16 audio.
 *
 * The signal is cut into fixed analysis frames (20 ms by default). A frame is *voiced* when its RMS exceeds
 * the speech threshold: the larger of a fixed minimum and a multiple of an adaptive noise floor (a running
 * average of the RMS of unvoiced frames). Speech starts after `startMs` of consecutive voiced frames; the turn
 * ends after `endSilenceMs` without a voiced frame, or when it reaches `maxTurnMs`. The detector is driven by
 * sample counts only (no clock), so it behaves the same whatever the pace at which audio arrives.
 *
 * On the shared speech floor (`src/speech/`, floor 0): imported by the service and by the reference engine
 * (`engine/`), which imports nothing else of `src/` (docs/architecture.md, "Floors").
 *
 * @module
 */

import { concatPcm, rms, samplesForMs } from "./pcm.ts";

/** Tuning of {@link EnergyVad}. Every duration is in milliseconds of audio. */
export interface VadOptions {
  /** Sample rate of the input, in Hz. */
  sampleRate: number;
  /** Analysis frame length, default 20. */
  frameMs?: number;
  /** Minimum RMS (16-bit units) of a voiced frame, default 500 (about -36 dBFS). */
  threshold?: number;
  /** A voiced frame must also exceed the noise floor times this factor, default 3 (about +9.5 dB). */
  noiseFactor?: number;
  /** Consecutive voiced audio needed to declare speech, default 60. */
  startMs?: number;
  /** Unvoiced audio that ends a turn, default 600. */
  endSilenceMs?: number;
  /** Audio kept before the detected onset in the turn's samples, default 200. */
  prerollMs?: number;
  /** Audio kept after the last voiced frame in the turn's samples, default 200. */
  tailMs?: number;
  /** A turn is cut when it gets this long, default 30000. */
  maxTurnMs?: number;
}

/** Speech began. `atMs` is the position of the first voiced frame in the input stream. */
export interface VadSpeechStarted {
  /** Event kind. */
  type: "speech_started";
  /** Stream position of the first voiced frame, in milliseconds. */
  atMs: number;
}

/** A user turn ended. */
export interface VadTurnEnded {
  /** Event kind. */
  type: "turn_ended";
  /** Position in the input stream where the turn ended (when the end was decided). */
  atMs: number;
  /** The turn's audio: pre-roll, speech, and up to `tailMs` of what followed the last voiced frame. */
  samples: Int16Array;
  /** Duration from the first to the end of the last voiced frame. */
  speechMs: number;
  /** Why the turn ended. */
  reason: "silence" | "max_length" | "flush";
}

/** Events produced by {@link EnergyVad.push} and {@link EnergyVad.flush}. */
export type VadEvent = VadSpeechStarted | VadTurnEnded;

/** Resolved tuning, as used by a detector. */
export type ResolvedVadOptions = Required<VadOptions>;

/**
 * Fills in the defaults of {@link VadOptions} and checks the values.
 *
 * @param options partial tuning (sampleRate required)
 * @returns complete tuning
 * @throws RangeError on a non-positive or inconsistent value
 */
export function resolveVadOptions(options: VadOptions): ResolvedVadOptions {
  const resolved: ResolvedVadOptions = {
    sampleRate: options.sampleRate,
    frameMs: options.frameMs ?? 20,
    threshold: options.threshold ?? 500,
    noiseFactor: options.noiseFactor ?? 3,
    startMs: options.startMs ?? 60,
    endSilenceMs: options.endSilenceMs ?? 600,
    prerollMs: options.prerollMs ?? 200,
    tailMs: options.tailMs ?? 200,
    maxTurnMs: options.maxTurnMs ?? 30_000,
  };
  for (const [name, value] of Object.entries(resolved)) {
    if (!Number.isFinite(value) || value < 0) {
      throw new RangeError(`VAD option ${name} must be a number >= 0`);
    }
  }
  if (!(resolved.sampleRate >= 1000)) throw new RangeError("VAD sampleRate must be >= 1000 Hz");
  if (!(resolved.frameMs >= 5 && resolved.frameMs <= 100)) throw new RangeError("VAD frameMs must be 5..100");
  if (resolved.maxTurnMs < resolved.startMs) throw new RangeError("VAD maxTurnMs must be >= startMs");
  return resolved;
}

/** Energy-based voice activity detector; see the module documentation. */
export class EnergyVad {
  readonly #o: ResolvedVadOptions;
  readonly #frameSamples: number;
  readonly #startFrames: number;
  readonly #endFrames: number;
  readonly #prerollFrames: number;
  readonly #tailFrames: number;
  readonly #maxFrames: number;

  #partial: Int16Array;
  #partialLength = 0;
  #framesSeen = 0;
  #noiseFloor = 0;

  #state: "silence" | "onset" | "speech" = "silence";
  /** Recent frames while not in speech (pre-roll + onset candidates). */
  #history: Int16Array[] = [];
  #onsetFrames = 0;
  #onsetStartFrame = 0;
  /** Frames of the current turn (speech state). */
  #turn: Int16Array[] = [];
  #lastVoicedInTurn = 0;
  #turnPrerollFrames = 0;
  #silentFrames = 0;
  #floorInitialized = false;
  readonly #frameDurationMs: number;

  /**
   * Creates a detector in the silence state.
   *
   * @param options tuning; see {@link VadOptions}
   */
  constructor(options: VadOptions) {
    this.#o = resolveVadOptions(options);
    const frameDuration = (n: number) => Math.max(1, Math.ceil(n / this.#o.frameMs - 1e-9));
    this.#frameSamples = Math.max(1, samplesForMs(this.#o.frameMs, this.#o.sampleRate));
    this.#startFrames = frameDuration(this.#o.startMs);
    this.#endFrames = frameDuration(this.#o.endSilenceMs);
    this.#prerollFrames = Math.round(this.#o.prerollMs / this.#o.frameMs);
    this.#tailFrames = Math.round(this.#o.tailMs / this.#o.frameMs);
    this.#maxFrames = Math.max(this.#startFrames, Math.floor(this.#o.maxTurnMs / this.#o.frameMs));
    this.#partial = new Int16Array(this.#frameSamples);
    this.#frameDurationMs = this.#frameSamples * 1000 / this.#o.sampleRate;
  }

  /** The tuning in use. */
  get options(): ResolvedVadOptions {
    return { ...this.#o };
  }

  /** Whether the detector is inside a speech segment. */
  get speaking(): boolean {
    return this.#state === "speech";
  }

  /** Current noise floor estimate (RMS, 16-bit units). */
  get noiseFloor(): number {
    return this.#noiseFloor;
  }

  /** Current speech threshold (RMS, 16-bit units). */
  get threshold(): number {
    return Math.max(this.#o.threshold, this.#noiseFloor * this.#o.noiseFactor);
  }

  /** Milliseconds of audio consumed so far (whole frames). */
  get positionMs(): number {
    return this.#framesSeen * this.#frameDurationMs;
  }

  /**
   * Feeds audio. Samples are buffered until a whole analysis frame is available.
   *
   * @param samples the next mono samples at the configured rate
   * @returns the events decided by this audio, in order
   */
  push(samples: Int16Array): VadEvent[] {
    const events: VadEvent[] = [];
    let offset = 0;
    while (offset < samples.length) {
      const take = Math.min(this.#frameSamples - this.#partialLength, samples.length - offset);
      this.#partial.set(samples.subarray(offset, offset + take), this.#partialLength);
      this.#partialLength += take;
      offset += take;
      if (this.#partialLength === this.#frameSamples) {
        const frame = this.#partial;
        this.#partial = new Int16Array(this.#frameSamples);
        this.#partialLength = 0;
        this.#frame(frame, events);
      }
    }
    return events;
  }

  /**
   * Ends the current turn, if any, as if silence had followed (reason `"flush"`). Buffered partial-frame
   * samples are dropped.
   *
   * @returns a `turn_ended` event when speech was in progress, otherwise nothing
   */
  flush(): VadEvent[] {
    const events: VadEvent[] = [];
    this.#partialLength = 0;
    if (this.#state === "speech") events.push(this.#endTurn("flush"));
    this.#resetSegment();
    return events;
  }

  #frame(frame: Int16Array, events: VadEvent[]): void {
    const level = rms(frame);
    const voiced = level > this.threshold;
    const index = this.#framesSeen++;
    if (!voiced) {
      const rate = level < this.#noiseFloor ? 0.3 : 0.05;
      this.#noiseFloor = this.#floorInitialized
        ? this.#noiseFloor + (level - this.#noiseFloor) * rate
        : level;
      this.#floorInitialized = true;
    }

    if (this.#state === "speech") {
      this.#turn.push(frame);
      if (voiced) {
        this.#lastVoicedInTurn = this.#turn.length;
        this.#silentFrames = 0;
      } else {
        this.#silentFrames++;
      }
      if (this.#silentFrames >= this.#endFrames) {
        events.push(this.#endTurn("silence"));
        this.#resetSegment();
      } else if (this.#turn.length - this.#turnPrerollFrames >= this.#maxFrames) {
        events.push(this.#endTurn("max_length"));
        this.#resetSegment();
      }
      return;
    }

    this.#history.push(frame);
    if (voiced) {
      if (this.#state === "silence") {
        this.#state = "onset";
        this.#onsetFrames = 0;
        this.#onsetStartFrame = index;
      }
      this.#onsetFrames++;
      if (this.#onsetFrames >= this.#startFrames) {
        const keep = this.#onsetFrames + this.#prerollFrames;
        this.#turn = this.#history.slice(-keep);
        this.#turnPrerollFrames = this.#turn.length - this.#onsetFrames;
        this.#lastVoicedInTurn = this.#turn.length;
        this.#silentFrames = 0;
        this.#history = [];
        this.#state = "speech";
        events.push({ type: "speech_started", atMs: this.#onsetStartFrame * this.#frameDurationMs });
      }
    } else {
      this.#state = "silence";
      this.#onsetFrames = 0;
    }
    const maxHistory = this.#prerollFrames + this.#startFrames;
    if (this.#history.length > maxHistory) this.#history.splice(0, this.#history.length - maxHistory);
  }

  #endTurn(reason: VadTurnEnded["reason"]): VadTurnEnded {
    const end = Math.min(this.#turn.length, this.#lastVoicedInTurn + this.#tailFrames);
    const samples = concatPcm(this.#turn.slice(0, end));
    const voicedFrames = this.#lastVoicedInTurn - this.#turnPrerollFrames;
    return {
      type: "turn_ended",
      atMs: this.#framesSeen * this.#frameDurationMs,
      samples,
      speechMs: voicedFrames * this.#frameDurationMs,
      reason,
    };
  }

  #resetSegment(): void {
    this.#state = "silence";
    this.#turn = [];
    this.#history = [];
    this.#onsetFrames = 0;
    this.#silentFrames = 0;
    this.#lastVoicedInTurn = 0;
    this.#turnPrerollFrames = 0;
  }
}
