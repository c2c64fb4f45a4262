/**
 * The public types of a session's media ({@link import("../session_media.ts").AvatarSessionMedia}): what it
 * is built from, its measurement hooks and its counters. Beside the class, not in it, as mediasoup keeps
 * its `*Types.ts` (/work/shared/reference/anchors.md A5b).
 *
 * @module
 */
import type { ArtDocument, MouthPlace } from "../art/document.ts";
import type { EncoderSpares } from "../encoder_spares.ts";
import type { Logger } from "../../log.ts";
import type { SessionMetrics } from "../../metrics/session_metrics.ts";
import type { ProviderConnection } from "../../providers/types.ts";
import type { EndReason } from "../../vocabulary/end_reasons.ts";
import type { G2p } from "../lipsync/g2p.ts";
import type { SessionLipSyncStats } from "../lipsync/session_face.ts";
import type { OpusBackend } from "../opus_encoder.ts";
import type { Renderer } from "../renderer.ts";
import type { SharedTimer } from "../shared_timer.ts";
import type { TransportFactory } from "../transports/transport.ts";
import type { SpeechObserver } from "./audio_playout.ts";

/** What a session's media plane needs. */
export interface SessionMediaDeps {
  sessionId: string;
  avatarId: string;
  bgId: string;
  /** The avatar's art document when it is small enough to go in a video-free client's hello (`inlineArt`). */
  art?: ArtDocument | null;
  /** Where the art draws the mouth, for a video client's hello (`mouthPlace`). */
  mouth?: MouthPlace | null;
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
   * Whether the transport paces its sending to the media clock (its registry entry's `paced`; default
   * false): the audio playout's lead follows it.
   */
  paced?: boolean;
  /**
   * The video stream's configuration (the AVCDecoderConfigurationRecord) that an earlier session's encoder
   * gave for the same settings, shared by a plane's sessions: a session that starts without a video client
   * then starts no encoder at all (the first session of a process checks the encoder and fills it).
   */
  videoConfigCache?: Map<string, Uint8Array>;
  /** Video encoders the plane starts ahead, so a video client does not wait for one (`encoder_spares.ts`). */
  encoderSpares?: EncoderSpares;
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
   * how much of a response's start is held back for the look-ahead (ms, 0–`LOOKAHEAD_MS`, default 0).
   */
  lipSync?: { g2p?: G2p | null; lang?: string; holdMs?: number };
  /**
   * The session's figures: where each response's first sample lands on the media clock, the user's audio,
   * the players' reports. Its clock must be `performance.now()` (the media clock's).
   */
  metrics?: SessionMetrics;
}

/** Hooks for measurements (the bench); never needed in production. */
export interface MediaObserver extends SpeechObserver {
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
  /**
   * Silent blocks taken back unsent over a paced transport: a response's first speech took their place
   * (`audio_playout.ts`).
   */
  audioRetracted: number;
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
