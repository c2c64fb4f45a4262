/**
 * The session host the API side uses: it routes each call to where the session runs. New sessions go to
 * this process's own worker (`SVC_ROLE=all`) or to the least loaded live worker (`SVC_ROLE=api`). Ends and
 * client tokens go straight to the session's owner: in-process, or over the owner's signed internal API;
 * when the owner cannot be called, an end falls back to a request recorded in KV (see `end_through_kv.ts`).
 *
 * @module
 */
import type { Clock } from "../clock.ts";
import { ApiError } from "../errors.ts";
import type { Logger } from "../log.ts";
import type { CredentialHolder } from "../auth/credential_holder.ts";
import type { SessionRecord } from "../vocabulary/session_record.ts";
import { emptyEndpoints, socketUrl, type TransportKind } from "../vocabulary/transports.ts";
import { endThroughKv } from "./end_through_kv.ts";
import type { LocalWorkerClient } from "./local_worker_client.ts";
import { type RemoteWorkerClient, WorkerUnreachableError } from "./remote_worker_client.ts";
import type { Placement, SessionHost } from "../sessions/session_host.ts";
import { notActiveError } from "../vocabulary/not_active_error.ts";
import { type EndOptions, type StartSpec, TEARDOWN_TIMEOUT_MS } from "../vocabulary/host_requests.ts";
import type { EndedSession, StreamEndpoints } from "../vocabulary/schemas.ts";
import type { WorkerDirectory } from "./worker_directory.ts";
import { listLiveInstances } from "../kv/owner_leases.ts";

/** Dependencies of the router. */
export interface SessionRouterDeps {
  kv: Deno.Kv;
  clock: Clock;
  logger: Logger;
  /** Id of this process. */
  instanceId: string;
  /** This process's own worker (`SVC_ROLE=all`); new sessions are placed on it. */
  local?: LocalWorkerClient;
  /** Remote workers (`SVC_ROLE=api`, or an `all` process reaching another one). */
  remote?: { client: RemoteWorkerClient; directory: WorkerDirectory };
  /** Teardown timeout of graceful ends (the spec's 10 s). */
  teardownTimeoutMs?: number;
  /** How long an end recorded in KV waits for the owner beyond the teardown timeout (default 5 s). */
  remoteEndMarginMs?: number;
}

/** Routes session calls to their host. */
export class SessionRouter implements SessionHost {
  constructor(readonly deps: SessionRouterDeps) {}

  async availableTransports(): Promise<TransportKind[]> {
    const { local, remote } = this.deps;
    if (local) return [...local.worker.transports];
    const served = new Set<TransportKind>();
    for (const w of await remote?.directory.live() ?? []) for (const t of w.transports) served.add(t);
    return [...served];
  }

  async place(exclude: ReadonlySet<string>, transport: TransportKind): Promise<Placement> {
    const { local, remote } = this.deps;
    if (local) {
      if (exclude.has(local.worker.instanceId)) throw new ApiError("SVC_RENDER_CAPACITY");
      return local.place(transport);
    }
    if (!remote) throw new ApiError("SVC_RENDER_CAPACITY");
    const { owner, capacity } = await remote.directory.pick(exclude, transport);
    return { owner, capacity };
  }

  async start(
    placement: Placement,
    spec: StartSpec,
    credentials: CredentialHolder,
  ): Promise<StreamEndpoints> {
    const { local, remote } = this.deps;
    try {
      if (local && placement.owner === local.worker.instanceId) return await local.start(spec, credentials);
      const worker = await remote?.directory.lookup(placement.owner);
      if (!remote || !worker) throw new ApiError("SVC_RENDER_CAPACITY");
      try {
        return await remote.client.start(worker.url, spec, credentials);
      } catch (err) {
        if (!(err instanceof WorkerUnreachableError)) throw err;
        remote.directory.markUnreachable(placement.owner);
        throw new ApiError("SVC_RENDER_CAPACITY", "The session host could not be reached; retry.");
      }
    } finally {
      credentials.zero();
    }
  }

  async end(record: SessionRecord, options: EndOptions): Promise<EndedSession> {
    const { local, remote } = this.deps;
    if (local && record.owner === local.worker.instanceId) return await local.end(record, options);
    const worker = record.owner ? await remote?.directory.lookup(record.owner) : null;
    if (remote && worker) {
      try {
        return await remote.client.end(worker.url, record, options);
      } catch (err) {
        if (!(err instanceof WorkerUnreachableError)) throw err;
        remote.directory.markUnreachable(worker.instanceId);
      }
    }
    if (record.status !== "active") throw notActiveError(record);
    const teardown = this.deps.teardownTimeoutMs ?? TEARDOWN_TIMEOUT_MS;
    return await endThroughKv(this.deps, record, options, teardown + (this.deps.remoteEndMarginMs ?? 5_000));
  }

  async stream(record: SessionRecord): Promise<StreamEndpoints> {
    const { local, remote } = this.deps;
    if (local && record.owner === local.worker.instanceId) return await local.stream(record);
    const worker = record.owner ? await remote?.directory.lookup(record.owner) : null;
    if (remote && worker) {
      try {
        return await remote.client.stream(worker.url, record);
      } catch (err) {
        if (!(err instanceof WorkerUnreachableError)) throw err;
        remote.directory.markUnreachable(worker.instanceId);
        throw new ApiError("SVC_SESSION_STATE_UNAVAILABLE");
      }
    }
    // An owner that cannot be called (another process sharing this KV without a worker URL): its fMP4
    // media is still reached at its public URL.
    const lease = (await listLiveInstances(this.deps.kv, this.deps.clock.now())).find((l) =>
      l.instance_id === record.owner
    );
    if (lease?.worker && record.transport === "websocket_fmp4") {
      return {
        ...emptyEndpoints(),
        media_url: socketUrl("websocket_fmp4", lease.worker.public_url, record.session_id),
      };
    }
    throw new ApiError("SVC_SESSION_STATE_UNAVAILABLE");
  }
}
