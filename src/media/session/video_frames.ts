/**
 * The frames of one session on the media clock: each due frame's face is decided (the animation track)
 * and, while a video pipeline runs, rendered into it. This part owns the pipeline's life: it makes one
 * when a video client comes (its first frame a keyframe of the current instant) and retires it when the
 * last one leaves, so the session's video exists only while someone watches. A video client that comes back
 * does not wait for an encoder to start: the pipeline takes one of the plane's spare encoders, started ahead
 * (`../encoder_spares.ts`).
 *
 * @module
 */
import type { Logger } from "../../log.ts";
import type { EncodedVideoFrame } from "../transports/transport.ts";
import type { AnimationTrack } from "./animation_track.ts";
import type { ClockDriven, MediaClock } from "./media_clock.ts";
import { VideoPipeline, type VideoPipelineDeps, type VideoStats } from "./video_pipeline.ts";

/** Frames a late clock tick still renders (older missed frames are dropped). */
export const MAX_CATCH_UP = 2;

/** What the session's frames are built from. */
export interface VideoFramesDeps
  extends Pick<VideoPipelineDeps, "sessionId" | "renderer" | "render" | "ffmpegPath" | "crf" | "gopFrames"> {
  clock: MediaClock;
  track: AnimationTrack;
  audio: VideoPipelineDeps["audio"];
  /** The fan-out's side the frames use: the demand, the stream's configuration, the outlet. */
  fanout: {
    readonly clients: number;
    readonly videoClients: number;
    readonly configured: boolean;
    videoConfig(avcC: Uint8Array): boolean;
    video(frame: EncodedVideoFrame): void;
    videoStopped(): void;
  };
  logger: Logger;
  /** A frame was encoded (`count`: how many so far). */
  encoded(count: number): void;
  /** An encoder process started. */
  encoderStarted?(pid: number): void;
  /** Encoders started ahead by the plane (`encoder_spares.ts`). */
  spares?: VideoPipelineDeps["spares"];
  fail(reason: string): void;
}

/** The frames of one session and the life of its video pipeline. */
export class VideoFrames implements ClockDriven {
  readonly #d: VideoFramesDeps;
  /** The video pipeline: only while a video client is connected (and once at start). */
  #video: VideoPipeline | null = null;
  /** Video pipelines being stopped (the session's stop waits for them). */
  readonly #retiring = new Set<Promise<unknown>>();
  readonly stats: VideoStats = { framesRendered: 0, framesEncoded: 0, framesDropped: 0 };
  #closed = false;

  constructor(deps: VideoFramesDeps) {
    this.#d = deps;
  }

  tick(now: number): void {
    this.renderDue(now);
  }

  wakeAt(): number {
    return this.#d.clock.nextFrameAt();
  }

  /** Process id of the running encoder, if any. */
  get pid(): number | null {
    return this.#video?.pid ?? null;
  }

  /**
   * Decides the faces of the frames that are due and renders them when a video pipeline runs: a late tick
   * catches up on up to {@link MAX_CATCH_UP} missed frames (older ones are dropped); a frame is also
   * dropped while the pipeline is busy.
   */
  renderDue(now: number): void {
    const frames = this.#d.clock.dueFrames(now, MAX_CATCH_UP);
    if (!frames) return;
    if (this.#video) this.stats.framesDropped += frames.skipped;
    // Without a video pipeline and without clients nobody sees the face: nothing to decide or draw.
    if (!this.#video && this.#d.fanout.clients === 0) return;
    for (let k = frames.first; k <= frames.due; k++) {
      const video = this.#video;
      const face = this.#d.track.frame(k, video !== null);
      if (!video) continue;
      if (video.busy) {
        this.stats.framesDropped++;
        continue;
      }
      video.render(k, face);
    }
  }

  /** The video's configuration record (an encoder's, or a cache's): held back access units go out. */
  videoConfig(avcC: Uint8Array): void {
    if (this.#d.fanout.videoConfig(avcC)) this.#video?.flushEarly();
  }

  /**
   * Starts a video pipeline (throws when its encoder cannot start): frames are rendered from the latest
   * instant on, the first one (an IDR) at once. Its failures fail the session.
   */
  start(): void {
    const d = this.#d;
    const { clock, fanout } = d;
    const video = new VideoPipeline({
      sessionId: d.sessionId,
      renderer: d.renderer,
      render: d.render,
      ffmpegPath: d.ffmpegPath,
      crf: d.crf,
      gopFrames: d.gopFrames,
      clock,
      audio: d.audio,
      stats: this.stats,
      logger: d.logger,
      configured: () => fanout.configured,
      config: (avcC) => this.videoConfig(avcC),
      frame: (frame) => {
        fanout.video(frame);
        d.encoded(++this.stats.framesEncoded);
      },
      fail: d.fail,
      spares: d.spares,
    });
    this.#video = video;
    d.encoderStarted?.(video.pid);
    if (!clock.running || this.#closed) return;
    // The latest instant's frame at once (the keyframe a joining client waits for), then the clock's.
    const now = performance.now();
    const due = clock.frameAt(now);
    if (due >= clock.nextFrame) this.renderDue(now);
    else {
      // The current frame was ticked already, perhaps with nobody watching (its face not computed then,
      // and the last one kept may be from long ago): the keyframe must carry the current instant's time,
      // else the frames after it are not contiguous with it and an MSE player drops them until the next
      // keyframe (up to a GOP, 1 s, later).
      video.render(due, d.track.keyframe(due));
    }
  }

  /** Retires the video pipeline (no video client is connected); resolves once its encoder has exited. */
  async retire(): Promise<void> {
    const video = this.#video;
    if (!video) return;
    this.#video = null;
    this.#d.fanout.videoStopped();
    const stopped = video.stop(0);
    this.#retiring.add(stopped);
    try {
      await stopped;
    } finally {
      this.#retiring.delete(stopped);
    }
  }

  /** Starts or retires the video pipeline as video clients come and go. */
  demand(): void {
    const want = this.#d.fanout.videoClients > 0;
    if (want && !this.#video) {
      try {
        this.start();
      } catch (err) {
        this.#d.logger.error("media encoder could not start", {
          session_id: this.#d.sessionId,
          error: String(err),
        });
        this.#d.fail("video_encoder_failed");
      }
    } else if (!want && this.#video) {
      this.retire().catch(() => {});
    }
  }

  /**
   * The session stops: the running encoder gets `graceMs` to finish (0: killed at once), the retiring
   * ones are awaited. Resolves with whether each running encoder exited in time.
   */
  async stop(graceMs: number): Promise<boolean[]> {
    this.#closed = true;
    const videos = this.#video ? [this.#video] : [];
    this.#video = null;
    const [clean] = await Promise.all([
      Promise.all(videos.map((v) => v.stop(graceMs))),
      Promise.allSettled([...this.#retiring]),
    ]);
    return clean;
  }
}
