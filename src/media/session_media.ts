/**
 * One session's media plane: the media clock, the avatar's speech playout, rendering, the two ffmpeg
 * encoders, fMP4 muxing and delivery to the session's clients. Implements the runtime's
 * {@link SessionMedia}.
 *
 * Timing. One monotonic clock drives both tracks from the same origin: video frame `k` is rendered at
 * `k / fps` and audio sample `n` is due at `n / 48000`, so audio and video stay in sync by construction.
 * Audio is written to its encoder in blocks of {@link AUDIO_BLOCK} samples (21.3 ms, exactly one ffmpeg
 * packet, so every block is encoded at once) and kept between one and {@link MAX_LEAD_BLOCKS} blocks
 * ahead of the clock: silence fills the gaps, speech is written as soon as a whole block of it is queued
 * and at most that far ahead, so barge-in can only leave that much already-encoded speech behind. Each
 * video frame is rendered from the audio played during it (already written or still queued), so the
 * mouth matches the sound.
 *
 * Speech waits in the queue while no client is connected (nobody would hear it), then plays.
 *
 * @module
 */
import { ApiError } from "../errors.ts";
import type { Logger } from "../log.ts";
import type { ProviderConnection } from "../providers/types.ts";
import type { SessionMedia } from "../runtime/session_runtime.ts";
import { MEDIA_CLOSE } from "./close_codes.ts";
import { Fanout, type FanoutLimits, type MediaClient } from "./fanout.ts";
import { AUDIO_BLOCK, AUDIO_RATE, audioEncoderArgs, EncoderProcess, videoEncoderArgs } from "./ffmpeg.ts";
import { avcCodecString, FlvDemuxer } from "./flv.ts";
import {
  AUDIO_TRACK_ID,
  initSegment,
  mediaSegment,
  type Sample,
  VIDEO_TIMESCALE,
  VIDEO_TRACK_ID,
} from "./fmp4.ts";
import { OggOpusDemuxer, type OpusHead } from "./ogg_opus.ts";
import { PlayoutQueue } from "./playout_queue.ts";
import type { Renderer, RenderSession } from "./renderer.ts";
import { LinearResampler } from "./resample.ts";

/** Audio is kept at most this many blocks ahead of the clock (≈ 128 ms). */
export const MAX_LEAD_BLOCKS = 6;
/** Queued speech is bounded to 30 s (the engine protocol's bound); older audio is dropped. */
export const MAX_QUEUED_SECONDS = 30;
/** Largest upstream audio frame, bytes (the engine protocol's limit). */
export const MAX_UPSTREAM_FRAME = 64 * 1024;
/** Audio fragments are sent when they hold 20 ms of audio or 4 ms after their first packet. */
const AUDIO_FLUSH_SAMPLES = 960;
const AUDIO_FLUSH_MS = 4;
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
  /** Deadline for the first encoded frame when starting (→ 504 SVC_RENDER_TIMEOUT). */
  firstFrameTimeoutMs: number;
  limits: FanoutLimits;
  logger: Logger;
  /** The media plane failed on its own (an encoder died). */
  fail(reason: string): void;
  clientsChanged(count: number): void;
  /** Called once when the media plane has stopped (releases its render slot). */
  onStopped(): void;
  /** Optional probe for measurements: speech samples placed on the timeline. */
  observer?: MediaObserver;
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
}

/** A client attached to the session (the socket layer holds it). */
export interface AttachedClient {
  /** Upstream microphone audio (PCM16LE at the engine's input rate). */
  receive(data: Uint8Array): void;
  /** The client's socket closed. */
  detach(): void;
}

