/**
 * The in-process session host (`SVC_ROLE=all`): the worker runs in this very process, so every call is a
 * direct method call.
 *
 * @module
 */
import { ApiError } from "../errors.ts";
import type { CredentialHolder } from "../auth/credential_holder.ts";
import type { SessionRecord } from "../vocabulary/session_record.ts";
import { transportEntry, type TransportKind } from "../vocabulary/transports.ts";
import type { WorkerPort } from "./worker_port.ts";
import type { Placement } from "../sessions/session_host.ts";
import type { EndOptions, StartSpec } from "../vocabulary/host_requests.ts";
import type { EndedSession, StreamEndpoints } from "../vocabulary/schemas.ts";

/** Reaches the worker of this process. */
export class LocalWorkerClient {
  constructor(readonly worker: WorkerPort) {}

  /** This worker, if it serves the transport and has a free render slot (it checks its capacity itself). */
  place(transport: TransportKind): Placement {
    if (!this.worker.transports.includes(transport)) {
      throw new ApiError(transportEntry(transport).unavailable?.code ?? "SVC_SFU_NOT_CONFIGURED");
    }
    if (!this.worker.hasCapacity()) throw new ApiError("SVC_RENDER_CAPACITY");
    return { owner: this.worker.instanceId };
  }

  start(spec: StartSpec, credentials: CredentialHolder): Promise<StreamEndpoints> {
    return this.worker.start(spec, credentials);
  }

  end(record: SessionRecord, options: EndOptions): Promise<EndedSession> {
    return this.worker.end(record.project_id, record.session_id, options);
  }

  stream(record: SessionRecord): Promise<StreamEndpoints> {
    return this.worker.stream(record.project_id, record.session_id, record);
  }
}
