/**
 * One session's media pipeline: the media clock, the avatar's speech playout, rendering and the two ffmpeg
 * encoders. Its output is encoded media (H.264 access units, Opus packets) handed to the session's
 * {@link MediaTransport} (fMP4 over WebSocket, or RTP to the SFU), which also brings the user's
 * microphone back. Implements the runtime's {@link SessionMedia}.
 *
 * Timing. One monotonic clock drives both tracks from the same origin: video frame `k` is rendered at
 * `k / fps` and audio sample `n` is due at `n / 48000`, so audio and video stay in sync by construction.
 * Audio is written to its encoder in blocks of {@link AUDIO_BLOCK} samples (20 ms, exactly one Opus
 * packet, so every block is encoded at once; the blocks start {@link AUDIO_GRID_OFFSET} into the timeline,
 * a quarter frame off the frames' grid) and kept between one and {@link MAX_LEAD_BLOCKS} blocks
 * ahead of the clock: silence fills the gaps (one to two blocks ahead: that is how long arriving speech
 * waits to be placed), speech is written as soon as a whole block of it is queued and at most that far
 * ahead, so barge-in can only leave that much already-encoded speech behind. A response's first audio
 * shorter than a block ends the next block (it is not held back for the rest of a block). A response still
 * speaking whose next chunk has not come gets its silence only when it is due
 * ({@link OPEN_SILENCE_LEAD_PACED_MS}): a real-time engine's chunk may be 20–40 ms late without a gap. With
 * `SVC_LIPSYNC_HOLD_MS` (default 0) a response's first block waits until that much of it is queued (or all
 * of it), which buys lip sync look-ahead with latency when the engine speaks in real time.
 *
 * Lip sync and the face (`lipsync/session_face.ts`): the engine's audio, transcript and word timings go to
 * the streaming viseme engine as they arrive; the playout reports where each response's samples land on
 * the timeline; each video frame shows the face at the middle of its display time (co-articulated
 * visemes, blinks, looks, head motion), so the mouth matches the sound. A frame's visemes are decided at
 * the latest when the frame is rendered, with whatever look-ahead audio has arrived by then (up to
 * {@link LOOKAHEAD_MS}: all of it from an engine that sends ahead of real time).
 *
 * Speech waits in the queue while no client is connected (nobody would hear it), then plays.
 *
 * @module
 */
import { ApiError } from "../errors.ts";
import type { Logger } from "../log.ts";
import type { ProviderConnection, ToolCall } from "../providers/types.ts";
import type { SessionMedia } from "../worker/session_runtime.ts";
import type { EndReason } from "../vocabulary/end_reasons.ts";
import { AUDIO_RATE, EncoderProcess, videoEncoderArgs } from "./ffmpeg.ts";
import { FlvDemuxer } from "./flv.ts";
import type { OpusHead } from "./ogg_opus.ts";
import { OPUS_FRAME, type OpusBackend, OpusEncoder } from "./opus_encoder.ts";
import type { FaceState } from "./motion.ts";
import type { G2p } from "./lipsync/g2p.ts";
import { type CharAlignment, LOOKAHEAD_MS, type WordTiming } from "./lipsync/engine.ts";
import { SessionFace, type SessionLipSyncStats } from "./lipsync/session_face.ts";
import type { TimelineViseme } from "./lipsync/timeline.ts";
import { VISEME_COUNT } from "./lipsync/visemes.ts";
import { PlayoutQueue } from "./playout_queue.ts";
import type { Renderer, RenderSession } from "./renderer.ts";
import { LinearResampler } from "./resample.ts";
import type { AnimationMessage, MediaTransport, TransportFactory } from "./transports/transport.ts";
import { ClientMessages } from "./client_messages.ts";
import { SharedTimer, type WakeUp } from "./shared_timer.ts";
import { ToolCalls } from "./tool_calls.ts";
import { registerPlayerMessages } from "./transports/player_messages.ts";
import type { SessionMetrics } from "../metrics/session_metrics.ts";

/**
 * Samples of audio written (and encoded) at a time: one 20 ms Opus packet, so every block is encoded at
 * once and nothing waits inside the encoder.
 */
export const AUDIO_BLOCK = OPUS_FRAME;
/**
 * Where the audio blocks start on the timeline (samples): half a block, so blocks begin a quarter of a frame
 * (10 ms at 25 fps) off the video frames' starts and middles. Speech that fills whole blocks (an engine's
 * 20 ms chunks) starts on a block, so a response's first sound lies 10 ms inside the half frame either side
 * of a frame's start — never on the edge where the frame that opens the mouth (its face is taken at its
 * middle) and the frame a player shows at the sound's start (the one whose start is nearest it) could be
 * two different frames, one sample of codec smear apart.
 */
export const AUDIO_GRID_OFFSET = AUDIO_BLOCK / 2;
/** Audio is kept at most this many blocks ahead of the clock (120 ms). */
export const MAX_LEAD_BLOCKS = 6;
/**
 * While a response is still speaking and its next chunk has not come, silence is written only when it is
 * due: when the block starts on the clock, or over the SFU (whose audio is sent 10 ms before it is due,
 * paced) this long before (ms). Written a block ahead like the silence between responses, a real-time
 * engine's chunk 0–20 ms late (by where its response fell on the block grid) cut 20 ms of silence into the
 * speech.
 */
