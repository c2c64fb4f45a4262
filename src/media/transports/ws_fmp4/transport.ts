/**
 * The `websocket_fmp4` transport: the encoded frames are muxed into fragmented MP4 in-process (one
 * `moof`+`mdat` per video frame, audio in fragments of about 20 ms) and fanned out to the session's media
 * WebSockets (`src/api/transport_socket.ts`, attached by `../registry.ts`), which send the microphone back as PCM16 frames. Protocol:
 * docs/media-plane.md.
 *
 * @module
 */
import { MEDIA_CLOSE } from "../../../vocabulary/close_codes.ts";
import { avcCodecString } from "../../flv.ts";
import { VISEMES } from "../../lipsync/visemes.ts";
import type {
  AnimationMessage,
  ControlMessage,
  EncodedAudioPacket,
  EncodedVideoFrame,
  MediaTransport,
  StreamConfig,
  TransportHooks,
  TransportStats,
} from "../transport.ts";
import { Fanout, type FanoutLimits, type Fragment, type MediaClient } from "./fanout.ts";
import { AUDIO_TRACK_ID, initSegment, mediaSegment, type Sample, VIDEO_TRACK_ID } from "./fmp4.ts";
import type { FrameUnit } from "./frames.ts";

/** Largest upstream audio frame, bytes (the engine protocol's limit). */
export const MAX_UPSTREAM_FRAME = 64 * 1024;
/** Audio fragments are sent when they hold 20 ms of audio or 4 ms after their first packet. */
const AUDIO_FLUSH_SAMPLES = 960;
const AUDIO_FLUSH_MS = 4;

/**
 * An audio fragment whose two encodings (fMP4, the lighter framing) are built when a client (or a joiner,
 * from the cache) first needs them: a session watched only by clients of one framing never builds the
 * other. A class, not an object literal with getters: those made two closures per fragment (≈ 1 KB of
 * young garbage per 20 ms per session). It holds little besides its packets, and is itself the lighter
 * framing's unit of a fragment of one packet (every fragment, at 20 ms per packet and per flush): the
 * fragments kept for joiners (200 ms of them per session) were most of what V8 promoted at each
 * scavenge, with an array, a sample and a unit object each beside the fragment.
 */
class AudioFragment implements Fragment, FrameUnit {
  readonly kind = "audio";
  readonly key = true;
  readonly startMs: number;
  #data: Uint8Array | undefined;

  constructor(
    readonly seq: number,
    /** First sample (48 kHz, the encoder's timeline, pre-skip included). */
    readonly start: number,
    readonly skip: number,
    /** The packet (one), or the packets with their durations (48 kHz samples). */
    readonly packets: Uint8Array | Sample[],
    /** Samples of a single packet. */
    readonly samples: number,
    readonly endMs: number,
  ) {
    this.startMs = (start - skip) / 48;
  }

  get timeMs(): number {
    return this.startMs;
  }

  get durationMs(): number {
    return this.samples / 48;
  }

  get payload(): Uint8Array {
    return this.packets instanceof Uint8Array ? this.packets : this.packets[0].data;
  }

  get data(): Uint8Array {
    return this.#data ??= mediaSegment(
      this.seq,
      AUDIO_TRACK_ID,
      this.start,
      this.packets instanceof Uint8Array
        ? [{ data: this.packets, duration: this.samples, key: true }]
        : this.packets,
    );
  }

  /** Listed anew at each call (the fragment is the unit of its one packet): nothing more is kept. */
  get units(): FrameUnit[] {
    if (this.packets instanceof Uint8Array) return [this];
    const units: FrameUnit[] = [];
    let at = this.start - this.skip;
    for (const p of this.packets) {
      units.push({ kind: "audio", timeMs: at / 48, durationMs: p.duration / 48, key: true, payload: p.data });
      at += p.duration;
    }
    return units;
  }
}

/** A client attached to the session (the socket layer holds it). */
export interface AttachedClient {
  /** Upstream microphone audio (PCM16LE at the engine's input rate). */
  receive(data: Uint8Array): void;
  /** The client's socket closed. */
  detach(): void;
}

/** fMP4 over WebSocket. */
export class WsFmp4Transport implements MediaTransport {
  readonly kind = "websocket_fmp4";
  readonly #fanout: Fanout;
  readonly #hooks: TransportHooks;
  #config: StreamConfig | null = null;
  #seq = 1;
  #audioPending: Sample[] = [];
  #audioPendingSamples = 0;
  /** Position of the next audio fragment, 48 kHz samples of the encoder's output. */
  #audioPts: number | null = null;
  #audioFlushTimer: ReturnType<typeof setTimeout> | undefined;
  #micOwner: MediaClient | null = null;
  #closed = false;
  /** The latest animation message of each type (a joining video-free client gets them first). */
  readonly #latest = new Map<string, string>();

  constructor(sessionId: string, limits: FanoutLimits, hooks: TransportHooks) {
    this.sessionId = sessionId;
    this.#hooks = hooks;
    this.#fanout = new Fanout(limits, (n) => hooks.clientsChanged(n));
  }

  readonly sessionId: string;

  get clients(): number {
    return this.#fanout.count;
  }

  get videoClients(): number {
    return this.#fanout.videoCount;
  }

  get animationClients(): number {
    return this.#fanout.animationCount;
  }

