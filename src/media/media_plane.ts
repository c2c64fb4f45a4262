/**
 * The media plane of one service process: the renderer shared by every session, the render slots
 * (capacity), the session factory the runtime calls, the media servers of the transports that need one
 * (the SFU of `webrtc_sfu`), the client sockets of the sessions running here, and each session's
 * connection metadata (`stream_metadata`). What differs by transport is read from the transport registry
 * (`transports/registry.ts`): this module names no transport.
 *
 * Public surface (what the rest of the service uses): the session worker's `MediaPlaneInfo` port (capacity, the transports
 * served, a session's endpoints) for the session worker, {@link MediaPlane.factory} (a
 * `SessionMediaFactory`) for the runtime, {@link MediaPlane.sockets} for the app's socket routes.
 *
 * @module
 */
import { SharedTimer } from "./shared_timer.ts";
import { systemClock } from "../clock.ts";
import type { MediaConfig } from "../config.ts";
import { ApiError } from "../errors.ts";
import type { StreamEndpoints } from "../vocabulary/schemas.ts";
import type { Logger } from "../log.ts";
import type { SessionMediaFactory } from "../worker/session_runtime.ts";
import type { MediaPlaneInfo } from "../worker/session_worker.ts";
import {
  emptyEndpoints,
  transportEntry,
  type TransportKind,
  type TransportSockets,
} from "../vocabulary/transports.ts";
import { loadArtBank } from "./art_bank.ts";
import {
  type ArtDocument,
  artDocument,
  artDocumentOfLayers,
  inlineArt,
  type MouthPlace,
  mouthPlace,
} from "./art/document.ts";
import type { ProjectAvatarLoader } from "./art/project_avatars.ts";
import { ProjectAvatarLeases } from "./art/project_avatar_leases.ts";
import { AVATAR_ID_PATTERN } from "../ids.ts";
import { CATALOG, type Catalog } from "./catalog.ts";
import { checkFfmpeg, videoEncoderArgs } from "./ffmpeg.ts";
import { EncoderSpares } from "./encoder_spares.ts";
import { FrameCache } from "./frame_cache.ts";
import { opusBackend } from "./opus_encoder.ts";
import { ReferenceRenderer } from "./reference_renderer.ts";
import type { Renderer } from "./renderer.ts";
import { AvatarSessionMedia, type MediaObserver } from "./session_media.ts";
import { type MediaServer, TRANSPORT_IMPLEMENTATIONS, type TransportConfig } from "./transports/registry.ts";
import type { FanoutLimits } from "./transports/ws_fmp4/fanout.ts";
import type { Clock } from "../clock.ts";

/** Default per-client limits. */
export const DEFAULT_LIMITS: FanoutLimits = { maxBufferedBytes: 1024 * 1024, maxClients: 4 };

/** x264 constant rate factor (quality) of the reference encoder settings. */
export const VIDEO_CRF = 28;
/**
 * A project avatar no session of this process holds stays prepared this long (ms): the next session with it
 * starts as fast as with a stock avatar (it had to be read and rasterised again: 70–100 ms of its create).
 * What it keeps is the avatar's sprites, as while a session holds it.
 */
export const PROJECT_AVATAR_LINGER_MS = 60_000;
/**
 * Opus bitrate of the in-process audio encoder: 24 kb/s keeps a video-free client's whole downstream
 * (audio, framing, animation) under 40 kbit/s (docs/media-plane.md).
 */
export const AUDIO_BITRATE = 24_000;

/** Options of {@link MediaPlane.create}. */
export interface MediaPlaneOptions {
  config: MediaConfig;
  /** The transports' settings (the SFU of `webrtc_sfu`; none: only `websocket_fmp4`). */
  transports?: TransportConfig;
  /** CA certificates (PEM) trusted for a `wss://` Janus beside the default roots (`SVC_SFU_CA_FILE`). */
  sfuCaCerts?: readonly string[];
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
  /** Frames between keyframes (default: the frame rate, one a second; tests lengthen it). */
  gopFrames?: number;
}

/** What the hellos of an avatar's clients carry of its art (`MediaPlane#helloArt`). */
interface HelloArt {
  /** The document, for video-free clients; null when too big for a hello (they fetch `art_path`). */
  art: ArtDocument | null;
  /** Where the mouth is, for video clients. */
  mouth: MouthPlace | null;
}

interface Live {
  projectId: string;
  avatarId: string;
  media: AvatarSessionMedia;
}