/** The media plane of one session. */
export class AvatarSessionMedia implements SessionMedia {
  readonly #d: SessionMediaDeps;
  readonly #render: RenderSession;
  readonly #fanout: Fanout;
  readonly #queue: PlayoutQueue;
  readonly #resampler: LinearResampler;
  readonly #frameMs: number;
  readonly #frameTicks: number;
  readonly #samplesPerFrame: number;
  /** The last ≈ 2 s of written audio (a whole number of blocks, so blocks never wrap). */
  readonly #ring = new Int16Array(AUDIO_BLOCK * 94);
  #video!: EncoderProcess;
  #audio!: EncoderProcess;
  #t0 = 0;
  #timer: ReturnType<typeof setTimeout> | undefined;
  #nextFrame = 0;
  #written = 0;
  #speechUntil = 0;
  #speechTaken = 0;
  #frameQueue: number[] = [];
  #renderPending = false;
  #avcC: Uint8Array | null = null;
  #opus: OpusHead | null = null;
  #seq = 1;
  #audioPts = 0;
  #audioPending: Sample[] = [];
  #audioPendingSamples = 0;
  #audioFlushTimer: ReturnType<typeof setTimeout> | undefined;
  #firstFrame = Promise.withResolvers<void>();
  #initDone = false;
  /** Access units encoded before the init segment was complete (published right after it). */
  #early: { data: Uint8Array; key: boolean }[] = [];
  #stopped = false;
  /** The clock runs (after the warm-up). */
  #running = false;
  #failed: string | null = null;
  #micOwner: MediaClient | null = null;
  readonly #stats = {
    framesRendered: 0,
    framesEncoded: 0,
    framesDropped: 0,
    audioBlocks: 0,
    audioUnderruns: 0,
  };

  private constructor(deps: SessionMediaDeps) {
    this.#d = deps;
    const { fps } = deps.renderer.format;
    this.#frameMs = 1000 / fps;
    this.#frameTicks = VIDEO_TIMESCALE / fps;
    this.#samplesPerFrame = AUDIO_RATE / fps;
    this.#render = deps.renderer.open({
      avatarId: deps.avatarId,
      bgId: deps.bgId,
      seed: hashSeed(deps.sessionId),
    });
    this.#fanout = new Fanout(deps.limits, (n) => {
      deps.clientsChanged(n);
      if (n > 0) this.#pumpAudio(performance.now());
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
    this.#firstFrame.promise.catch(() => {});
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
    const flv = new FlvDemuxer({
      onConfig: (avcC) => {
        this.#avcC = avcC;
        this.#maybeInit();
      },
      onAccessUnit: (au) => this.#onVideoAu(au.data, au.key),
    });
    const ogg = new OggOpusDemuxer({
      onHead: (head) => {
        this.#opus = head;
        this.#maybeInit();
      },
      onPacket: (data, samples) => this.#onAudioPacket(data, samples),
    });
    try {
      this.#video = EncoderProcess.spawn(d.ffmpegPath, videoEncoderArgs(d.renderer.format, d.crf), (c) => {
        if (!this.#stopped) this.#demux(() => flv.push(c));
      });
      this.#audio = EncoderProcess.spawn(d.ffmpegPath, audioEncoderArgs(d.audioBitrate), (c) => {
        if (!this.#stopped) this.#demux(() => ogg.push(c));
      });
    } catch (err) {
      d.logger.error("media encoder could not start", { session_id: d.sessionId, error: String(err) });
      throw new ApiError("SVC_RENDER_FAILED");
    }
    for (const [name, enc] of [["video", this.#video], ["audio", this.#audio]] as const) {
      d.observer?.encoderStarted?.(d.sessionId, enc.pid);
      enc.exited.then((status) => {
        if (this.#stopped) return;
        d.logger.error("media encoder exited", {
          session_id: d.sessionId,
          encoder: name,
          code: status.code,
          signal: status.signal,
          stderr: enc.stderrTail,
        });
        this.#fail(`${name}_encoder_exited`);
      });
    }
    // Warm-up: frame 0 and one block of silence make both encoders start (ffmpeg writes its headers
    // on its first input). The clock starts once the first frame is out, so ffmpeg's start-up time
    // neither drops frames nor puts the audio ahead.
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
    this.#tick();
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

  #fail(reason: string): void {
    if (this.#failed || this.#stopped) return;
    this.#failed = reason;
    if (!this.#initDone) {
      this.#firstFrame.reject(new ApiError("SVC_RENDER_FAILED"));
      return;
    }
    this.#d.fail(reason);
  }

  #maybeInit(): void {
    if (this.#initDone || !this.#avcC || !this.#opus) return;
    const { width, height, fps } = this.#d.renderer.format;
    const init = initSegment({ width, height, avcC: this.#avcC, opus: this.#opus });
    this.#fanout.setInit({
      type: "hello",
      session_id: this.#d.sessionId,
      mime: `video/mp4; codecs="${avcCodecString(this.#avcC)}, opus"`,
      video: { width, height, fps },
      input_sample_rate: this.#d.connection.inputSampleRate,
    }, init);
    this.#initDone = true;
    for (const au of this.#early.splice(0)) this.#onVideoAu(au.data, au.key);
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
    const queued = this.#fanout.count > 0 ? this.#queue.length : 0;
    let due: number; // timeline sample at which audio needs attention
    if (queued >= AUDIO_BLOCK || (queued > 0 && this.#queue.settled)) {
      due = this.#written + AUDIO_BLOCK - MAX_LEAD_BLOCKS * AUDIO_BLOCK; // room for another speech block
    } else if (queued > 0) due = this.#written; // speech is late: an underrun is near
    else due = this.#written - AUDIO_BLOCK; // keep a block of silence ahead
    const audioAt = this.#t0 + due * 1000 / AUDIO_RATE;
    const wake = Math.min(frameAt, audioAt);
    clearTimeout(this.#timer);
    this.#timer = setTimeout(this.#tick, Math.max(0, Math.ceil(wake - performance.now())));
  }

  /**
   * Writes audio blocks as the lead rules allow (see the module documentation). On a clock tick the
   * silence is topped up to last until the next frame's tick, so an idle session wakes once per frame.
   */
  #pumpAudio(now: number, tick = false): void {
    if (this.#stopped || !this.#running) return;
    const nowS = (now - this.#t0) * AUDIO_RATE / 1000;
    const gate = this.#fanout.count > 0;
    const silenceLead = AUDIO_BLOCK + (tick ? this.#samplesPerFrame : 0);
    const blocks: Int16Array[] = [];
    for (let guard = 0; guard < 64; guard++) {
      const avail = gate ? this.#queue.length : 0;
      const block = new Int16Array(AUDIO_BLOCK);
      let speech = 0;
      if (avail >= AUDIO_BLOCK || (avail > 0 && this.#queue.settled)) {
        if (this.#written + AUDIO_BLOCK > nowS + MAX_LEAD_BLOCKS * AUDIO_BLOCK) break;
        speech = this.#queue.take(block, 0, AUDIO_BLOCK);
      } else if (avail > 0) {
        if (this.#written > nowS) break;
        speech = this.#queue.take(block, 0, avail);
        this.#stats.audioUnderruns++;
      } else if (this.#written >= nowS + silenceLead) {
        break;
      }
      if (speech > 0) {
        this.#d.observer?.speechPlaced?.(this.#speechTaken, this.#written, speech);
        this.#speechTaken += speech;
        this.#speechUntil = this.#written + speech;
      }
      this.#ring.set(block, this.#written % this.#ring.length);
      blocks.push(block);
      this.#written += AUDIO_BLOCK;
      this.#stats.audioBlocks++;
    }
    if (blocks.length === 1) this.#audio.write(new Uint8Array(blocks[0].buffer));
    else if (blocks.length > 1) {
      const all = new Int16Array(blocks.length * AUDIO_BLOCK);
      blocks.forEach((b, i) => all.set(b, i * AUDIO_BLOCK));
      this.#audio.write(new Uint8Array(all.buffer));
    }
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
    this.#stats.framesDropped += first - this.#nextFrame;
    this.#nextFrame = due + 1;
    for (let k = first; k <= due; k++) {
      if (this.#renderPending || this.#video.pendingWrites >= MAX_PENDING_FRAMES) {
        this.#stats.framesDropped++;
        continue;
      }
      this.#renderOne(k);
    }
  }

  #renderOne(k: number): void {
    const start = k * this.#samplesPerFrame;
    const audio = this.#timeline(start, this.#samplesPerFrame);
    const speaking = this.#speechUntil > start || (this.#fanout.count > 0 && this.#queue.length > 0);
    const out = this.#render.renderFrame({
      index: k,
      timeMs: k * this.#frameMs,
      audio,
      sampleRate: AUDIO_RATE,
      speaking,
    });
    if (out instanceof Uint8Array) this.#writeFrame(k, out);
    else {
      this.#renderPending = true;
      out.then((frame) => {
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
      const at = p % ringLen;
      const k = Math.min(start + n, this.#written, p + (ringLen - at)) - p;
      out.set(this.#ring.subarray(at, at + k), p - start);
      p += k;
    }
    if (start + n > this.#written && this.#fanout.count > 0) {
      const from = Math.max(start, this.#written);
      this.#queue.peek(out, from - start, from - this.#written, start + n - from);
    }
    return out;
  }

  // ---- encoder output ----

  #onVideoAu(data: Uint8Array, key: boolean): void {
    if (!this.#initDone) {
      this.#early.push({ data, key });
      return;
    }
    const k = this.#frameQueue.shift() ?? this.#nextFrame;
    const seg = mediaSegment(this.#seq++, VIDEO_TRACK_ID, k * this.#frameTicks, [
      { data, duration: this.#frameTicks, key },
    ]);
    this.#fanout.publish({
      kind: "video",
      data: seg,
      key,
      startMs: k * this.#frameMs,
      endMs: (k + 1) * this.#frameMs,
    });
    this.#stats.framesEncoded++;
    if (this.#stats.framesEncoded === 1) this.#firstFrame.resolve();
  }

  #onAudioPacket(data: Uint8Array, samples: number): void {
    this.#audioPending.push({ data, duration: samples, key: true });
    this.#audioPendingSamples += samples;
    if (this.#audioPendingSamples >= AUDIO_FLUSH_SAMPLES) this.#flushAudio();
    else this.#audioFlushTimer ??= setTimeout(() => this.#flushAudio(), AUDIO_FLUSH_MS);
  }

  #flushAudio(): void {
    clearTimeout(this.#audioFlushTimer);
    this.#audioFlushTimer = undefined;
    if (!this.#audioPending.length || this.#stopped) return;
    const samples = this.#audioPending;
    const start = this.#audioPts;
    this.#audioPending = [];
    this.#audioPts += this.#audioPendingSamples;
    this.#audioPendingSamples = 0;
    if (!this.#initDone) return;
    const skip = this.#opus?.preSkip ?? 0;
    this.#fanout.publish({
      kind: "audio",
      data: mediaSegment(this.#seq++, AUDIO_TRACK_ID, start, samples),
      key: true,
      startMs: (start - skip) * 1000 / AUDIO_RATE,
      endMs: (this.#audioPts - skip) * 1000 / AUDIO_RATE,
    });
  }

  // ---- engine events ----

  onResponseStarted(responseId: string): void {
    this.#queue.start(responseId);
  }

  onAudio(pcm: Int16Array, responseId: string): void {
    if (this.#stopped) return;
    this.#queue.push(responseId, this.#resampler.process(pcm));
    this.#pumpAudio(performance.now());
  }

  onResponseDone(responseId: string, _status: string): void {
    this.#queue.done(responseId);
    this.#pumpAudio(performance.now());
  }

  onInterrupt(responseId: string): void {
    this.#queue.interrupt(responseId);
    this.#fanout.broadcast({ type: "interrupt", response_id: responseId });
  }

  onTranscript(line: { role: "user" | "agent"; turnId: string; text: string; final: boolean }): void {
    this.#fanout.broadcast({
      type: "transcript",
      role: line.role,
      turn_id: line.turnId,
      text: line.text,
      final: line.final,
    });
  }

  // ---- clients ----

  /**
   * Attaches a media client: it receives the stream from the latest keyframe; the newest client holds
   * the microphone (its upstream audio goes to the engine). Returns null when the client was refused.
   */
  attach(client: MediaClient): AttachedClient | null {
    if (this.#stopped || !this.#fanout.add(client)) return null;
    this.#micOwner = client;
    return {
      receive: (data) => this.#upstream(client, data),
      detach: () => {
        this.#fanout.remove(client);
        if (this.#micOwner === client) this.#micOwner = null;
      },
    };
  }

  #upstream(client: MediaClient, data: Uint8Array): void {
    if (this.#stopped || client !== this.#micOwner) return;
    if (data.length === 0 || data.length % 2 !== 0 || data.length > MAX_UPSTREAM_FRAME) {
      this.#fanout.remove(client);
      client.close(MEDIA_CLOSE.BAD_FRAME.code, MEDIA_CLOSE.BAD_FRAME.reason);
      return;
    }
    try {
      this.#d.connection.sendUserAudio(data);
    } catch { /* the engine connection is closing */ }
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
      clients: this.#fanout.count,
      slowClientsClosed: this.#fanout.slowClosed,
      bytesSent: this.#fanout.bytesSent,
      queuedSamples: this.#queue.length,
      audioWritten: this.#written,
      audioPreSkip: this.#opus?.preSkip ?? 0,
    };
  }

  /** Process ids of the encoders (for diagnostics and tests). */
  encoderPids(): number[] {
    return [this.#video, this.#audio].filter(Boolean).map((e) => e.pid);
  }

  async stop(options: { graceful: boolean; timeoutMs: number }): Promise<string | null> {
    if (this.#stopped) return null;
    this.#stopped = true;
    clearTimeout(this.#timer);
    clearTimeout(this.#audioFlushTimer);
    this.#queue.clear();
    if (this.#failed) {
      this.#fanout.broadcast({ type: "ended", reason: this.#failed });
      this.#fanout.closeAll(MEDIA_CLOSE.MEDIA_FAILED.code, MEDIA_CLOSE.MEDIA_FAILED.reason);
    } else {
      this.#fanout.broadcast({ type: "ended", reason: "session_ended" });
      this.#fanout.closeAll(MEDIA_CLOSE.SESSION_ENDED.code, MEDIA_CLOSE.SESSION_ENDED.reason);
    }
    // Closing their input lets the encoders finish on their own; a graceful end gives them the whole
    // teardown budget before they are killed (and the end is reported with a warning).
    const grace = options.graceful ? Math.max(0, options.timeoutMs) : 0;
    const encoders = [this.#video, this.#audio].filter(Boolean);
    const clean = await Promise.all(encoders.map((e) => grace > 0 ? e.stop(grace) : e.stop(0)));
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