  configure(config: StreamConfig): void {
    this.#config = config;
    const { width, height, fps, avcC, opus, inputSampleRate, avatar } = config;
    const codec = avcCodecString(avcC);
    const audio = { codec: "opus", sample_rate: 48000, channels: opus.channels };
    this.#fanout.setInit((framing, video) => ({
      type: "hello",
      session_id: this.sessionId,
      ...(video ? { mime: `video/mp4; codecs="${codec}, opus"` } : {}),
      video: video ? { width, height, fps } : null,
      input_sample_rate: inputSampleRate,
      // The media clock now (ms), when the client joins: media times are on this timeline.
      timeline_ms: Math.round(config.timelineMs() * 10) / 10,
      framing,
      ...(framing === "frames"
        ? { codecs: video ? { video: { codec, description: avcC.toBase64() }, audio } : { audio } }
        : {}),
      // A video client reads the mouth of the frames it shows in the art's mouth box (mouth vs sound as
      // shown): where it is, no art to fetch; a video-free client draws the avatar: the art to draw
      // (docs/media-plane.md#video-free-clients).
      ...(video ? { art_path: `/media/v0/art/${avatar.avatarId}`, ...(avatar.mouth ?? {}) } : {
        animation: {
          avatar_id: avatar.avatarId,
          bg_id: avatar.bgId,
          art_path: `/media/v0/art/${avatar.avatarId}`,
          // The document itself when it is small (a stock avatar's): no request before the first picture.
          ...(avatar.art ? { art: avatar.art } : {}),
          seed: avatar.seed,
          visemes: VISEMES,
        },
      }),
    }), initSegment({ width, height, avcC, opus }));
  }

  animation(message: AnimationMessage): void {
    if (this.#closed) return;
    this.#latest.set(message.type, JSON.stringify(message));
    if (this.#fanout.animationCount > 0) this.#fanout.broadcast(message, (c) => c.video === false);
  }

  videoStopped(): void {
    this.#fanout.dropVideo();
  }

  video(frame: EncodedVideoFrame): void {
    if (this.#closed) return;
    const seg = mediaSegment(this.#seq++, VIDEO_TRACK_ID, frame.pts, [
      { data: frame.data, duration: frame.duration, key: frame.key },
    ]);
    const startMs = frame.pts / 90;
    const endMs = (frame.pts + frame.duration) / 90;
    this.#fanout.publish({
      kind: "video",
      data: seg,
      units: [{
        kind: "video",
        timeMs: startMs,
        durationMs: endMs - startMs,
        key: frame.key,
        payload: frame.data,
      }],
      key: frame.key,
      startMs,
      endMs,
    });
  }

  audio(packet: EncodedAudioPacket): void {
    if (this.#closed) return;
    this.#audioPts ??= packet.pts;
    this.#audioPending.push({ data: packet.data, duration: packet.samples, key: true });
    this.#audioPendingSamples += packet.samples;
    if (this.#audioPendingSamples >= AUDIO_FLUSH_SAMPLES) this.#flushAudio();
    else this.#audioFlushTimer ??= setTimeout(() => this.#flushAudio(), AUDIO_FLUSH_MS);
  }

  #flushAudio(): void {
    clearTimeout(this.#audioFlushTimer);
    this.#audioFlushTimer = undefined;
    if (!this.#audioPending.length || this.#closed || this.#audioPts === null) return;
    const pending = this.#audioPending;
    const start = this.#audioPts;
    this.#audioPending = [];
    const n = this.#audioPendingSamples;
    this.#audioPts += n;
    this.#audioPendingSamples = 0;
    const skip = this.#config?.opus.preSkip ?? 0;
    const packets = pending.length === 1 ? pending[0].data : pending;
    this.#fanout.publish(
      new AudioFragment(this.#seq++, start, skip, packets, n, (this.#audioPts - skip) / 48),
    );
  }

  control(message: ControlMessage): number {
    return this.#closed ? 0 : this.#fanout.broadcast(message);
  }

  /**
   * Attaches a media client: it receives the stream from the latest keyframe; the newest client holds
   * the microphone (its upstream audio goes to the engine). Returns null when the client was refused.
   */
  attach(client: MediaClient): AttachedClient | null {
    if (this.#closed || !this.#config || !this.#fanout.add(client, this.#config.timelineMs())) return null;
    if (client.video === false) {
      for (const text of this.#latest.values()) {
        this.#fanout.sendTo(client, text);
      }
    }
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
    if (this.#closed || client !== this.#micOwner) return;
    if (data.length === 0 || data.length % 2 !== 0 || data.length > MAX_UPSTREAM_FRAME) {
      this.#fanout.remove(client);
      client.close(MEDIA_CLOSE.BAD_FRAME.code, MEDIA_CLOSE.BAD_FRAME.reason);
      return;
    }
    this.#hooks.upstream(data);
  }

  close(failed: string | null): Promise<void> {
    if (this.#closed) return Promise.resolve();
    this.#closed = true;
    clearTimeout(this.#audioFlushTimer);
    if (failed) {
      this.#fanout.broadcast({ type: "ended", reason: failed });
      this.#fanout.closeAll(MEDIA_CLOSE.MEDIA_FAILED.code, MEDIA_CLOSE.MEDIA_FAILED.reason);
    } else {
      this.#fanout.broadcast({ type: "ended", reason: "session_ended" });
      this.#fanout.closeAll(MEDIA_CLOSE.SESSION_ENDED.code, MEDIA_CLOSE.SESSION_ENDED.reason);
    }
    return Promise.resolve();
  }

  stats(): TransportStats {
    return { bytesSent: this.#fanout.bytesSent, slowClientsClosed: this.#fanout.slowClosed };
  }
}
