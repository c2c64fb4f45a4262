/**
 * What a worker's lease advertises at each renewal (the worker directory API processes place sessions by):
 * its internal URL and public URL, capacity and free slots, the transports it serves, and — with
 * `SVC_INTERNAL_SECRET` and `SVC_WORKER_URL` — a signature over its URLs.
 *
 * @module
 */
import type { Config } from "../config.ts";
import type { InternalAuth } from "../fleet/internal_auth.ts";
import type { WorkerAdvert } from "../kv/owner_leases.ts";
import type { ComposedWorker } from "./worker_side_port.ts";

/** The advert of this process's worker; `publicUrl` is read at each renewal (it is known once listening). */
export function workerAdvert(
  config: Config,
  instanceId: string,
  worker: ComposedWorker,
  auth: InternalAuth | null,
  publicUrl: () => string,
): () => Promise<WorkerAdvert> {
  const capacity = config.media.capacity;
  return async () => ({
    url: config.workerUrl,
    public_url: publicUrl(),
    capacity,
    free_slots: Math.max(0, capacity - worker.size),
    transports: [...worker.transports],
    signature: auth && config.workerUrl
      ? await auth.signAdvert(instanceId, config.workerUrl, publicUrl())
      : null,
  });
}