const OPEN_SILENCE_LEAD_PACED_MS = 15;
/** A video-free client gets the head's pose every this many frames (5 a second at 25 fps). */
const HEAD_EVERY_FRAMES = 5;
/** Queued speech is bounded to 30 s (the engine protocol's bound); older audio is dropped. */
export const MAX_QUEUED_SECONDS = 30;
/** Video ticks per second (RTP and MP4 both use 90 kHz for video). */
const VIDEO_TIMESCALE = 90_000;
/** Video frames buffered towards the encoder before new frames are dropped (absorbs scheduling jitter). */
const MAX_PENDING_FRAMES = 3;
/** Frames a late clock tick still renders (older missed frames are dropped). */
const MAX_CATCH_UP = 2;

/** What a session's media plane needs. */
export interface SessionMediaDeps {
  sessionId: string;
  avatarId: string;
  bgId: string;
  renderer: Renderer;
  connection: Pick<
    ProviderConnection,
    "inputSampleRate" | "outputSampleRate" | "sendUserAudio" | "reportPlayed"
  >;
  ffmpegPath: string;
  /** x264 constant rate factor. */
  crf: number;
  /** Opus bitrate, bits per second. */
  audioBitrate: number;
  /** Which libopus encodes the audio (default `auto`: native where it loads). */
  audioEncoder?: OpusBackend;
  /** Deadline for the first encoded frame when starting (→ 504 SVC_RENDER_TIMEOUT). */
  firstFrameTimeoutMs: number;
  /** Frames between keyframes (default: the frame rate, one a second). */
  gopFrames?: number;
  /** Opens the session's transport (fMP4 over WebSocket, or the SFU). */
  transport: TransportFactory;
  /**
   * The video stream's configuration (the AVCDecoderConfigurationRecord) that an earlier session's encoder
   * gave for the same settings, shared by a plane's sessions: a session that starts without a video client
   * then starts no encoder at all (the first session of a process checks the encoder and fills it).
   */
  videoConfigCache?: Map<string, Uint8Array>;
  logger: Logger;
  /**
   * The media plane failed on its own: an encoder died (`render_failed`, the default outcome) or the
   * transport failed (its own end reason and warning).
   */
  fail(reason: string, outcome?: { endReason: EndReason; warning: string }): void;
  clientsChanged(count: number): void;
  /** Called once when the media plane has stopped (releases its render slot). */
  onStopped(): void;
  /** Optional probe for measurements: speech samples placed on the timeline. */
  observer?: MediaObserver;
  /**
   * The timer the session's clock wakes up on, shared by a plane's sessions (default: one of its own). Its
   * clock must be `performance.now()`.
   */
  wakeUps?: SharedTimer;
  /**
   * Lip sync: text to phonemes (default: libespeak-ng in process; null: audio alone), the language, and
   * how much of a response's start is held back for the look-ahead (ms, 0–{@link LOOKAHEAD_MS}, default 0).
   */
  lipSync?: { g2p?: G2p | null; lang?: string; holdMs?: number };
  /**
   * The session's figures: where each response's first sample lands on the media clock, the user's audio,
   * the players' reports. Its clock must be `performance.now()` (the media clock's).
   */
  metrics?: SessionMetrics;
}

/** Hooks for measurements (the bench); never needed in production. */
export interface MediaObserver {
  /** `n` speech samples (counted from the first one ever queued) were placed at timeline sample `at`. */
  speechPlaced?(speechIndex: number, at: number, n: number): void;
  /** An encoder process started for a session. */
  encoderStarted?(sessionId: string, pid: number): void;
}

/** Counters of one session's media plane. */
export interface SessionMediaStats {
  framesRendered: number;
  framesEncoded: number;
  /** Frames not rendered because the clock fell behind or the encoder was still busy. */
  framesDropped: number;
  audioBlocks: number;
  /** Blocks written with less speech than due because the engine's audio came late. */
  audioUnderruns: number;
  /** Speech samples dropped by barge-in. */
  interruptDroppedSamples: number;
  /** Speech samples dropped because more than 30 s was queued. */
  overflowDroppedSamples: number;
  clients: number;
  slowClientsClosed: number;
  bytesSent: number;
  /** Speech samples queued (48 kHz). */
  queuedSamples: number;
  /** Timeline position written so far, samples at 48 kHz. */
  audioWritten: number;
  /** Opus pre-skip of the audio track (samples at 48 kHz). */
  audioPreSkip: number;
  /** Lip sync: per-response sources, frames decided in time or late, the engine's CPU time. */
  lipSync: SessionLipSyncStats;
}

