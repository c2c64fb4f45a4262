/**
 * The seam between a session's media pipeline and the way its media reaches the browser.
 *
 * The pipeline (`../session_media.ts` and its parts in `../session/`: media clock, speech playout, renderer,
 * the two encoders) emits **encoded** media through its fan-out: H.264 access units and Opus packets, each
 * stamped on the session's timeline. A transport takes them to the session's clients and brings the user's microphone back as PCM:
 *
 * | transport | downstream | upstream | clients |
 * |---|---|---|---|
 * | `websocket_fmp4` (`ws_fmp4/`) | fMP4 fragments over the media WebSocket | PCM16 frames on the same socket | media WebSockets |
 * | `webrtc_sfu` (`webrtc_sfu/`) | RTP to a Janus Streaming mountpoint, WebRTC to the browser | Opus RTP forwarded by a Janus VideoRoom, decoded to PCM | subscribers whose PeerConnection is up |
 *
 * A transport reports how many clients are connected (speech waits for one; lifetimes count them), and
 * may fail on its own (its media server is gone), which ends the session.
 *
 * @module
 */
import type { EndReason } from "../../vocabulary/end_reasons.ts";
import type { TransportKind } from "../../vocabulary/transports.ts";
import type { ArtDocument, MouthPlace } from "../art/document.ts";
import type { OpusHead } from "../ogg_opus.ts";

/** The stream's codec configuration, known once both encoders have written their headers. */
export interface StreamConfig {
  width: number;
  height: number;
  fps: number;
  /** H.264 AVCDecoderConfigurationRecord (SPS and PPS inside). */
  avcC: Uint8Array;
  /** Opus identification header of the audio track (mono, 48 kHz). */
  opus: OpusHead;
  /** Sample rate the engine takes the user's audio at (PCM16 mono). */
  inputSampleRate: number;
  /** Milliseconds since the start of the session's timeline (the media clock), now. */
  timelineMs(): number;
  /**
   * What a client that draws the avatar itself needs: the art's ids, the seed of its motion, and the art
   * document itself when it is small enough to go in the hello (`inlineArt`); and where the art draws the
   * mouth, for a video client that reads it from the frames it shows (`mouthPlace`).
   */
  avatar: {
    avatarId: string;
    bgId: string;
    seed: number;
    art?: ArtDocument | null;
    mouth?: MouthPlace | null;
  };
}

/** One encoded video frame. */
export interface EncodedVideoFrame {
  /** Frame index on the timeline (frame `k` is due at `k / fps` s). */
  index: number;
  /** Presentation time, 90 kHz ticks from the timeline's start. */
  pts: number;
  /** Duration, 90 kHz ticks. */
  duration: number;
  /** One H.264 access unit in AVCC form (4-byte big-endian NAL lengths), no parameter sets in band. */
  data: Uint8Array;
  /** An IDR frame (a client can start decoding here). */
  key: boolean;
}

/** One encoded audio packet. */
export interface EncodedAudioPacket {
  /** Position in the encoder's output, 48 kHz samples (Opus pre-skip included). */
  pts: number;
  /** Duration, 48 kHz samples. */
  samples: number;
  /** One Opus packet. */
  data: Uint8Array;
  /**
   * A repeat of the settled silent packet (digital silence the encoder did not code): a transport may send an
   * Opus DTX frame instead (`dtxFrame`, `opus_encoder.ts`).
   */
  repeat?: boolean;
}

/** Control messages for clients (both transports deliver them as JSON text). */
export type ControlMessage =
  | { type: "interrupt"; response_id: string; t_ms?: number }
  | { type: "transcript"; role: "user" | "agent"; turn_id: string; text: string; final: boolean }
  | { type: "tool_call"; call_id: string; name: string; arguments: Record<string, unknown> };

/**
 * The animation track of video-free clients (docs/media-plane.md), every message stamped with `t_ms`, the
 * instant on the session audio's timeline (ms) it goes with.
 */
