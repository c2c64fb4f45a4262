/**
 * Keeps this process's owner lease alive: renews it every third of its time-to-live. If a renewal finds
 * the lease reaped (the process was presumed dead, e.g. it stalled past the lease), `onReaped` is called so
 * the process stops running sessions whose records are already final.
 *
 * @module
 */
import type { Clock } from "../clock.ts";
import { releaseOwnerLease, renewOwnerLease } from "../kv/owner_leases.ts";
import type { Logger } from "../log.ts";

/** Renews one process's lease. */
export class OwnerLeaseKeeper {
  #timer: ReturnType<typeof setInterval> | null = null;
  #renewing: Promise<void> | null = null;
  readonly #about = { pid: Deno.pid, hostname: Deno.hostname() };

  constructor(
    readonly deps: {
      kv: Deno.Kv;
      clock: Clock;
      logger: Logger;
      instanceId: string;
      ttlMs: number;
      onReaped: () => Promise<void>;
    },
  ) {}

  /** Renews the lease now (the first call takes it). */
  async renew(): Promise<void> {
    const { kv, clock, instanceId, ttlMs, logger } = this.deps;
    const outcome = await renewOwnerLease(kv, instanceId, clock.now(), ttlMs, this.#about);
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
      this.#renewing = this.renew().catch((err) =>
        this.deps.logger.warn("owner lease renewal failed", { error: String(err).slice(0, 200) })
      ).finally(() => (this.#renewing = null));
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
