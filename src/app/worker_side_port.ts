/**
 * The worker side as the composition root sees it: what `compose.ts` reads of the session worker, its
 * runtime and its media plane once `worker_side.ts` has built them. `compose.ts` loads `worker_side.ts`
 * with `await import()` only on the roles that run sessions (`SVC_ROLE` all or worker), and names its
 * parts through these interfaces alone, so an `api` process loads nothing of the runtime, the bridges or
 * the media plane (`tests/architecture/module_graph_test.ts` checks it on `main.ts`).
 *
 * The classes behind them (`SessionWorker`, `SessionRuntime`, `MediaPlane`) have these members and more:
 * a test or bench that needs the rest casts (`service.runtime as SessionRuntime`).
 *
 * @module
 */
import type { WorkerPort } from "../fleet/worker_port.ts";
import type { AvatarCatalog } from "../vocabulary/avatar_catalog.ts";
import type { TransportKind, TransportSockets } from "../vocabulary/transports.ts";
import type { WorkerLoops } from "./lifecycle.ts";

/** The session worker. */
export interface ComposedWorker extends WorkerPort, WorkerLoops {
  /** The provider type and transport of each session running here now (the telemetry's gauges). */
  liveKinds(): Iterable<{ providerType: string; transport: string }>;
  /** Stops its loops and waits for its background work (after the runtime's shutdown). */
  close(): Promise<void>;
}

/** The session runtime (the live sessions of this process). */
export interface ComposedRuntime {
  /** Live sessions. */
  readonly size: number;
  has(sessionId: string): boolean;
  /** Clients connected to a live session's media. */
  clientCount(sessionId: string): number;
  /** Tears every live session down (process stop). */
  shutdown(): Promise<void>;
}

/** The media plane. */
export interface ComposedMedia {
  /** Renders in progress. */
  readonly active: number;
  /** Configured number of concurrent renders. */
  readonly capacity: number;
  /** Whether a transport is served here (one that needs a media server has it configured). */
  serves(kind: TransportKind): boolean;
  /** Changes the origin media URLs are built from (when the port is only known after listening). */
  setPublicUrl(url: string): void;
}

/** What the worker side hands the composition root. */
export interface WorkerSide {
  worker: ComposedWorker;
  runtime: ComposedRuntime;
  media: ComposedMedia | null;
  /** The client sockets of the transports served here (none without a media plane). */
  sockets?: readonly TransportSockets[];
  /** The media plane's avatar catalog. */
  catalog?: AvatarCatalog;
  /** The avatars' art documents a video-free client draws (none without a media plane). */
  art?: (avatarId: string) => object | null;
  /** A project avatar's art document for a session running it here, in the token's project (else null). */
  projectArt?: (projectId: string, sessionId: string, avatarId: string) => object | null;
}

declare const opaque: unique symbol;
/**
 * Overrides of the worker side (tests, benches: bridges, a media plane or factory, renderer options), made
 * and type-checked by `workerOverrides()` of `worker_side.ts`; opaque to the composition root.
 */
export type WorkerOverrides = { readonly [opaque]: "WorkerOverrides" };
