/**
 * One session's media: the small class that wires its parts, each with one owner (`session/`):
 *
 * - the media clock (`session/media_clock.ts`): one origin for both tracks, the one wake-up that drives
 *   the parts below;
 * - the audio playout (`session/audio_playout.ts`, `session/audio_ring.ts`): speech queued, laid on the
 *   timeline with its lead and silence, encoded to Opus;
 * - the animation track (`session/animation_track.ts`): the face (visemes, eyes, look, head) of each
 *   frame, read by the renderer and by video-free clients;
 * - the video pipeline (`session/video_pipeline.ts`): renderer, encoder, FLV demux, keyframes; one exists
 *   only while a video client watches (and once at start, to learn the stream's configuration);
 * - the fan-out (`session/fanout.ts`): the stream's configuration (the init segment's contents) and every
 *   subscriber of the session's media — the session's transport (fMP4 over WebSocket, or RTP to the SFU),
 *   which also brings the user's microphone back; a recorder or another kind of client is one more
 *   subscriber ({@link AvatarSessionMedia.subscribe}).
 *
 * Implements the runtime's {@link SessionMedia}: the engine's events come in here and go to the parts.
 *
 * @module
 */
import { ApiError } from "../errors.ts";
import type { ToolCall } from "../providers/types.ts";
import type { SessionMedia } from "../worker/session_runtime.ts";
import type { EndReason } from "../vocabulary/end_reasons.ts";
import { AUDIO_RATE } from "./ffmpeg.ts";
import type { CharAlignment, WordTiming } from "./lipsync/viseme_engine.ts";
import type { TimelineViseme } from "./lipsync/timeline.ts";
import type { RenderSession } from "./renderer.ts";
import type { MediaTransport } from "./transports/transport.ts";
import { ClientMessages } from "./client_messages.ts";
import { ToolCalls } from "./tool_calls.ts";
import { registerPlayerMessages } from "./transports/player_messages.ts";
import type { AnimationTrack } from "./session/animation_track.ts";
import type { AudioPlayout } from "./session/audio_playout.ts";
import { MediaFanout, type MediaSubscriber } from "./session/fanout.ts";
import type { MediaClock } from "./session/media_clock.ts";
import type { SessionMediaDeps, SessionMediaStats } from "./session/session_types.ts";
import type { VideoFrames } from "./session/video_frames.ts";
import { buildParts } from "./session/parts.ts";

export type { MediaObserver, SessionMediaDeps, SessionMediaStats } from "./session/session_types.ts";
export type { MediaSubscriber } from "./session/fanout.ts";

/** The media of one session. */
export class AvatarSessionMedia implements SessionMedia {
  readonly #d: SessionMediaDeps;
  readonly #render: RenderSession;
  readonly #clock: MediaClock;
  readonly #fanout: MediaFanout;
  readonly #playout: AudioPlayout;
  readonly #track: AnimationTrack;
  /** The frames, and the video pipeline while a video client watches. */
  readonly #frames: VideoFrames;
  #transport: MediaTransport | null = null;
  #firstFrame = Promise.withResolvers<void>();
  #stopped = false;
  #failed: string | null = null;
  /** The dispatcher of the clients' text messages (both transports' sockets hand theirs to it). */
  readonly clientMessages = new ClientMessages();
  readonly #toolCalls = new ToolCalls({ deliver: (m) => this.#fanout.control(m) });

