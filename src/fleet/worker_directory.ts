/**
 * The live session hosts, as API processes see them: the workers registered in KV (see
 * `src/kv/owner_leases.ts`) whose registration is signed with the internal secret, and placement of new
 * sessions on the least loaded one with a free slot. The list is cached for a second; the capacity check
 * itself is exact (the worker's load counter is checked in the atomic operation that writes the record).
 *
 * @module
 */
import type { Clock } from "../clock.ts";
import { ApiError } from "../errors.ts";
import { listLiveInstances, type OwnerLease } from "../kv/owner_leases.ts";
import { ownerLoads } from "../kv/sessions.ts";
import type { Logger } from "../log.ts";
import type { InternalAuth } from "./internal_auth.ts";
import type { Placement } from "../sessions/session_host.ts";
import { alwaysServed, type TransportKind } from "../vocabulary/transports.ts";

/** A worker API processes can call. */
export interface LiveWorker {
  instanceId: string;
  /** Its internal API (`SVC_WORKER_URL`). */
  url: string;
  /** Its public base (`SVC_PUBLIC_URL`). */
  publicUrl: string;
  capacity: number;
  /** The transports it serves. */
  transports: TransportKind[];
}

/** How long a worker that could not be reached is left out of placement. */
const UNREACHABLE_MS = 5_000;

/** Finds and places on live workers. */
export class WorkerDirectory {
  #cache: { at: number; workers: LiveWorker[] } | null = null;
  readonly #verified = new Map<string, boolean>();
  readonly #unreachable = new Map<string, number>();

  constructor(
    readonly deps: { kv: Deno.Kv; clock: Clock; auth: InternalAuth; logger: Logger; cacheMs?: number },
  ) {}

  /** The live workers with a valid registration. */
  async live(): Promise<LiveWorker[]> {
    const now = this.deps.clock.now();
    if (this.#cache && now - this.#cache.at < (this.deps.cacheMs ?? 1000)) return this.#cache.workers;
    const leases = await listLiveInstances(this.deps.kv, now, { workers: true });
    const workers: LiveWorker[] = [];
    for (const lease of leases) {
      const w = await this.#valid(lease);
      if (w) workers.push(w);
    }
    this.#cache = { at: now, workers };
    return workers;
  }

  /** A live worker by instance id (null when gone, unregistered or not callable). */
  async lookup(instanceId: string): Promise<LiveWorker | null> {
    const hit = (await this.live()).find((w) => w.instanceId === instanceId);
    return hit ?? null;
  }

  /** Leaves a worker out of placement for a few seconds (it did not answer). */
  markUnreachable(instanceId: string): void {
    this.#unreachable.set(instanceId, this.deps.clock.now() + UNREACHABLE_MS);
  }

  /**
   * The least loaded live worker with a free slot, skipping `exclude`; ties are broken at random so that
   * concurrent creates spread. Throws 503 SVC_RENDER_CAPACITY when there is none.
   */
  async pick(
    exclude: ReadonlySet<string>,
    transport: TransportKind = alwaysServed()[0],
  ): Promise<Placement & { url: string }> {
    const now = this.deps.clock.now();
    const candidates = (await this.live()).filter((w) =>
      w.transports.includes(transport) && !exclude.has(w.instanceId) &&
      (this.#unreachable.get(w.instanceId) ?? 0) <= now
    );
    if (!candidates.length) throw new ApiError("SVC_RENDER_CAPACITY");
    const loads = await ownerLoads(this.deps.kv, candidates.map((w) => w.instanceId));
    let best: LiveWorker[] = [];
    let bestFree = 0;
    for (const w of candidates) {
      const free = w.capacity - (loads.get(w.instanceId) ?? 0);
      if (free <= 0) continue;
      if (free > bestFree) {
        best = [w];
        bestFree = free;
      } else if (free === bestFree) best.push(w);
    }
    if (!best.length) throw new ApiError("SVC_RENDER_CAPACITY");
    const w = best[Math.floor(Math.random() * best.length)];
    return { owner: w.instanceId, capacity: w.capacity, url: w.url };
  }

  async #valid(lease: OwnerLease): Promise<LiveWorker | null> {
    const w = lease.worker;
    if (!w?.url || !w.signature) return null;
    const id = `${lease.instance_id}\n${w.url}\n${w.public_url}\n${w.signature}`;
    let ok = this.#verified.get(id);
    if (ok === undefined) {
      ok = await this.deps.auth.verifyAdvert(lease.instance_id, w.url, w.public_url, w.signature);
      if (this.#verified.size > 1000) this.#verified.clear();
      this.#verified.set(id, ok);
      if (!ok) {
        this.deps.logger.warn("ignored a worker registration with an invalid signature", {
          instance_id: lease.instance_id,
        });
      }
    }
    return ok
      ? {
        instanceId: lease.instance_id,
        url: w.url,
        publicUrl: w.public_url,
        capacity: w.capacity,
        // An advert without the list (a worker older than it) serves what every worker serves.
        transports: w.transports ?? alwaysServed(),
      }
      : null;
  }
}
