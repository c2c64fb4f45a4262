/**
 * The session host port: where the API side of the service (`src/sessions/service.ts`) starts, ends and
 * reaches the sessions it creates, without running them itself.
 *
 * Two adapters implement it: in-process (`SVC_ROLE=all`, the worker lives in the same process) and remote
 * (`SVC_ROLE=api`, the worker is another process reached over its signed internal API). A router picks the
 * right one per session from the record's `owner` (see `src/fleet/session_router.ts`). What the port
 * carries is session vocabulary: `src/vocabulary/host_requests.ts` (asked) and `schemas.ts` (answered).
 *
 * @module
 */
import type { CredentialHolder } from "../auth/credential_holder.ts";
import type { EndOptions, StartSpec } from "../vocabulary/host_requests.ts";
import type { EndedSession, StreamEndpoints } from "../vocabulary/schemas.ts";
import type { SessionRecord } from "../vocabulary/session_record.ts";
import type { TransportKind } from "../vocabulary/transports.ts";

/** Where a new session is placed. */
export interface Placement {
  /** Instance id of the worker (the record's `owner`). */
  owner: string;
  /**
   * The worker's capacity, checked exactly against its load counter when the record is written; absent when
   * the worker checks its own capacity (in-process).
   */
  capacity?: number;
}

/** The port. Every method throws an {@link import("../errors.ts").ApiError} with the mapped code. */
export interface SessionHost {
  /**
   * The transports some live worker serves (`webrtc_sfu` where an SFU is configured): `auto` picks among
   * them, and an explicit request for one no worker serves is refused.
   */
  availableTransports(): Promise<TransportKind[]>;
  /**
   * Picks a worker serving `transport` for a new session, skipping `exclude` (workers found full). Throws 503
   * SVC_RENDER_CAPACITY.
   */
  place(exclude: ReadonlySet<string>, transport: TransportKind): Promise<Placement>;
  /**
   * Starts a `created` session on its worker and resolves once it is `active`, with its endpoints. The
   * credentials are handed over and zeroed here whatever happens.
   */
  start(placement: Placement, spec: StartSpec, credentials: CredentialHolder): Promise<StreamEndpoints>;
  /** Ends an `active` (or `ending`) session through its owner. */
  end(record: SessionRecord, options: EndOptions): Promise<EndedSession>;
  /** The endpoints of an `active` session, with fresh TURN credentials where the transport has them. */
  stream(record: SessionRecord): Promise<StreamEndpoints>;
}
