/**
 * The media plane of one service process: the renderer shared by every session, the render slots
 * (capacity), the session factory the runtime calls, the SFU connection of the `webrtc_sfu` transport,
 * the lookup the media routes use, and each session's connection metadata (`stream_metadata`).
 *
 * Public surface (what the rest of the service uses): {@link MediaPlaneInfo} (capacity, whether the SFU is
 * configured, a session's endpoints) for the session worker, {@link MediaPlane.factory} (a
 * `SessionMediaFactory`) for the runtime, and {@link MediaPlane.get} for the media routes.
 *
 * @module
 */
import { TOKEN_TTL_MS } from "../auth/tokens.ts";
import { type Clock, systemClock } from "../clock.ts";
import type { MediaConfig, SfuConfig } from "../config.ts";
import { ApiError } from "../errors.ts";
import type { StreamEndpoints } from "../vocabulary/schemas.ts";
import type { Logger } from "../log.ts";
import type { SessionMediaFactory } from "../worker/session_runtime.ts";
import type { TransportKind } from "../vocabulary/transports.ts";
import { loadArtBank } from "./art_bank.ts";
import { CATALOG, type Catalog } from "./catalog.ts";
import { checkFfmpeg } from "./ffmpeg.ts";
import { FrameCache } from "./frame_cache.ts";
import { ReferenceRenderer } from "./reference_renderer.ts";
import type { Renderer } from "./renderer.ts";
import { AvatarSessionMedia, type MediaObserver } from "./session_media.ts";
import type { TransportFactory } from "./transports/transport.ts";
import { JanusSfu } from "./transports/webrtc_sfu/sfu.ts";
import { WebRtcSfuTransport } from "./transports/webrtc_sfu/transport.ts";
import { iceServersFor } from "./transports/webrtc_sfu/turn.ts";
import type { FanoutLimits } from "./transports/ws_fmp4/fanout.ts";
import { WsFmp4Transport } from "./transports/ws_fmp4/transport.ts";

/** Path of the media WebSocket (`websocket_fmp4`); `{session_id}` is the session's id. */
export const MEDIA_PATH = "/media/v0/sessions/{session_id}";
/** Path of the SFU signalling WebSocket (`webrtc_sfu`, the session's `sfu_endpoint`). */
export const SFU_PATH = "/sfu/v0/sessions/{session_id}";

/** Default per-client limits. */
export const DEFAULT_LIMITS: FanoutLimits = { maxBufferedBytes: 1024 * 1024, maxClients: 4 };

/** x264 constant rate factor (quality) of the reference encoder settings. */
export const VIDEO_CRF = 28;
/** Opus bitrate of the reference encoder settings. */
export const AUDIO_BITRATE = 32_000;

/** What the session worker needs to know of the media plane. */
export interface MediaPlaneInfo {
  /** Whether a render slot is free now (a cheap early check; the factory enforces the limit). */
  hasCapacity(): boolean;
  /** Whether the `webrtc_sfu` transport is available (an SFU is configured). */
  readonly sfuConfigured: boolean;
  /**
   * The connection metadata of a session running here: `media_url` (fMP4), or `sfu_endpoint` and
   * `ice_servers` with TURN credentials minted now for the client token's lifetime (webrtc_sfu).
   */
  endpoints(sessionId: string, transport: TransportKind): Promise<StreamEndpoints>;
}

/** Options of {@link MediaPlane.create}. */
export interface MediaPlaneOptions {
  config: MediaConfig;
  /** The SFU of the `webrtc_sfu` transport (none: only `websocket_fmp4`). */
  sfu?: SfuConfig | null;
  /** Public origin of the service (http or https), for media URLs. */
  publicUrl: string;
  logger: Logger;
  /** Clock of TURN credential expiries (default: the wall clock). */
  clock?: Clock;
  /** A renderer to use instead of the reference renderer. */
  renderer?: Renderer;
  catalog?: Catalog;
  limits?: Partial<FanoutLimits>;
  /** Measurement hooks (the bench). */
  observer?: MediaObserver;
}

interface Live {
  projectId: string;
  media: AvatarSessionMedia;
}

/** The media plane of this process. */
export class MediaPlane implements MediaPlaneInfo {
  readonly #live = new Map<string, Live>();
  #active = 0;
  #publicUrl: string;
  /** The SFU connection (null without SFU configuration). */
  readonly sfu: JanusSfu | null;

  private constructor(
    readonly options: MediaPlaneOptions,
    readonly renderer: Renderer,
    readonly catalog: Catalog,
    readonly ffmpegVersion: string,
  ) {
    this.#publicUrl = options.publicUrl;
    const sfu = options.sfu;
    this.sfu = sfu?.adminSecret ? new JanusSfu(sfu, options.logger) : null;
  }

