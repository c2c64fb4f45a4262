/**
 * One life of a session's video pipeline: the ffmpeg H.264 encoder, the FLV demuxer of its output, the
 * frames rendered into it and the access units out of it, stamped on the media clock and handed to the
 * fan-out. An instance exists only while a video client watches (and once at start, to learn the stream's
 * configuration): the session makes one when video is wanted and retires it when it is not. Once closed,
 * nothing of it reaches the session (late output, a late render, its exit are ignored).
 *
 * @module
 */
import type { Logger } from "../../log.ts";
import { AUDIO_RATE, EncoderProcess, videoEncoderArgs } from "../ffmpeg.ts";
import { FlvDemuxer } from "../flv.ts";
import type { FaceState } from "../motion.ts";
import type { Renderer, RenderSession } from "../renderer.ts";
import { i420Size } from "../yuv.ts";
import type { EncodedVideoFrame } from "../transports/transport.ts";
import type { MediaClock } from "./media_clock.ts";
import type { EncoderSpares } from "../encoder_spares.ts";

/** Video frames buffered towards the encoder before new frames are dropped (absorbs scheduling jitter). */
export const MAX_PENDING_FRAMES = 3;
/**
 * Frame buffers a pipeline keeps for the renderer to compose into (`FrameRequest.into`): one per frame that
 * can be waiting for the encoder, one being rendered, one spare. About 2 MB at 512×512, made only when
 * frames are composed (a face at rest is a cached frame).
 */
export const FRAME_BUFFERS = MAX_PENDING_FRAMES + 2;

/** Counters of a session's video, across its pipelines' lives. */
export interface VideoStats {
  framesRendered: number;
  framesEncoded: number;
  /** Frames not rendered because the clock fell behind or the encoder was still busy. */
  framesDropped: number;
}

/** What a video pipeline is built from. */
export interface VideoPipelineDeps {
  sessionId: string;
  renderer: Renderer;
  /** The session's render state (shared by the pipeline's lives). */
  render: RenderSession;
  ffmpegPath: string;
  crf: number;
  gopFrames?: number;
  clock: MediaClock;
  /** The audio a frame's display time plays, and whether the avatar speaks then. */
  audio: { timeline(start: number, n: number): Int16Array; speakingAt(s: number): boolean };
  stats: VideoStats;
  logger: Logger;
  /** Whether the stream's configuration is complete (access units before it are held back). */
  configured(): boolean;
  /** The encoder gave the stream's video configuration record. */
  config(avcC: Uint8Array): void;
  /** An encoded frame, stamped. */
  frame(frame: EncodedVideoFrame): void;
  /** The pipeline failed (its encoder exited, its output could not be parsed, a render failed). */
  fail(reason: string): void;
  /** Encoders started ahead by the plane (taken when their arguments are this pipeline's). */
  spares?: EncoderSpares;
}

function sameArgs(a: readonly string[], b: readonly string[]): boolean {
  return a.length === b.length && a.every((x, i) => x === b[i]);
}

/** One life of the video encoder. */
export class VideoPipeline {
  readonly #d: VideoPipelineDeps;
  readonly #enc: EncoderProcess;
  /** The frames written to the encoder and not out of it yet, in order. */
  #frameQueue: number[] = [];
  #renderPending = false;
  /** This pipeline's frame buffers that nothing reads now (see {@link FRAME_BUFFERS}), and how many exist. */
  readonly #free: Uint8Array[] = [];
  #buffers = 0;
  /** Access units encoded before the stream's configuration was complete (delivered right after it). */
  #early: { data: Uint8Array; key: boolean }[] = [];
  #closed = false;

