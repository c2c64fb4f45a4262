/**
 * The media plane of one service process: the renderer shared by every session, the render slots
 * (capacity), the session factory the runtime calls, and the lookup the media WebSocket uses.
 *
 * @module
 */
import type { MediaConfig } from "../config.ts";
import { ApiError } from "../errors.ts";
import type { Logger } from "../log.ts";
import type { SessionMediaFactory } from "../runtime/session_runtime.ts";
import { loadArtBank } from "./art_bank.ts";
import { CATALOG, type Catalog } from "./catalog.ts";
import type { FanoutLimits } from "./fanout.ts";
import { checkFfmpeg } from "./ffmpeg.ts";
import { FrameCache } from "./frame_cache.ts";
import { ReferenceRenderer } from "./reference_renderer.ts";
import type { Renderer } from "./renderer.ts";
import { AvatarSessionMedia, type MediaObserver } from "./session_media.ts";

/** Path of the media WebSocket; `{session_id}` is the session's id. */
export const MEDIA_PATH = "/media/v0/sessions/{session_id}";

/** Default per-client limits. */
export const DEFAULT_LIMITS: FanoutLimits = { maxBufferedBytes: 1024 * 1024, maxClients: 4 };

/** x264 constant rate factor (quality) of the reference encoder settings. */
export const VIDEO_CRF = 28;
/** Opus bitrate of the reference encoder settings. */
export const AUDIO_BITRATE = 32_000;

/** What the session service needs to know of the media plane. */
export interface MediaPlaneInfo {
  /** Whether a render slot is free now (a cheap early check; the factory enforces the limit). */
  hasCapacity(): boolean;
  /** The media WebSocket URL of a session. */
  urlFor(sessionId: string): string;
}

/** Options of {@link MediaPlane.create}. */
export interface MediaPlaneOptions {
  config: MediaConfig;
  /** Public origin of the service (http or https), for media URLs. */
  publicUrl: string;
  logger: Logger;
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

  private constructor(
    readonly options: MediaPlaneOptions,
    readonly renderer: Renderer,
    readonly catalog: Catalog,
    readonly ffmpegVersion: string,
  ) {
    this.#publicUrl = options.publicUrl;
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

  urlFor(sessionId: string): string {
    const base = this.#publicUrl.replace(/^http/, "ws");
    return base + MEDIA_PATH.replace("{session_id}", sessionId);
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
      limits: { ...DEFAULT_LIMITS, ...this.options.limits },
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