export type AnimationMessage =
  /** The dominant viseme changed (a fixed interface). */
  | { type: "viseme"; t_ms: number; viseme: string }
  /** The face's state, eyes or look changed. */
  | { type: "face"; t_ms: number; state: string; eyes: string; look: string }
  /** The head's offset on the 512×512 view box, px (5 a second while it moves). */
  | { type: "head"; t_ms: number; dx: number; dy: number };

/** How a transport failure ends the session. */
export interface TransportFailure {
  /** Short machine reason (logs, the `ended` message). */
  reason: string;
  /** End reason recorded for the session. */
  endReason: EndReason;
  /** The session's warning (provider-agnostic). */
  warning: string;
}

/** What the pipeline gives a transport. */
export interface TransportHooks {
  /** Upstream microphone audio: PCM16LE mono at the engine's input rate, 10–100 ms per call. */
  upstream(pcm: Uint8Array): void;
  /** The number of connected clients changed. */
  clientsChanged(count: number): void;
  /** The transport failed on its own; the session ends with this outcome. */
  fail(failure: TransportFailure): void;
}

/** Counters of a transport. */
export interface TransportStats {
  /** Media bytes sent towards clients (or the SFU). */
  bytesSent: number;
  /** Clients closed because they fell behind. */
  slowClientsClosed: number;
}

/** A consumer of a session's media (a transport, a recorder, …): what the session's fan-out (`session/fanout.ts`) feeds. Every member is the subscriber's own. */
export interface MediaSubscriber {
  /** Clients this subscriber holds now (speech waits for one across all subscribers). */
  readonly clients: number;
  /** Clients that want the video (the video pipeline exists only while some subscriber has one). */
  readonly videoClients: number;
  /** Video-free clients (they get the animation track). */
  readonly animationClients: number;
  /** The stream's codec configuration: once before any media, again when a restarted encoder's differs. */
  configure(config: StreamConfig): void;
  /** An encoded video frame, as soon as it is out of the encoder. */
  video(frame: EncodedVideoFrame): void;
  /** An encoded audio packet, as soon as it is out of the encoder (it may be ahead of the clock). */
  audio(packet: EncodedAudioPacket): void;
  /**
   * A subscriber that holds audio packets before sending them (a paced one): the `pts` of the first packet it
   * holds unsent — every later one it was given is unsent too — or `Infinity` when it holds none. Without
   * it, packets are taken to leave at once and none can be taken back.
   */
  audioUnsentFrom?(): number;
  /** Drops the audio packets held unsent from `pts` on (they are taken back: see {@link audioUnsentFrom}). */
  retractAudio?(pts: number): void;
  /** An animation message (the animation track). */
  animation(message: AnimationMessage): void;
  /** The video encoder stopped: frames kept for joiners are dropped. */
  videoStopped(): void;
  /** A control message for every client; returns how many clients it was sent to. */
  control(message: ControlMessage): number;
}

/** A session's transport: a media subscriber with a kind, its clients' sockets and its own end. */
export interface MediaTransport extends MediaSubscriber {
  readonly kind: TransportKind;
  /**
   * What the transport adds to a `clock_sync` answer (`player_messages.ts`): the SFU transport says how
   * long after being made its frames and sounds leave it (`send_ms`), which a WebRTC player cannot see.
   */
  clockSyncExtras?(): Record<string, unknown>;
  /**
   * Ends delivery: clients are told why (`failed` null: the session ended) and closed; the transport's
   * resources (sockets, SFU objects) are released.
   */
  close(failed: string | null): Promise<void>;
  stats(): TransportStats;
}

/**
 * Opens a session's transport. Throws an {@link import("../../errors.ts").ApiError} when it cannot be set
 * up (e.g. `SVC_SFU_CONNECTION_FAILED`); nothing is left open then.
 */
export type TransportFactory = (hooks: TransportHooks) => Promise<MediaTransport>;