  private constructor(deps: SessionMediaDeps) {
    this.#d = deps;
    const parts = buildParts(deps, {
      encoded: (count) => {
        if (count === 1) this.#firstFrame.resolve();
      },
      fail: (reason) => this.#fail(reason),
    });
    ({
      render: this.#render,
      clock: this.#clock,
      fanout: this.#fanout,
      track: this.#track,
      playout: this.#playout,
      frames: this.#frames,
    } = parts);
    const { clock, fanout } = parts;
    this.#firstFrame.promise.catch(() => {});
    // The session's client messages, whichever socket brings them (`client_messages.ts`).
    this.clientMessages.on("tool_result", (m) => this.#toolCalls.result(m));
    registerPlayerMessages(this.clientMessages, {
      report: (r) => deps.metrics?.playerReport(r),
      timelineMs: () => fanout.configured ? performance.now() - clock.t0 : null,
      clockExtras: () => this.#transport?.clockSyncExtras?.(),
    });
  }

  /**
   * Starts the encoders and the clock, and resolves once the first frame is encoded (the stream can be
   * joined). Throws `502 SVC_RENDER_FAILED` when an encoder cannot start and `504 SVC_RENDER_TIMEOUT`
   * when no frame is encoded within the deadline; nothing is left running either way.
   */
  static async start(deps: SessionMediaDeps): Promise<AvatarSessionMedia> {
    const m = new AvatarSessionMedia(deps);
    try {
      await m.#start();
      return m;
    } catch (err) {
      await m.stop({ graceful: false, timeoutMs: 0 });
      throw err;
    }
  }

  async #start(): Promise<void> {
    const d = this.#d;
    const clock = this.#clock;
    // The transport first: an SFU that cannot be reached fails the start before any encoder runs.
    this.#transport = await d.transport({
      upstream: (pcm) => {
        if (this.#stopped) return;
        this.#track.face.userAudio(pcm);
        d.metrics?.userAudio(pcm, d.connection.inputSampleRate);
        try {
          d.connection.sendUserAudio(pcm);
        } catch { /* the engine connection is closing */ }
      },
      clientsChanged: (n) => this.#clientsChanged(n),
      fail: (f) => this.#fail(f.reason, { endReason: f.endReason, warning: f.warning }),
    });
    this.#fanout.subscribe(this.#transport);
    const { width, height, fps } = d.renderer.format;
    const cacheKey = `${width}x${height}@${fps}/crf${d.crf}/gop${d.gopFrames ?? fps}`;
    const cached = this.#fanout.videoClients === 0 ? d.videoConfigCache?.get(cacheKey) : undefined;
    if (cached) {
      // The stream's configuration is known and nobody wants video yet: no encoder starts.
      clock.startAt(performance.now(), true);
      this.#frames.videoConfig(cached);
      this.#firstFrame.resolve();
      clock.tick();
      return;
    }
    try {
      this.#frames.start();
    } catch (err) {
      d.logger.error("media encoder could not start", { session_id: d.sessionId, error: String(err) });
      throw new ApiError("SVC_RENDER_FAILED");
    }
    // Warm-up: frame 0 makes the video encoder start (ffmpeg writes its headers on its first input);
    // one block of silence is encoded. The clock starts once the first frame is out, so ffmpeg's
    // start-up time neither drops frames nor puts the audio ahead.
    clock.startAt(performance.now(), true);
    this.#frames.renderDue(clock.t0);
    this.#playout.pump(clock.t0);
    clock.running = false;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const deadline = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new ApiError("SVC_RENDER_TIMEOUT")), d.firstFrameTimeoutMs);
    });
    try {
      await Promise.race([this.#firstFrame.promise, deadline]);
    } finally {
      clearTimeout(timer);
    }
    clock.startAt(performance.now(), true);
    const avcC = this.#fanout.avcC;
    if (avcC) d.videoConfigCache?.set(cacheKey, avcC);
    // The encoder proved it works and gave the stream's configuration; it runs on only for video clients.
    if (this.#fanout.videoClients === 0) await this.#frames.retire();
    clock.tick();
  }

  /** The subscribers' clients changed: speech may play, the video pipeline may be wanted or not. */
  #clientsChanged(n: number): void {
    this.#d.metrics?.clientsChanged(n);
    this.#d.clientsChanged(n);
    if (n > 0) this.#playout.pump(performance.now());
    // The video pipeline exists only while a video client watches.
    if (!this.#stopped && this.#clock.running && !this.#failed) this.#frames.demand();
  }

  #fail(reason: string, outcome?: { endReason: EndReason; warning: string }): void {
    if (this.#failed || this.#stopped) return;
    this.#failed = reason;
    if (!this.#fanout.configured) {
      this.#firstFrame.reject(
        new ApiError(outcome?.endReason === "sfu_failed" ? "SVC_SFU_CONNECTION_FAILED" : "SVC_RENDER_FAILED"),
      );
      return;
    }
    this.#d.fail(reason, outcome);
  }

  // ---- subscribers ----

  /**
   * Adds a consumer of the session's media (a recorder, another kind of client): it is configured once the
   * stream's configuration is known, then gets the encoded media, the animation track and the control
   * messages; its clients count towards the session's (call {@link AvatarSessionMedia.demandChanged} when
   * they change). Returns its removal.
   */
  subscribe(subscriber: MediaSubscriber): () => void {
    const remove = this.#fanout.subscribe(subscriber);
    return () => {
      remove();
      this.demandChanged();
    };
  }

  /** A subscriber's clients changed (the transport's own changes come through its hooks). */
  demandChanged(): void {
    if (!this.#stopped) this.#clientsChanged(this.#fanout.clients);
  }

  /**
   * Listens to the visemes of the session stamped on the media timeline (`t_ms` is the presentation time
   * of the session's audio), for clients that draw the avatar themselves; returns the unsubscribe call.
   */
  subscribeVisemes(listener: (v: TimelineViseme) => void): () => void {
    return this.#track.subscribeVisemes(listener);
  }

  /** The session's transport (the media routes attach their clients to it). */
  get transport(): MediaTransport | null {
    return this.#transport;
  }

  // ---- engine events ----

  onResponseStarted(responseId: string): void {
    this.#playout.queue.start(responseId);
    this.#track.face.responseStarted(responseId);
  }

  onAudio(pcm: Int16Array, responseId: string): void {
    if (this.#stopped) return;
    this.#track.face.audio(pcm, responseId);
    this.#playout.push(pcm, responseId);
  }

  onResponseDone(responseId: string, _status: string): void {
    this.#track.face.responseDone(responseId);
    this.#playout.queue.done(responseId);
    this.#playout.pump(performance.now());
  }

  onInterrupt(responseId: string): void {
    this.#playout.queue.interrupt(responseId);
    this.#track.face.interrupt(responseId);
    this.#playout.showQueued();
    // `t_ms`: where the speech already written stops on the timeline (what plays on, at most 120 ms).
    this.#fanout.control({
      type: "interrupt",
      response_id: responseId,
      t_ms: Math.round(this.#playout.written * 1000 / AUDIO_RATE),
    });
  }

  onAgentWords(responseId: string, words: readonly WordTiming[]): void {
    this.#track.face.words(responseId, words);
  }

  onAgentAlignment(responseId: string, alignment: CharAlignment): void {
    this.#track.face.alignment(responseId, alignment);
  }

  onTranscript(line: { role: "user" | "agent"; turnId: string; text: string; final: boolean }): void {
    this.#track.face.transcript(line);
    this.#fanout.control({
      type: "transcript",
      role: line.role,
      turn_id: line.turnId,
      text: line.text,
      final: line.final,
    });
  }

  /** The engine calls a client tool: to the connected clients, or an error result at once without any. */
  onToolCall(call: ToolCall): void {
    this.#toolCalls.call(call);
  }

  // ---- SessionMedia ----

  chunksRendered(): number {
    return this.#frames.stats.framesEncoded;
  }

  /** Counters (for the bench and diagnostics). */
  stats(): SessionMediaStats {
    const queue = this.#playout.queue;
    return {
      ...this.#frames.stats,
      ...this.#playout.stats,
      interruptDroppedSamples: queue.interruptDropped,
      overflowDroppedSamples: queue.overflowDropped,
      clients: this.#fanout.clients,
      slowClientsClosed: this.#transport?.stats().slowClientsClosed ?? 0,
      bytesSent: this.#transport?.stats().bytesSent ?? 0,
      queuedSamples: queue.length,
      audioWritten: this.#playout.written,
      audioPreSkip: this.#playout.opus?.preSkip ?? 0,
      lipSync: this.#track.face.stats(),
    };
  }

  /** Process ids of the encoders (for diagnostics and tests). */
  encoderPids(): number[] {
    const pid = this.#frames.pid;
    return pid === null ? [] : [pid];
  }

  async stop(options: { graceful: boolean; timeoutMs: number }): Promise<string | null> {
    if (this.#stopped) return null;
    this.#stopped = true;
    this.#clock.stop();
    this.#fanout.close();
    this.#playout.close();
    this.#toolCalls.close();
    const closing = this.#transport?.close(this.#failed) ?? Promise.resolve();
    // Closing their input lets the encoders finish on their own; a graceful end gives them the whole
    // teardown budget before they are killed (and the end is reported with a warning).
    const grace = options.graceful ? Math.max(0, options.timeoutMs) : 0;
    const [clean] = await Promise.all([
      this.#frames.stop(grace),
      closing.catch((err) => {
        this.#d.logger.warn("media transport did not close cleanly", {
          session_id: this.#d.sessionId,
          error: String(err).slice(0, 200),
        });
      }),
    ]);
    this.#render.close();
    this.#d.onStopped();
    if (options.graceful && clean.some((c) => !c)) return "The media encoder did not stop in time.";
    return null;
  }
}
