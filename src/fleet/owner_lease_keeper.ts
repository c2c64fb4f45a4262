/**
 * Keeps this process's owner lease alive: renews it every third of its time-to-live, with what the process
 * is (its role) and, for a worker, its advert (addresses, capacity, free slots). If a renewal finds the lease
 * reaped (the process was presumed dead, e.g. it stalled past the lease), `onReaped` is called so the
 * process stops running sessions whose records are already final.
 *
 * @module
 */
import type { Clock } from "../clock.ts";
import { releaseOwnerLease, renewOwnerLease, type WorkerAdvert } from "../kv/owner_leases.ts";
import type { Logger } from "../log.ts";
import type { Role } from "../config.ts";

/** The host name for operators (needs `--allow-sys`; an API process in a sandbox may not have it). */
function hostName(): string {
  try {
    return Deno.hostname();
  } catch {
    return "unknown";
  }
}

/** Renews one process's lease. */
export class OwnerLeaseKeeper {
  #timer: ReturnType<typeof setInterval> | null = null;
  #renewing: Promise<void> | null = null;
  readonly #about = { pid: Deno.pid, hostname: hostName() };
  #failing = false;

  constructor(
    readonly deps: {
      kv: Deno.Kv;
      clock: Clock;
      logger: Logger;
      instanceId: string;
      ttlMs: number;
      /** What the process is (default `all`). */
      role?: Role;
      /** The worker's advert, computed at each renewal. */
      advert?: () => Promise<WorkerAdvert | null>;
      onReaped: () => Promise<void>;
      /** Called when a renewal fails (storage unavailable). */
      onOutage?: () => void;
    },
  ) {}

  /** Renews the lease now (the first call takes it). */
  async renew(): Promise<void> {
    const { kv, clock, instanceId, ttlMs, logger } = this.deps;
    const worker = await this.deps.advert?.() ?? null;
    const outcome = await renewOwnerLease(kv, instanceId, clock.now(), ttlMs, {
      ...this.#about,
      role: this.deps.role ?? "all",
      worker,
    });
    if (outcome === "reaped") {
      logger.error("this process's owner lease had expired and was reaped: ending its sessions", {
        instance_id: instanceId,
      });
      await this.deps.onReaped();
    }
  }

  /** Renews every `intervalMs` (wall clock; default a third of the lease) until {@link stop}. */
  start(intervalMs = Math.floor(this.deps.ttlMs / 3)): void {
    if (this.#timer !== null) return;
    this.#timer = setInterval(() => {
      if (this.#renewing) return;
      this.#renewing = this.renew().then(() => {
        if (this.#failing) this.deps.logger.info("owner lease renewed again");
        this.#failing = false;
      }, (err) => {
        this.deps.onOutage?.();
        // One line when renewals start failing, not one per tick for as long as storage is out.
        if (!this.#failing) {
          this.deps.logger.warn("owner lease renewal failed", { error: String(err).slice(0, 200) });
        }
        this.#failing = true;
      }).finally(() => (this.#renewing = null));
    }, intervalMs);
  }

  /** Stops renewing (the lease then expires on its own unless {@link release}d). */
  async stop(): Promise<void> {
    if (this.#timer !== null) clearInterval(this.#timer);
    this.#timer = null;
    await this.#renewing;
  }

  /** Gives the lease up (clean shutdown). */
  async release(): Promise<void> {
    await releaseOwnerLease(this.deps.kv, this.deps.instanceId, this.deps.clock.now());
  }
}
