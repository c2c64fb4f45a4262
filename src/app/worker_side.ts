/**
 * The worker side of a process (`SVC_ROLE` all or worker), assembled for the composition root: the media
 * plane, the bridges, the session runtime and the session worker, with the client sockets of the
 * transports served. `compose.ts` loads this module with `await import()` on the roles that run sessions
 * only, and reads what it builds through `worker_side_port.ts`: an `api` process never loads it.
 *
 * @module
 */
import type { Clock } from "../clock.ts";
import type { Config } from "../config.ts";
import type { Logger } from "../log.ts";
import { MediaPlane, type MediaPlaneOptions } from "../media/media_plane.ts";
import { artDocument } from "../media/art/document.ts";
import { projectAvatarLoader } from "../media/art/project_avatars.ts";
import { createBridges } from "../providers/bridges.ts";
import { InputTurns } from "../providers/wire/input_turns.ts";
import type { ProviderBridge } from "../providers/types.ts";
import type { ProviderType } from "../providers/definitions/provider_types.ts";
import { type SessionMediaFactory, SessionRuntime } from "../worker/session_runtime.ts";
import { SessionWorker } from "../worker/session_worker.ts";
import type { EndJournalOptions } from "../worker/end_journal.ts";
import { sfuTrust } from "./outbound.ts";
import type { WorkerOverrides, WorkerSide } from "./worker_side_port.ts";

/** Overrides of the worker side (tests and benches). */
export interface WorkerSideOverrides {
  /** Overrides of the media plane's options. */
  media?: Partial<Pick<MediaPlaneOptions, "renderer" | "limits" | "observer">>;
  /** A media plane built by the caller (tests share one); not closed by the service. */
  mediaPlane?: MediaPlane;
  /** A media factory used instead of a media plane (tests and the soak); no ffmpeg is started then. */
  mediaFactory?: SessionMediaFactory;
  /** Bridges replacing the configured ones. */
  bridges?: Partial<Record<ProviderType, ProviderBridge>>;
}

/**
 * Overrides of the worker side, typed here, opaque to `compose()`'s options (`worker`).
 *
 * @example A process whose sessions use a test media factory
 * ```ts ignore
 * import { compose } from "./compose.ts";
 * import { workerOverrides } from "./worker_side.ts";
 * const service = await compose(config, { worker: workerOverrides({ mediaFactory }) });
 * ```
 */
export function workerOverrides(overrides: WorkerSideOverrides): WorkerOverrides {
  return overrides as unknown as WorkerOverrides;
}

function overridesOf(o: WorkerOverrides | undefined): WorkerSideOverrides {
  return (o ?? {}) as unknown as WorkerSideOverrides;
}

/** What {@link startMediaPlane} takes. */
export interface MediaPlaneArgs {
  config: Config;
  logger: Logger;
  clock: Clock;
  overrides?: WorkerOverrides;
}

/**
 * The media plane this process renders with: its own (ffmpeg checked first, so that a missing one stops
 * start-up before anything is opened; `owned`: closed with the process), the caller's, or none (media
 * disabled, or a media factory instead).
 */
export async function startMediaPlane(
  a: MediaPlaneArgs,
): Promise<{ plane: MediaPlane | null; owned: boolean }> {
  const o = overridesOf(a.overrides);
  if (!a.config.media.enabled || o.mediaFactory || o.mediaPlane) {
    return { plane: o.mediaPlane ?? null, owned: false };
  }
  const plane = await MediaPlane.create({
    config: a.config.media,
    transports: a.config,
    sfuCaCerts: await sfuTrust(a.config),
    publicUrl: a.config.publicUrl,
    logger: a.logger,
    clock: a.clock,
    ...o.media,
  });
  a.logger.info("media plane ready", {
    ffmpeg: plane.ffmpegVersion,
    opus: `${plane.audioEncoder.version} (${plane.audioEncoder.backend}${
      plane.audioEncoder.why ? `: ${plane.audioEncoder.why}` : ""
    })`,
    format: plane.renderer.format,
    capacity: plane.capacity,
  });
  return { plane, owned: true };
}

/** What {@link createWorkerSide} takes. */
export interface WorkerSideArgs {
  kv: Deno.Kv;
  clock: Clock;
  config: Config;
  logger: Logger;
  instanceId: string;
  /** The plane of {@link startMediaPlane}. */
  media: MediaPlane | null;
  /** CA certificates trusted for engine connections. */
  engineCa: readonly string[];
  overrides?: WorkerOverrides;
  teardownTimeoutMs?: number;
  endRecordWaitMs?: number;
  journal?: EndJournalOptions;
}

/**
 * The bridges (each provider type's bridge module, loaded by its name), the session runtime and the
 * session worker over the media plane.
 */
export async function createWorkerSide(a: WorkerSideArgs): Promise<WorkerSide> {
  const o = overridesOf(a.overrides);
  const { kv, clock, config, logger, instanceId, media } = a;
  // Sessions may run the project avatars of their project (read from KV when first needed).
  media?.useProjectAvatars(projectAvatarLoader(kv));
  const runtime = new SessionRuntime({
    bridges: {
      // One fairness gate of engine input for the whole process: every session's engine socket reads through it.
      ...await createBridges({ config, logger, clock, caCerts: a.engineCa, inputTurns: new InputTurns() }),
      ...o.bridges,
    },
    logger,
    media: o.mediaFactory ?? media?.factory,
    clock,
  });
  const worker = new SessionWorker({
    kv,
    clock,
    config,
    logger,
    instanceId,
    runtime,
    media: media ?? undefined,
    teardownTimeoutMs: a.teardownTimeoutMs,
    endRecordWaitMs: a.endRecordWaitMs,
    journal: a.journal,
  });
  return {
    worker,
    runtime,
    media,
    sockets: media?.sockets(),
    catalog: media?.catalog,
    art: media ? (avatarId) => artDocument(media.catalog, avatarId) : undefined,
    projectArt: media ? (pid, sid, avatarId) => media.projectArt(pid, sid, avatarId) : undefined,
  };
}