  /** Spawns the encoder (throws when it cannot start). */
  constructor(deps: VideoPipelineDeps) {
    this.#d = deps;
    const flv = new FlvDemuxer({
      onConfig: (avcC) => {
        if (!this.#closed) deps.config(avcC);
      },
      onAccessUnit: (au) => {
        if (!this.#closed) this.#onAccessUnit(au.data, au.key);
      },
    });
    const args = videoEncoderArgs(deps.renderer.format, deps.crf, deps.gopFrames);
    const onData = (c: Uint8Array) => {
      if (!this.#closed) this.#demux(() => flv.push(c));
    };
    // An encoder started ahead when the plane keeps some of these very arguments (`encoder_spares.ts`).
    const spares = deps.spares;
    this.#enc = spares && spares.path === deps.ffmpegPath && sameArgs(spares.args, args)
      ? spares.take(onData)
      : EncoderProcess.spawn(deps.ffmpegPath, args, onData);
    const enc = this.#enc;
    enc.exited.then((status) => {
      if (this.#closed) return;
      deps.logger.error("media encoder exited", {
        session_id: deps.sessionId,
        encoder: "video",
        code: status.code,
        signal: status.signal,
        stderr: enc.stderrTail,
      });
      deps.fail("video_encoder_exited");
    });
  }

  /** The encoder's process id. */
  get pid(): number {
    return this.#enc.pid;
  }

  /** A frame now would be dropped: one is still being rendered, or the encoder has enough to take. */
  get busy(): boolean {
    return this.#renderPending || this.#enc.pendingWrites >= MAX_PENDING_FRAMES;
  }

  /** Renders frame `k` with `face` and writes it to the encoder. */
  render(k: number, face: FaceState): void {
    const d = this.#d;
    const spf = d.clock.samplesPerFrame;
    // The audio played during the frame's display time: centred on the instant its face is taken at.
    const start = k * spf;
    const audio = d.audio.timeline(start, spf);
    const into = this.#takeBuffer();
    const out = d.render.renderFrame({
      index: k,
      timeMs: k * d.clock.frameMs,
      audio,
      sampleRate: AUDIO_RATE,
      speaking: d.audio.speakingAt(start),
      face,
      into,
    });
    if (out instanceof Uint8Array) this.#rendered(k, out, into);
    else {
      this.#renderPending = true;
      out.then((frame) => {
        if (this.#closed) return;
        this.#renderPending = false;
        this.#rendered(k, frame, into);
      }, (err) => {
        this.#renderPending = false;
        this.#release(into);
        d.logger.error("render failed", { session_id: d.sessionId, error: String(err).slice(0, 200) });
        d.fail("render_failed");
      });
    }
  }

  /** A frame buffer for the renderer to compose into (none when all are in use). */
  #takeBuffer(): Uint8Array | undefined {
    const free = this.#free.pop();
    if (free || this.#buffers >= FRAME_BUFFERS) return free;
    this.#buffers++;
    const { width, height } = this.#d.renderer.format;
    return new Uint8Array(i420Size(width, height));
  }

  #release(buffer: Uint8Array | undefined): void {
    if (buffer && !this.#closed) this.#free.push(buffer);
  }

  /** Frame `k` rendered: to the encoder; our buffer comes back once written (or at once if not used). */
  #rendered(k: number, frame: Uint8Array, into: Uint8Array | undefined): void {
    if (frame !== into) this.#release(into);
    if (this.#closed) return;
    this.#frameQueue.push(k);
    this.#enc.write(frame, frame === into ? () => this.#release(into) : undefined);
    this.#d.stats.framesRendered++;
  }

  #onAccessUnit(data: Uint8Array, key: boolean): void {
    if (!this.#d.configured()) {
      this.#early.push({ data, key });
      return;
    }
    const { clock } = this.#d;
    const k = this.#frameQueue.shift() ?? clock.nextFrame;
    this.#d.frame({ index: k, pts: k * clock.frameTicks, duration: clock.frameTicks, data, key });
  }

  /** The stream's configuration became complete: the access units held back go out. */
  flushEarly(): void {
    for (const au of this.#early.splice(0)) this.#onAccessUnit(au.data, au.key);
  }

  #demux(parse: () => void): void {
    try {
      parse();
    } catch (err) {
      this.#d.logger.error("media stream could not be parsed", {
        session_id: this.#d.sessionId,
        error: String(err).slice(0, 200),
      });
      this.#d.fail("encoder_output_invalid");
    }
  }

  /**
   * Closes the pipeline (nothing of it reaches the session any more) and stops the encoder: its input is
   * closed and it gets `graceMs` to finish before it is killed. Resolves true when it exited in time.
   */
  stop(graceMs: number): Promise<boolean> {
    this.#closed = true;
    this.#frameQueue = [];
    this.#free.length = 0;
    this.#renderPending = false;
    return this.#enc.stop(graceMs);
  }
}