  get sfuConfigured(): boolean {
    return this.sfu !== null;
  }

  /** Changes the origin media URLs are built from (when the port is only known after listening). */
  setPublicUrl(url: string): void {
    this.#publicUrl = url.replace(/\/+$/, "");
  }

  /**
   * Checks ffmpeg (throws `FfmpegUnavailableError`, one line, when it is missing), rasterises the
   * catalog's art once and builds the renderer.
   */
  static async create(options: MediaPlaneOptions): Promise<MediaPlane> {
    const version = await checkFfmpeg(options.config.ffmpegPath);
    const catalog = options.catalog ?? CATALOG;
    let renderer = options.renderer;
    if (!renderer) {
      const { width, height, fps, frameCacheBytes } = options.config;
      const art = await loadArtBank(catalog, width, height);
      renderer = new ReferenceRenderer(art, fps, new FrameCache(frameCacheBytes));
    }
    return new MediaPlane(options, renderer, catalog, version);
  }

  /** Renders in progress. */
  get active(): number {
    return this.#active;
  }

  /** Configured number of concurrent renders. */
  get capacity(): number {
    return this.options.config.capacity;
  }

  hasCapacity(): boolean {
    return this.#active < this.capacity;
  }

  /** The media WebSocket URL of a session (`websocket_fmp4`). */
  urlFor(sessionId: string): string {
    const base = this.#publicUrl.replace(/^http/, "ws");
    return base + MEDIA_PATH.replace("{session_id}", sessionId);
  }

  /** The SFU signalling URL of a session (`webrtc_sfu`): its `sfu_endpoint`. */
  sfuUrlFor(sessionId: string): string {
    const base = (this.options.sfu?.publicUrl ?? this.#publicUrl).replace(/^http/, "ws");
    return base + SFU_PATH.replace("{session_id}", sessionId);
  }

  async endpoints(sessionId: string, transport: TransportKind): Promise<StreamEndpoints> {
    if (transport !== "webrtc_sfu" || !this.sfu) {
      return { media_url: this.urlFor(sessionId), sfu_endpoint: null, ice_servers: [] };
    }
    const expiresAt = (this.options.clock ?? systemClock).now() + TOKEN_TTL_MS;
    return {
      media_url: null,
      sfu_endpoint: this.sfuUrlFor(sessionId),
      ice_servers: await iceServersFor(this.sfu.config, sessionId, expiresAt),
    };
  }

  /** Closes the SFU connection (process shutdown; sessions are ended before). */
  async close(): Promise<void> {
    await this.sfu?.close();
  }

  /** The media of a session running here (with its project), if any. */
  get(sessionId: string): Live | undefined {
    return this.#live.get(sessionId);
  }

  /** The runtime's factory: takes a render slot and starts the session's media plane. */
  readonly factory: SessionMediaFactory = async (s) => {
    if (this.#active >= this.capacity) throw new ApiError("SVC_RENDER_CAPACITY");
    this.#active++;
    let released = false;
    const release = () => {
      if (released) return;
      released = true;
      this.#active--;
      this.#live.delete(s.sessionId);
    };
    const { config, logger } = this.options;
    const limits = { ...DEFAULT_LIMITS, ...this.options.limits };
    let transport: TransportFactory;
    if (s.transport === "webrtc_sfu") {
      const sfu = this.sfu;
      if (!sfu) {
        release();
        throw new ApiError("SVC_SFU_NOT_CONFIGURED");
      }
      transport = (hooks) =>
        WebRtcSfuTransport.open({
          sfu,
          sessionId: s.sessionId,
          format: this.renderer.format,
          inputSampleRate: s.connection.inputSampleRate,
          maxClients: limits.maxClients,
          logger,
          hooks,
        });
    } else {
      transport = (hooks) => Promise.resolve(new WsFmp4Transport(s.sessionId, limits, hooks));
    }
    const media = await AvatarSessionMedia.start({
      sessionId: s.sessionId,
      avatarId: s.avatarId ?? this.catalog.defaultAvatarId,
      bgId: s.bgId ?? this.catalog.defaultBgId,
      renderer: this.renderer,
      connection: s.connection,
      ffmpegPath: config.ffmpegPath,
      crf: VIDEO_CRF,
      audioBitrate: AUDIO_BITRATE,
      firstFrameTimeoutMs: config.firstFrameTimeoutMs,
      lipSync: { holdMs: config.lipSyncHoldMs },
      transport,
      logger,
      fail: s.fail,
      clientsChanged: s.clientsChanged,
      onStopped: release,
      observer: this.options.observer,
    });
    this.#live.set(s.sessionId, { projectId: s.projectId, media });
    return media;
  };
}
