/**
 * The worker port: what the fleet (the in-process client, `local_worker_client.ts`) and a worker's
 * internal API (`src/api/routes/internal.ts`) call on the session worker of their process. The worker
 * (`src/worker/session_worker.ts`) implements it; the composition root hands it over, so neither the fleet
 * nor the HTTP layer loads the worker side (its runtime, bridges and media plane).
 *
 * @module
 */
import type { CredentialHolder } from "../auth/credential_holder.ts";
import type { EndOptions, StartSpec } from "../vocabulary/host_requests.ts";
import type { EndedSession, SessionMetricsSnapshot, StreamEndpoints } from "../vocabulary/schemas.ts";
import type { SessionRecord } from "../vocabulary/session_record.ts";
import type { TransportKind } from "../vocabulary/transports.ts";

/** The session worker of this process, as the fleet and the internal API reach it. */
export interface WorkerPort {
  /** The process's instance id (the records' `owner`). */
  readonly instanceId: string;
  /** The live figures of the sessions it runs (`MetricsRegistry` of src/metrics/registry.ts). */
  readonly metrics: { snapshotOf(sessionId: string): SessionMetricsSnapshot | null };
  /** The transports it serves. */
  readonly transports: readonly TransportKind[];
  /** Whether a render slot is free now. */
  hasCapacity(): boolean;
  /** Starts a `created` session; resolves once it is `active`, with its endpoints. */
  start(spec: StartSpec, credentials: CredentialHolder): Promise<StreamEndpoints>;
  /** Ends a session it runs. */
  end(projectId: string, sessionId: string, options: EndOptions): Promise<EndedSession>;
  /** The endpoints of a session it runs (`known`: its record, when the caller has it). */
  stream(projectId: string, sessionId: string, known?: SessionRecord): Promise<StreamEndpoints>;
}