/** The media plane of one session. */
export class AvatarSessionMedia implements SessionMedia {
  readonly #d: SessionMediaDeps;
  readonly #render: RenderSession;
  #transport: MediaTransport | null = null;
  readonly #queue: PlayoutQueue;
  readonly #resampler: LinearResampler;
  /** The engine's chunk at the encoder's rate, on its way into the queue (which copies it). */
  #resampled = new Int16Array(0);
  readonly #face: SessionFace;
  /** Speech held back at the start of a response for lip sync's look-ahead, samples at 48 kHz. */
  readonly #hold: number;
  readonly #frameMs: number;
  readonly #frameTicks: number;
  readonly #samplesPerFrame: number;
  /**
   * The last 0.5 s of written audio: timeline sample `s` at `(s − AUDIO_GRID_OFFSET) % length`, so every block
   * lies whole in it (it is written in place); a frame's audio is read when it is rendered, at most
   * {@link MAX_CATCH_UP} frames after its time (120 ms).
   */
  readonly #ring = new Int16Array(AUDIO_BLOCK * 25);
  /** The video encoder: running only while a video client is connected (and once at start). */
  #video: EncoderProcess | null = null;
  /** The audio encoder, in process: every client's audio. */
  readonly #opusEnc: OpusEncoder;
  /** The face of the latest frame instant (rendered at once when a video client arrives). */
  #lastFace: { k: number; face: FaceState } | null = null;
  /** The storage {@link #keepFace} copies into (one per session: no allocation per frame). */
  readonly #keptFace: { k: number; face: FaceState } = {
    k: -1,
    face: {
      visemes: new Float32Array(VISEME_COUNT),
      eyes: "open",
      look: "neutral",
      headDx: 0,
      headDy: 0,
      mode: "idle",
    },
  };
  /** Video encoders being stopped (the session's stop waits for them). */
  readonly #retiring = new Set<Promise<unknown>>();
  /** What video-free clients were last told of the face (changes only are sent). */
  /** What video-free clients were last told (compared field by field: no string per frame). */
  readonly #told: { mode: string; eyes: string; look: string; headDx: number; headDy: number } = {
    mode: "",
    eyes: "",
    look: "",
    headDx: NaN,
    headDy: NaN,
  };
  #t0 = 0;
  /** The clock's next wake-up, on the plane's shared timer. */
  #timer: WakeUp | undefined;
  readonly #wakeUps: SharedTimer;
  #nextFrame = 0;
  #written = AUDIO_GRID_OFFSET;
  #speechUntil = 0;
  #speechTaken = 0;
  /** The response whose first sample was placed last (its placement is reported once). */
  #placedResponse: string | null = null;
  /**
   * The write position whose silence (a response still speaking, its next chunk not there) was found due
   * and held back for one turn of the event loop (see {@link AvatarSessionMedia.#pumpAudio}).
   */
  #heldAt = -1;
  #frameQueue: number[] = [];
  #renderPending = false;
  #avcC: Uint8Array | null = null;
  readonly #opus: OpusHead;
  /** Position of the next encoded audio packet, 48 kHz samples of the encoder's output. */
  #audioPts = AUDIO_GRID_OFFSET;
  #firstFrame = Promise.withResolvers<void>();
  #initDone = false;
  /** Access units encoded before the init segment was complete (published right after it). */
  #early: { data: Uint8Array; key: boolean }[] = [];
  #stopped = false;
  /** The clock runs (after the warm-up). */
  #running = false;
  #failed: string | null = null;
  /** The dispatcher of the clients' text messages (both transports' sockets hand theirs to it). */
  readonly clientMessages = new ClientMessages();
  readonly #toolCalls = new ToolCalls({ deliver: (m) => this.#transport?.control(m) ?? 0 });
  readonly #stats = {
    framesRendered: 0,
    framesEncoded: 0,
    framesDropped: 0,
    audioBlocks: 0,
    audioUnderruns: 0,
  };

  private constructor(deps: SessionMediaDeps) {
    this.#d = deps;
    this.#wakeUps = deps.wakeUps ?? new SharedTimer();
    const { fps } = deps.renderer.format;
    this.#frameMs = 1000 / fps;
    this.#frameTicks = VIDEO_TIMESCALE / fps;
    this.#samplesPerFrame = AUDIO_RATE / fps;
    this.#render = deps.renderer.open({
      avatarId: deps.avatarId,
      bgId: deps.bgId,
      seed: hashSeed(deps.sessionId),
    });
    this.#queue = new PlayoutQueue({
      sampleRate: AUDIO_RATE,
      maxSamples: MAX_QUEUED_SECONDS * AUDIO_RATE,
      onPlayed: (id, ms, interrupted) => {
        try {
          deps.connection.reportPlayed(id, ms, interrupted);
        } catch { /* the engine connection is closing */ }
      },
    });
    this.#resampler = new LinearResampler(deps.connection.outputSampleRate, AUDIO_RATE);
    this.#opusEnc = new OpusEncoder(deps.audioBitrate, {
      backend: deps.audioEncoder,
      sourceRate: deps.connection.outputSampleRate,
    });
    this.#opus = this.#opusEnc.head;
    this.#hold = Math.round(
      Math.min(LOOKAHEAD_MS, Math.max(0, deps.lipSync?.holdMs ?? 0)) * AUDIO_RATE / 1000,
    );
    this.#face = new SessionFace({
      engineRate: deps.connection.outputSampleRate,
      timelineRate: AUDIO_RATE,
      inputRate: deps.connection.inputSampleRate,
      seed: hashSeed(deps.sessionId),
      g2p: deps.lipSync?.g2p,
      lang: deps.lipSync?.lang,
      now: () => performance.now() - this.#t0,
    });
    this.#firstFrame.promise.catch(() => {});
    // Video-free clients get every change of the dominant viseme, stamped on the audio's timeline.
    this.#face.subscribe((v) => this.#animate({ type: "viseme", t_ms: v.t_ms, viseme: v.viseme }));
    // The session's client messages, whichever socket brings them (`client_messages.ts`).
    this.clientMessages.on("tool_result", (m) => this.#toolCalls.result(m));
    registerPlayerMessages(this.clientMessages, {
      report: (r) => deps.metrics?.playerReport(r),
      timelineMs: () => this.#initDone ? performance.now() - this.#t0 : null,
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
    // The transport first: an SFU that cannot be reached fails the start before any encoder runs.
    this.#transport = await d.transport({
      upstream: (pcm) => {
        if (this.#stopped) return;
        this.#face.userAudio(pcm);
        d.metrics?.userAudio(pcm, d.connection.inputSampleRate);
        try {
          d.connection.sendUserAudio(pcm);
        } catch { /* the engine connection is closing */ }
      },
      clientsChanged: (n) => {
        d.metrics?.clientsChanged(n);
        d.clientsChanged(n);
        if (n > 0) this.#pumpAudio(performance.now());
        this.#videoDemand();
      },
      fail: (f) => this.#fail(f.reason, { endReason: f.endReason, warning: f.warning }),
    });
    const { width, height, fps } = d.renderer.format;
    const cacheKey = `${width}x${height}@${fps}/crf${d.crf}/gop${d.gopFrames ?? fps}`;
    const cached = this.#videoClients() === 0 ? d.videoConfigCache?.get(cacheKey) : undefined;
    if (cached) {
      // The stream's configuration is known and nobody wants video yet: no encoder starts.
      this.#avcC = cached;
      this.#t0 = performance.now();
      this.#running = true;
      this.#maybeInit();
      this.#firstFrame.resolve();
      this.#tick();
      return;
    }
    try {
      this.#startVideo();
    } catch (err) {
      d.logger.error("media encoder could not start", { session_id: d.sessionId, error: String(err) });
      throw new ApiError("SVC_RENDER_FAILED");
    }
    // Warm-up: frame 0 makes the video encoder start (ffmpeg writes its headers on its first input);
    // one block of silence is encoded. The clock starts once the first frame is out, so ffmpeg's
    // start-up time neither drops frames nor puts the audio ahead.
    this.#t0 = performance.now();
    this.#running = true;
    this.#renderDue(this.#t0);
    this.#pumpAudio(this.#t0);
    this.#running = false;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const deadline = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new ApiError("SVC_RENDER_TIMEOUT")), d.firstFrameTimeoutMs);
    });
    try {
      await Promise.race([this.#firstFrame.promise, deadline]);
    } finally {
      clearTimeout(timer);
    }
    this.#t0 = performance.now();
    this.#running = true;
    if (this.#avcC) d.videoConfigCache?.set(cacheKey, this.#avcC);
    // The encoder proved it works and gave the stream's configuration; it runs on only for video clients.
    if (this.#videoClients() === 0) await this.#stopVideo();
    this.#tick();
  }

  /**
   * Starts the video encoder: frames are rendered from the latest instant on, the first one (an IDR) at
   * once. An encoder that exits while it is the session's encoder fails the session.
   */
  #startVideo(): void {
    const d = this.#d;
    const flv = new FlvDemuxer({
      onConfig: (avcC) => {
        if (this.#video !== enc) return;
        const changed = this.#avcC !== null && !sameBytes(this.#avcC, avcC);
        this.#avcC = avcC;
        if (changed && this.#initDone) this.#configure();
        else this.#maybeInit();
      },
      onAccessUnit: (au) => {
        if (this.#video === enc) this.#onVideoAu(au.data, au.key);
      },
    });
    const enc: EncoderProcess = EncoderProcess.spawn(
      d.ffmpegPath,
      videoEncoderArgs(d.renderer.format, d.crf, d.gopFrames),
      (c) => {
        if (!this.#stopped && this.#video === enc) this.#demux(() => flv.push(c));
      },
    );
    this.#video = enc;
    this.#frameQueue = [];
    this.#renderPending = false;
    d.observer?.encoderStarted?.(d.sessionId, enc.pid);
    enc.exited.then((status) => {
      if (this.#stopped || this.#video !== enc) return;
      d.logger.error("media encoder exited", {
        session_id: d.sessionId,
        encoder: "video",
        code: status.code,
        signal: status.signal,
        stderr: enc.stderrTail,
      });
      this.#fail("video_encoder_exited");
    });
    if (!this.#running || this.#stopped) return;
    // The latest instant's frame at once (the keyframe a joining client waits for), then the clock's.
    const now = performance.now();
    const due = Math.floor((now - this.#t0) / this.#frameMs);
    if (due >= this.#nextFrame) this.#renderDue(now);
    else {
      // The current frame was ticked already, perhaps with nobody watching (its face not computed then,
      // and the last one kept may be from long ago): the keyframe must carry the current instant's time,
      // else the frames after it are not contiguous with it and an MSE player drops them until the next
      // keyframe (up to a GOP, 1 s, later).
      const kept = this.#lastFace?.k === due ? this.#lastFace.face : null;
      // A copy of the kept face: the renderer may read it after the next frame's face is kept in its place.
      const face = kept
        ? { ...kept, visemes: kept.visemes.slice() }
        : this.#face.faceAt((due + 0.5) * this.#frameMs);
      this.#keepFace(due, face);
      this.#renderOne(due, face);
    }
  }

  /** Stops the video encoder (no video client is connected); resolves once it has exited. */
  async #stopVideo(): Promise<void> {
    const enc = this.#video;
    if (!enc) return;
    this.#video = null;
    this.#frameQueue = [];
    this.#renderPending = false;
    this.#transport?.videoStopped();
    const stopped = enc.stop(0);
    this.#retiring.add(stopped);
    try {
      await stopped;
    } finally {
      this.#retiring.delete(stopped);
    }
  }

  /** Starts or stops the video encoder as video clients come and go. */
  #videoDemand(): void {
    if (this.#stopped || !this.#running || this.#failed) return;
    const want = this.#videoClients() > 0;
    if (want && !this.#video) {
      try {
        this.#startVideo();
      } catch (err) {
        this.#d.logger.error("media encoder could not start", {
          session_id: this.#d.sessionId,
          error: String(err),
        });
        this.#fail("video_encoder_failed");
      }
    } else if (!want && this.#video) {
      this.#stopVideo().catch(() => {});
    }
  }

  #demux(parse: () => void): void {
    try {
      parse();
    } catch (err) {
      this.#d.logger.error("media stream could not be parsed", {
        session_id: this.#d.sessionId,
        error: String(err).slice(0, 200),
      });
      this.#fail("encoder_output_invalid");
    }
  }

  #fail(reason: string, outcome?: { endReason: EndReason; warning: string }): void {
    if (this.#failed || this.#stopped) return;
    this.#failed = reason;
    if (!this.#initDone) {
      this.#firstFrame.reject(
        new ApiError(outcome?.endReason === "sfu_failed" ? "SVC_SFU_CONNECTION_FAILED" : "SVC_RENDER_FAILED"),
      );
      return;
    }
    this.#d.fail(reason, outcome);
  }

  #maybeInit(): void {
    if (this.#initDone || !this.#avcC || !this.#transport) return;
    this.#configure();
    this.#initDone = true;
    for (const au of this.#early.splice(0)) this.#onVideoAu(au.data, au.key);
  }

  /** Gives the transport the stream's configuration (again when a restarted encoder's differs). */
  #configure(): void {
    const { width, height, fps } = this.#d.renderer.format;
    this.#transport!.configure({
      width,
      height,
      fps,
      avcC: this.#avcC!,
      opus: this.#opus,
      inputSampleRate: this.#d.connection.inputSampleRate,
      timelineMs: () => performance.now() - this.#t0,
      avatar: { avatarId: this.#d.avatarId, bgId: this.#d.bgId, seed: hashSeed(this.#d.sessionId) },
    });
  }

  // ---- the clock ----

  #tick = (): void => {
    this.#timer = undefined;
    if (this.#stopped || !this.#running) return;
    const now = performance.now();
    this.#pumpAudio(now, true);
    this.#renderDue(now);
    this.#schedule();
  };

  #schedule(): void {
    if (this.#stopped) return;
    const frameAt = this.#t0 + this.#nextFrame * this.#frameMs;
    const queued = this.#clients() > 0 && !this.#queue.headHeld(this.#hold) ? this.#queue.length : 0;
    let due: number; // timeline sample at which audio needs attention
    if (queued >= AUDIO_BLOCK || (queued > 0 && this.#queue.settled)) {
      due = this.#written + AUDIO_BLOCK - MAX_LEAD_BLOCKS * AUDIO_BLOCK; // room for another speech block
    } else if (queued > 0) due = this.#written; // speech is late: an underrun is near
    else if (this.#speaking()) due = this.#written - this.#openLead(); // its next chunk is on its way
    else due = this.#written - AUDIO_BLOCK; // keep a block of silence ahead
    const audioAt = this.#t0 + due * 1000 / AUDIO_RATE;
    const wake = Math.min(frameAt, audioAt);
    this.#wakeUps.cancel(this.#timer);
    this.#timer = this.#wakeUps.schedule(wake, this.#tick);
  }

  /** Whether the response playing is still speaking: placed, open, its clients there, nothing of it queued. */
  #speaking(): boolean {
    const id = this.#placedResponse;
    return id !== null && this.#clients() > 0 && this.#queue.length === 0 &&
      this.#queue.expected(id) !== null;
  }

  /** How far ahead of the clock silence is written while a response is still speaking (samples). */
  #openLead(): number {
    return this.#transport?.kind === "webrtc_sfu" ? OPEN_SILENCE_LEAD_PACED_MS * AUDIO_RATE / 1000 : 0;
  }

  /**
   * Writes audio blocks as the lead rules allow (see the module documentation): silence is kept between
   * one and two blocks (21–43 ms) ahead of the clock — speech that arrives is placed right after it, so
   * that is the speech's wait — except while a response is still speaking and its next chunk has not come:
   * then silence is written only when due ({@link OPEN_SILENCE_LEAD_PACED_MS}), the face of a frame taken
   * beyond what is written holding its mouth until the chunk comes or the silence is written. Over the SFU,
   * whose audio is paced to the media clock, a clock tick tops the silence up to last until the next frame:
   * every packet is encoded well before its send time, so the pace the browser's jitter buffer sees stays
   * regular (packets a few ms late for their pace made it buffer, and delay the pictures with the sound).
   */
  #pumpAudio(now: number, tick = false): void {
    if (this.#stopped || !this.#running) return;
    const nowS = (now - this.#t0) * AUDIO_RATE / 1000;
    const gate = this.#clients() > 0;
    const paced = this.#transport?.kind === "webrtc_sfu";
    const silenceLead = AUDIO_BLOCK + (tick && paced ? this.#samplesPerFrame : 0);
    // Blocks are written in place in the ring (no allocation per block) and encoded from it after the
    // timeline knows them; at most the ring's blocks less one per call, so none is overwritten first.
    const ring = this.#ring;
    const from = this.#written;
    for (let guard = 0; guard < ring.length / AUDIO_BLOCK - 1; guard++) {
      const avail = gate && !this.#queue.headHeld(this.#hold) ? this.#queue.length : 0;
      const head = avail > 0 ? this.#queue.headResponse() : null;
      const starts = head !== null && head !== this.#placedResponse;
      let kind: "whole" | "first" | "late" | "silence";
      if (avail >= AUDIO_BLOCK || (avail > 0 && this.#queue.settled)) {
        if (this.#written + AUDIO_BLOCK > nowS + MAX_LEAD_BLOCKS * AUDIO_BLOCK) break;
        kind = "whole";
      } else if (avail > 0 && starts) {
        if (this.#written + AUDIO_BLOCK > nowS + MAX_LEAD_BLOCKS * AUDIO_BLOCK) break;
        kind = "first";
      } else if (avail > 0) {
        if (this.#written > nowS) break;
        kind = "late";
      } else if (this.#speaking()) {
        // Its next chunk is on its way: silence only when due (an underrun, if it is written).
        if (this.#written > nowS + this.#openLead()) break;
        if (this.#heldAt !== this.#written) {
          // Due now; but after the event loop was held up (a busy process), its expired timers run before
          // the socket's messages that came meanwhile: the chunk may be here, unread. One turn later (the
          // clock's next wake-up, already due, comes after them), the silence is written if it is not.
          this.#heldAt = this.#written;
          break;
        }
        kind = "silence";
        this.#stats.audioUnderruns++;
      } else if (this.#written >= nowS + silenceLead) {
        break;
      } else kind = "silence";
      const pos = this.#ringIndex(this.#written);
      const block = ring.subarray(pos, pos + AUDIO_BLOCK);
      block.fill(0);
      let speech = 0;
      /** Where in the block the speech starts. */
      let at = 0;
      if (kind === "whole") speech = this.#queue.take(block, 0, AUDIO_BLOCK, this.#placed);
      else if (kind === "first") {
        // A response's first audio, less than a block: it ends the block (silence before it), so it
        // plays without waiting for the rest of a block and the blocks after it stay whole.
        at = AUDIO_BLOCK - avail;
        speech = this.#queue.take(block, at, avail, this.#placed);
      } else if (kind === "late") {
        speech = this.#queue.take(block, 0, avail, this.#placed);
        this.#stats.audioUnderruns++;
      }
      if (speech > 0 && starts) {
        // The response's first sample is due (heard on the media clock) here.
        this.#placedResponse = head;
        this.#d.metrics?.speechPlaced(head, this.#t0 + (this.#written + at) * 1000 / AUDIO_RATE);
      }
      if (speech > 0) {
        this.#d.observer?.speechPlaced?.(this.#speechTaken, this.#written + at, speech);
        this.#speechTaken += speech;
        this.#speechUntil = this.#written + at + speech;
      }
      this.#written += AUDIO_BLOCK;
      this.#stats.audioBlocks++;
    }
    if (this.#written > from) this.#face.timeline.written(this.#written);
    this.#showQueued();
    for (let p = from; p < this.#written; p += AUDIO_BLOCK) {
      const pos = this.#ringIndex(p);
      this.#opusEnc.encode(ring.subarray(pos, pos + AUDIO_BLOCK), this.#onAudioPacket);
    }
  }

  /**
   * Tells the face where the speech still queued will play: the playout writes the playing response's
   * queued samples contiguously from its write position (whole blocks as they fill, the rest when the clock
   * needs it), so a frame rendered before they are written still shows their mouth (the face of a frame is
   * taken half a frame ahead of the clock, and an engine speaking in real time has its speech written only
   * 0–20 ms ahead of it).
   */
  #showQueued(): void {
    const run = this.#clients() > 0 && !this.#queue.headHeld(this.#hold) ? this.#queue.headRun() : null;
    if (run === null && this.#speaking()) {
      // Nothing queued of a response still speaking: its next block is on its way. Until it comes (or the
      // silence is written) a face taken there holds the last mouth decided (its visemes are not known yet).
      const id = this.#placedResponse!;
      this.#face.timeline.queued(
        { responseId: id, from: this.#queue.expected(id)!, at: this.#written, n: AUDIO_BLOCK },
        true,
      );
      return;
    }
    this.#face.timeline.queued(
      run && run.responseId === this.#placedResponse
        ? { responseId: run.responseId, from: run.from, at: this.#written, n: run.n }
        : null,
    );
  }

  /**
   * Renders the frames that are due: a late tick catches up on up to {@link MAX_CATCH_UP} missed frames
   * (older ones are dropped); a frame is also dropped while the encoder still has
   * {@link MAX_PENDING_FRAMES} frames to take.
   */
  #renderDue(now: number): void {
    const due = Math.floor((now - this.#t0) / this.#frameMs);
    if (due < this.#nextFrame) return;
    const first = Math.max(this.#nextFrame, due - MAX_CATCH_UP);
    if (this.#video) this.#stats.framesDropped += first - this.#nextFrame;
    this.#nextFrame = due + 1;
    // Without a video encoder and without clients nobody sees the face: nothing to decide or draw.
    if (!this.#video && this.#clients() === 0) return;
    for (let k = first; k <= due; k++) {
      // The face at the middle of the frame's display time: a sound's mouth is on screen within half a
      // frame of the sound. The frame is its visemes' deadline (they are decided now, if not yet).
      const face = this.#face.faceAt((k + 0.5) * this.#frameMs);
      this.#keepFace(k, face);
      this.#animateFace(k, face);
      if (!this.#video) continue;
      if (this.#renderPending || this.#video.pendingWrites >= MAX_PENDING_FRAMES) {
        this.#stats.framesDropped++;
        continue;
      }
      this.#renderOne(k, face);
    }
  }

  /** Keeps frame `k`'s face (copied in place: the face handed out is reused by the next call). */
  #keepFace(k: number, face: FaceState): void {
    const kept = this.#keptFace;
    kept.k = k;
    kept.face.visemes.set(face.visemes);
    kept.face.eyes = face.eyes;
    kept.face.look = face.look;
    kept.face.headDx = face.headDx;
    kept.face.headDy = face.headDy;
    kept.face.mode = face.mode;
    this.#lastFace = kept;
  }

  /**
   * Tells video-free clients what changed of the face at frame `k`'s instant: its state, eyes and look
   * at once, the head's pose every {@link HEAD_EVERY_FRAMES} frames (the client interpolates).
   */
  #animateFace(k: number, face: FaceState): void {
    if (!this.#transport?.animationClients) return;
    const t = Math.round((k + 0.5) * this.#frameMs);
    const told = this.#told;
    if (face.mode !== told.mode || face.eyes !== told.eyes || face.look !== told.look) {
      told.mode = face.mode;
      told.eyes = face.eyes;
      told.look = face.look;
      this.#animate({ type: "face", t_ms: t, state: face.mode, eyes: face.eyes, look: face.look });
    }
    if (k % HEAD_EVERY_FRAMES === 0 && (face.headDx !== told.headDx || face.headDy !== told.headDy)) {
      told.headDx = face.headDx;
      told.headDy = face.headDy;
      this.#animate({ type: "head", t_ms: t, dx: face.headDx, dy: face.headDy });
    }
  }

  /** An animation message for the video-free clients. */
  #animate(m: AnimationMessage): void {
    if (!this.#stopped) this.#transport?.animation(m);
  }

  #videoClients(): number {
    return this.#transport?.videoClients ?? 0;
  }

  #renderOne(k: number, face: FaceState): void {
    // The audio played during the frame's display time: centred on the instant its face is taken at.
    const start = k * this.#samplesPerFrame;
    const audio = this.#timeline(start, this.#samplesPerFrame);
    const speaking = this.#speechUntil > start || (this.#clients() > 0 && this.#queue.length > 0);
    const out = this.#render.renderFrame({
      index: k,
      timeMs: k * this.#frameMs,
      audio,
      sampleRate: AUDIO_RATE,
      speaking,
      face,
    });
    if (out instanceof Uint8Array) this.#writeFrame(k, out);
    else {
      this.#renderPending = true;
      const enc = this.#video;
      out.then((frame) => {
        if (this.#video !== enc) return;
        this.#renderPending = false;
        if (!this.#stopped) this.#writeFrame(k, frame);
      }, (err) => {
        this.#renderPending = false;
        this.#d.logger.error("render failed", {
          session_id: this.#d.sessionId,
          error: String(err).slice(0, 200),
        });
        this.#fail("render_failed");
      });
    }
  }

  #writeFrame(k: number, frame: Uint8Array): void {
    if (!this.#video) return;
    this.#frameQueue.push(k);
    this.#video.write(frame);
    this.#stats.framesRendered++;
  }

  /** Audio of the timeline at [start, start + n): written samples from the ring, then queued speech. */
  #timeline(start: number, n: number): Int16Array {
    const out = new Int16Array(n);
    const ringLen = this.#ring.length;
    let p = Math.max(start, this.#written - ringLen);
    while (p < start + n && p < this.#written) {
      const at = this.#ringIndex(p);
      const k = Math.min(start + n, this.#written, p + (ringLen - at)) - p;
      out.set(this.#ring.subarray(at, at + k), p - start);
      p += k;
    }
    if (start + n > this.#written && this.#clients() > 0) {
      const from = Math.max(start, this.#written);
      this.#queue.peek(out, from - start, from - this.#written, start + n - from);
    }
    return out;
  }

  /** Where timeline sample `s` is in the ring (blocks, which start on the audio grid, never wrap). */
  #ringIndex(s: number): number {
    const len = this.#ring.length;
    return ((s - AUDIO_GRID_OFFSET) % len + len) % len;
  }

  // ---- encoder output ----

  #onVideoAu(data: Uint8Array, key: boolean): void {
    if (!this.#initDone) {
      this.#early.push({ data, key });
      return;
    }
    const k = this.#frameQueue.shift() ?? this.#nextFrame;
    this.#transport!.video({ index: k, pts: k * this.#frameTicks, duration: this.#frameTicks, data, key });
    this.#stats.framesEncoded++;
    if (this.#stats.framesEncoded === 1) this.#firstFrame.resolve();
  }

  /** Speech taken from the queue into the block being written (at `outAt` in it). */
  #placed = (id: string, from: number, outAt: number, n: number): void =>
    this.#face.placed(id, from, this.#written + outAt, n);

  #onAudioPacket = (data: Uint8Array, samples: number): void => {
    const pts = this.#audioPts;
    this.#audioPts += samples;
    // Packets encoded before the stream's configuration is complete are not delivered.
    if (this.#initDone && !this.#stopped) this.#transport!.audio({ pts, samples, data });
  };

  #clients(): number {
    return this.#transport?.clients ?? 0;
  }

  // ---- engine events ----

  onResponseStarted(responseId: string): void {
    this.#queue.start(responseId);
    this.#face.responseStarted(responseId);
  }

  onAudio(pcm: Int16Array, responseId: string): void {
    if (this.#stopped) return;
    this.#face.audio(pcm, responseId);
    const need = this.#resampler.maxOutput(pcm.length);
    if (this.#resampled.length < need) this.#resampled = new Int16Array(Math.max(need, 2 * AUDIO_BLOCK));
    const n = this.#resampler.into(pcm, this.#resampled);
    this.#queue.push(responseId, this.#resampled.subarray(0, n));
    this.#pumpAudio(performance.now());
  }

  onResponseDone(responseId: string, _status: string): void {
    this.#face.responseDone(responseId);
    this.#queue.done(responseId);
    this.#pumpAudio(performance.now());
  }

  onInterrupt(responseId: string): void {
    this.#queue.interrupt(responseId);
    this.#face.interrupt(responseId);
    this.#showQueued();
    // `t_ms`: where the speech already written stops on the timeline (what plays on, at most 120 ms).
    this.#transport?.control({
      type: "interrupt",
      response_id: responseId,
      t_ms: Math.round(this.#written * 1000 / AUDIO_RATE),
    });
  }

  onAgentWords(responseId: string, words: readonly WordTiming[]): void {
    this.#face.words(responseId, words);
  }

  onAgentAlignment(responseId: string, alignment: CharAlignment): void {
    this.#face.alignment(responseId, alignment);
  }

  /**
   * Listens to the visemes of the session stamped on the media timeline (`t_ms` is the presentation time
   * of the session's audio), for clients that draw the avatar themselves; returns the unsubscribe call.
   */
  subscribeVisemes(listener: (v: TimelineViseme) => void): () => void {
    return this.#face.subscribe(listener);
  }

  onTranscript(line: { role: "user" | "agent"; turnId: string; text: string; final: boolean }): void {
    this.#face.transcript(line);
    this.#transport?.control({
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

  /** The session's transport (the media routes attach their clients to it). */
  get transport(): MediaTransport | null {
    return this.#transport;
  }

  // ---- SessionMedia ----

  chunksRendered(): number {
    return this.#stats.framesEncoded;
  }

  /** Counters (for the bench and diagnostics). */
  stats(): SessionMediaStats {
    return {
      ...this.#stats,
      interruptDroppedSamples: this.#queue.interruptDropped,
      overflowDroppedSamples: this.#queue.overflowDropped,
      clients: this.#clients(),
      slowClientsClosed: this.#transport?.stats().slowClientsClosed ?? 0,
      bytesSent: this.#transport?.stats().bytesSent ?? 0,
      queuedSamples: this.#queue.length,
      audioWritten: this.#written,
      audioPreSkip: this.#opus?.preSkip ?? 0,
      lipSync: this.#face.stats(),
    };
  }

  /** Process ids of the encoders (for diagnostics and tests). */
  encoderPids(): number[] {
    return this.#video ? [this.#video.pid] : [];
  }

  async stop(options: { graceful: boolean; timeoutMs: number }): Promise<string | null> {
    if (this.#stopped) return null;
    this.#stopped = true;
    this.#wakeUps.cancel(this.#timer);
    this.#queue.clear();
    this.#toolCalls.close();
    const closing = this.#transport?.close(this.#failed) ?? Promise.resolve();
    // Closing their input lets the encoders finish on their own; a graceful end gives them the whole
    // teardown budget before they are killed (and the end is reported with a warning).
    const grace = options.graceful ? Math.max(0, options.timeoutMs) : 0;
    const encoders = this.#video ? [this.#video] : [];
    this.#video = null;
    this.#opusEnc.close();
    const [clean] = await Promise.all([
      Promise.all(encoders.map((e) => grace > 0 ? e.stop(grace) : e.stop(0))),
      Promise.allSettled([...this.#retiring]),
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

/** A 32-bit seed from a session id (blinks and head motion differ between sessions). */
function hashSeed(s: string): number {
  let h = 2166136261;
  for (let i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), 16777619);
  return h >>> 0;
}

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  return a.length === b.length && a.every((x, i) => x === b[i]);
}