/** The media plane of this process. */
export class MediaPlane implements MediaPlaneInfo {
  readonly #live = new Map<string, Live>();
  /** The video stream configuration per encoder settings (sessions without a video client start no encoder). */
  readonly #videoConfigs = new Map<string, Uint8Array>();
  /** The one timer the clocks of this plane's sessions wake up on (`shared_timer.ts`). */
  readonly #wakeUps = new SharedTimer();
  /** What the hellos of a stock avatar's clients carry of its art (`#helloArt`), built once per avatar. */
  readonly #stockArt = new Map<string, HelloArt>();
  #active = 0;
  #publicUrl: string;
  /** Where project avatars are read from (none: stock avatars only). */
  #projectAvatars: ProjectAvatarLoader | null = null;
  /** The project avatars this process's sessions hold, each prepared once (`art/project_avatar_leases.ts`). */
  readonly #projectLeases = new ProjectAvatarLeases({
    load: (projectId, avatarId) => this.#projectAvatars?.(projectId, avatarId) ?? Promise.resolve(null),
    prepare: async (avatarId, layers) => await this.renderer.prepare!(avatarId, layers),
    forget: (avatarId) => this.renderer.forget?.(avatarId),
    lingerMs: PROJECT_AVATAR_LINGER_MS,
  });
  /** Video encoders started ahead (`SVC_RENDER_ENCODER_SPARES`; null: none). */
  readonly #spares: EncoderSpares | null;
  /** The media servers of the transports that need one and have it configured. */
  readonly #servers = new Map<TransportKind, MediaServer>();

  private constructor(
    readonly options: MediaPlaneOptions,
    readonly renderer: Renderer,
    readonly catalog: Catalog,
    readonly ffmpegVersion: string,
    /** The libopus that encodes the sessions' audio ({@link opusBackend}). */
    readonly audioEncoder: { backend: "native" | "wasm"; version: string; why: string },
  ) {
    this.#publicUrl = options.publicUrl;
    const spares = options.config.encoderSpares ?? 0;
    this.#spares = spares > 0
      ? new EncoderSpares(
        options.config.ffmpegPath,
        videoEncoderArgs(renderer.format, VIDEO_CRF, options.gopFrames),
        spares,
      )
      : null;
    for (const [kind, implementation] of Object.entries(TRANSPORT_IMPLEMENTATIONS)) {
      const server = implementation.connect?.(options);
      if (server) this.#servers.set(kind as TransportKind, server);
    }
  }

  serves(kind: TransportKind): boolean {
    return !TRANSPORT_IMPLEMENTATIONS[kind].connect || this.#servers.has(kind);
  }

  /** The client sockets of the transports served here (the app registers one route per entry). */
  sockets(): TransportSockets[] {
    return (Object.keys(TRANSPORT_IMPLEMENTATIONS) as TransportKind[]).filter((k) => this.serves(k)).map((
      kind,
    ) => ({
      kind,
      find: (sessionId, projectId) => {
        const live = this.#live.get(sessionId);
        if (!live || live.projectId !== projectId) return null;
        return TRANSPORT_IMPLEMENTATIONS[kind].attach(live.media.transport, live.media.clientMessages);
      },
    }));
  }

  /** Lets sessions run project avatars (`av_…`), read by `loader` when a session first needs one. */
  useProjectAvatars(loader: ProjectAvatarLoader): void {
    this.#projectAvatars = loader;
  }

  /**
   * The art document of a project avatar for a client of a session running it here (null otherwise: an
   * avatar is served only to the sessions that run it, within the token's project).
   */
  projectArt(projectId: string, sessionId: string, avatarId: string): ArtDocument | null {
    const live = this.#live.get(sessionId);
    const layers = this.#projectLeases.layersOf(avatarId);
    if (!live || live.projectId !== projectId || live.avatarId !== avatarId || !layers) return null;
    return artDocumentOfLayers(this.catalog, avatarId, layers);
  }

  /**
   * Holds a project avatar for a session, rasterised for the renderer before its first session here opens
   * it (once, however many sessions start together).
   */
  async #holdProjectAvatar(projectId: string, avatarId: string): Promise<void> {
    const held = this.renderer.prepare ? await this.#projectLeases.acquire(projectId, avatarId) : false;
    if (!held) {
      throw new ApiError("SVC_RENDER_MISCONFIGURED", "avatar_config.avatar_id: no such project avatar here.");
    }
  }

  /**
   * What the hellos of `avatarId`'s clients carry of its art (held here): a video-free client's the document
   * itself unless it is too big for one (`inlineArt`), a video client's where the mouth is (`mouthPlace`). A
   * stock avatar's is built once per process, a project avatar's per session.
   */
  #helloArt(avatarId: string): HelloArt {
    const ofDoc = (doc: ArtDocument | null): HelloArt =>
      doc ? { art: inlineArt(doc), mouth: mouthPlace(doc) } : { art: null, mouth: null };
    if (AVATAR_ID_PATTERN.test(avatarId)) {
      const layers = this.#projectLeases.layersOf(avatarId);
      return ofDoc(layers ? artDocumentOfLayers(this.catalog, avatarId, layers) : null);
    }
    let held = this.#stockArt.get(avatarId);
    if (!held) this.#stockArt.set(avatarId, held = ofDoc(artDocument(this.catalog, avatarId)));
    return held;
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
    // `native` without the library stops start-up here, with the reason.
    const audioEncoder = opusBackend(options.config.opusEncoder ?? "auto");
    const catalog = options.catalog ?? CATALOG;
    let renderer = options.renderer;
    if (!renderer) {
      const { width, height, fps, frameCacheBytes } = options.config;
      const art = await loadArtBank(catalog, width, height);
      renderer = new ReferenceRenderer(art, fps, new FrameCache(frameCacheBytes));
    }
    return new MediaPlane(options, renderer, catalog, version, audioEncoder);
  }

  /** The video encoders started ahead (null: none kept). */
  get encoderSpares(): EncoderSpares | null {
    return this.#spares;
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

  async endpoints(sessionId: string, transport: TransportKind): Promise<StreamEndpoints> {
    // A transport not served here (its media server is gone from the configuration) answers with the
    // always-served one's endpoints, as a session of it would be reached.
    const kind = this.serves(transport)
      ? transport
      : (Object.keys(TRANSPORT_IMPLEMENTATIONS) as TransportKind[]).find((k) =>
        !transportEntry(k).unavailable
      );
    if (!kind) return emptyEndpoints();
    return await TRANSPORT_IMPLEMENTATIONS[kind].endpoints({
      server: this.#servers.get(kind) ?? null,
      sessionId,
      publicUrl: this.#publicUrl,
      options: this.options,
      clock: this.options.clock ?? systemClock,
    });
  }

  /** Closes the media servers' connections and stops the spare encoders (process shutdown; sessions are ended before). */
  async close(): Promise<void> {
    this.#projectLeases.close();
    await this.#spares?.close();
    for (const server of this.#servers.values()) await server.close();
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
    let holdsProjectAvatar = false;
    const release = () => {
      if (released) return;
      released = true;
      this.#active--;
      this.#live.delete(s.sessionId);
      // A project avatar no session here holds any more is let go (its sprites, its layers).
      if (holdsProjectAvatar) this.#projectLeases.release(avatarId);
    };
    const avatarId = s.avatarId ?? this.catalog.defaultAvatarId;
    const { config, logger } = this.options;
    const limits = { ...DEFAULT_LIMITS, ...this.options.limits };
    if (!this.serves(s.transport)) {
      release();
      throw new ApiError(transportEntry(s.transport).unavailable?.code ?? "SVC_SFU_NOT_CONFIGURED");
    }
    if (AVATAR_ID_PATTERN.test(avatarId)) {
      try {
        await this.#holdProjectAvatar(s.projectId, avatarId);
        holdsProjectAvatar = true;
      } catch (e) {
        release();
        throw e;
      }
    }
    const transport = TRANSPORT_IMPLEMENTATIONS[s.transport].open({
      server: this.#servers.get(s.transport) ?? null,
      sessionId: s.sessionId,
      format: this.renderer.format,
      inputSampleRate: s.connection.inputSampleRate,
      limits,
      logger,
    });
    const media = await AvatarSessionMedia.start({
      sessionId: s.sessionId,
      avatarId,
      bgId: s.bgId ?? this.catalog.defaultBgId,
      ...this.#helloArt(avatarId),
      renderer: this.renderer,
      connection: s.connection,
      ffmpegPath: config.ffmpegPath,
      crf: VIDEO_CRF,
      audioBitrate: AUDIO_BITRATE,
      audioEncoder: this.audioEncoder.backend,
      firstFrameTimeoutMs: config.firstFrameTimeoutMs,
      lipSync: { holdMs: config.lipSyncHoldMs },
      gopFrames: this.options.gopFrames,
      transport,
      paced: TRANSPORT_IMPLEMENTATIONS[s.transport].paced,
      videoConfigCache: this.#videoConfigs,
      encoderSpares: this.#spares ?? undefined,
      logger,
      fail: s.fail,
      clientsChanged: s.clientsChanged,
      onStopped: release,
      observer: this.options.observer,
      metrics: s.metrics,
      wakeUps: this.#wakeUps,
    });
    this.#live.set(s.sessionId, { projectId: s.projectId, avatarId, media });
    return media;
  };
}
