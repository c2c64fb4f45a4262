/**
 * The machinery that keeps sessions true over time, assembled for one process according to its role:
 *
 * - every process keeps its lease (the registry of live processes; a worker advertises itself in it) and
 *   runs the reaper (it ends the sessions of processes that are gone; it needs only KV);
 * - a process that runs sessions (`SVC_ROLE` all or worker) also watches their lifetimes, reconciles them
 *   with their records, delivers webhooks and lands ends the journal still holds.
 *
 * `start()` takes the lease, reaps what lost processes left behind, and starts the loops. `shutdown()` is
 * the graceful stop (SIGINT/SIGTERM): it ends this process's sessions with `service_shutdown`, records and
 * delivers what is due, and gives the lease up, within the configured budget. `stop()` only stops the loops,
 * leaving KV as a crash would (the lease expires and another process reaps and delivers).
 *
 * @module
 */
import type { Clock } from "../clock.ts";
import type { Config } from "../config.ts";
import type { Logger } from "../log.ts";
import type { WorkerAdvert } from "../kv/owner_leases.ts";
import type { Role } from "../config.ts";
import { OwnerLeaseKeeper } from "../fleet/owner_lease_keeper.ts";
import { Reaper } from "../fleet/reaper.ts";
import type { Resolver } from "../webhooks/url_guard.ts";
import { WebhookDelivery } from "../webhooks/webhook_delivery.ts";

/** Dependencies of the lifecycle machinery. */
/**
 * What the loops drive of the session worker (the port, with its consumer; `SessionWorker` implements it):
 * its lifetime checks, reconcile passes, and the ends of a shutdown.
 */
export interface WorkerLoops {
  /** Sessions running here. */
  readonly size: number;
  /** The lifetime checks (max duration, idle, no client). */
  readonly lifetimes: { start(tickMs: number): void; stop(): void };
  /** The journal of ends not yet recorded in KV. */
  readonly journal: { flush(deadline: number): Promise<number> };
  /** Compares what runs here with KV (ends sessions ended elsewhere; with `staleStartMs`, stale starts). */
  reconcile(options?: { staleStartMs?: number }): Promise<void>;
  /** Ends every session (`reason`), waiting at most `timeoutMs`. */
  endAll(reason: "service_shutdown", timeoutMs: number): Promise<void>;
  /** Resolves once the background work under way has settled. */
  settled(): Promise<void>;
  /** Lets every session go without ending it (this process's lease was reaped: others own them now). */
  abandonAll(): Promise<void>;
}

export interface LifecycleDeps {
  kv: Deno.Kv;
  clock: Clock;
  config: Config;
  logger: Logger;
  instanceId: string;
  role: Role;
  /** This process's session worker (roles all and worker). */
  worker?: WorkerLoops;
  /** What the lease advertises of the worker at each renewal (roles all and worker). */
  advert?: () => Promise<WorkerAdvert | null>;
  /** HTTP client for webhook deliveries (e.g. trusting `SVC_WEBHOOK_CA_FILE`). */
  webhookHttpClient?: Deno.HttpClient;
  /** fetch used for deliveries (default: the global fetch). */
  fetch?: typeof fetch;
  /** Resolver for the webhook destination check (default: the system DNS). */
  resolve?: Resolver;
  /** Jitter source of the retry schedule (default Math.random). */
  random?: () => number;
  /**
   * Wall-clock period of the lifetime checks and reconcile passes (default 1 s), and of lease renewals and
   * reaper passes (default a third of the lease). Tests shorten it.
   */
  tickMs?: number;
}

/** Reconcile passes between two sweeps for starts that never completed. */
const STALE_START_EVERY = 10;

/** The lifecycle machinery of one process. */
export class Lifecycle {
  readonly webhooks: WebhookDelivery | null;
  readonly reaper: Reaper;
  readonly lease: OwnerLeaseKeeper;
  #reaperTimer: ReturnType<typeof setInterval> | null = null;
  #reconcileTimer: ReturnType<typeof setInterval> | null = null;
  #reconciling: Promise<void> | null = null;
  #reconcileCount = 0;
  #sweeping: Promise<unknown> | null = null;
  #started = false;

  constructor(readonly deps: LifecycleDeps) {
    const { kv, clock, config, logger, instanceId, worker } = deps;
    this.webhooks = worker
      ? new WebhookDelivery({
        kv,
        clock,
        logger,
        instanceId,
        settings: config.webhooks,
        httpClient: deps.webhookHttpClient,
        fetch: deps.fetch,
        resolve: deps.resolve,
        random: deps.random,
      })
      : null;
    this.reaper = new Reaper({ kv, clock, logger, instanceId, leaseMs: config.ownerLeaseMs });
    this.lease = new OwnerLeaseKeeper({
      kv,
      clock,
      logger,
      instanceId,
      ttlMs: config.ownerLeaseMs,
      role: deps.role,
      advert: deps.advert,
      onReaped: () => worker?.abandonAll() ?? Promise.resolve(),
      onOutage: () => this.reaper.noteOutage(),
    });
  }

  /** Takes the lease, reaps what lost processes left, starts the loops. */
  async start(): Promise<void> {
    if (this.#started) return;
    this.#started = true;
    const { config, worker, logger } = this.deps;
    await this.lease.renew();
    await this.sweep();
    const slow = this.deps.tickMs ?? Math.floor(config.ownerLeaseMs / 3);
    this.lease.start(slow);
    this.#reaperTimer = setInterval(() => void this.sweep(), slow);
    if (worker) {
      worker.lifetimes.start(this.deps.tickMs ?? 1000);
      // End requests recorded by other processes, and sessions ended elsewhere, reach this process here.
      this.#reconcileTimer = setInterval(() => {
        this.#reconciling ??= this.reconcile().finally(() => (this.#reconciling = null));
      }, this.deps.tickMs ?? 1000);
      this.webhooks!.start();
    }
    logger.debug("lifecycle started", { instance_id: this.deps.instanceId, role: this.deps.role });
  }

  /** One reconcile pass of the worker (every tenth one also fails starts that never completed). */
  async reconcile(): Promise<void> {
    const { worker, config } = this.deps;
    if (!worker) return;
    const sweepStale = this.#reconcileCount++ % STALE_START_EVERY === 0;
    // A start takes at most the engine handshake and the first frame; past twice that, it was abandoned.
    const staleStartMs = 2 * (config.providerConnectTimeoutMs + config.media.firstFrameTimeoutMs) + 10_000;
    await worker.reconcile(sweepStale ? { staleStartMs } : {});
  }

  /** One reaper pass (skipped while one runs). Resolves with the number of sessions reaped. */
  sweep(): Promise<unknown> {
    this.#sweeping ??= this.reaper.sweep().catch((err) => {
      this.deps.logger.warn("reaper pass failed", { error: String(err).slice(0, 200) });
      return 0;
    }).finally(() => (this.#sweeping = null));
    return this.#sweeping;
  }

  /** Stops every loop without touching the sessions or the lease (what a crash leaves behind). */
  async stop(): Promise<void> {
    if (this.#reaperTimer !== null) clearInterval(this.#reaperTimer);
    this.#reaperTimer = null;
    if (this.#reconcileTimer !== null) clearInterval(this.#reconcileTimer);
    this.#reconcileTimer = null;
    await this.#reconciling;
    this.deps.worker?.lifetimes.stop();
    await this.lease.stop();
    await this.webhooks?.stop();
    await this.#sweeping;
  }

  /**
   * Graceful shutdown within `budgetMs` (default `SVC_SHUTDOWN_TIMEOUT_S`): ends every session of this
   * process (`service_shutdown`, graceful teardown bounded by half the budget), records and delivers the
   * events due, then stops the loops and gives the lease up.
   */
  async shutdown(budgetMs = this.deps.config.shutdownTimeoutMs): Promise<void> {
    const { worker, logger, clock } = this.deps;
    const deadline = clock.now() + budgetMs;
    let live = 0;
    if (worker) {
      worker.lifetimes.stop();
      live = worker.size;
      await worker.endAll("service_shutdown", Math.min(10_000, Math.floor(budgetMs / 2)));
      await worker.settled(); // self-ends already under way record their events too
      const left = await worker.journal.flush(deadline);
      if (left) {
        logger.warn("storage unavailable at shutdown: some ends could not be recorded", { pending: left });
      }
      // Let the polling loop's attempts finish (not abort them), then deliver whatever is due.
      await this.webhooks!.stop({ finishInflight: true });
      await this.webhooks!.drain(deadline).catch((err) =>
        logger.warn("webhook delivery at shutdown failed", { error: String(err).slice(0, 200) })
      );
    }
    await this.stop();
    await this.lease.release().catch((err) =>
      logger.warn("could not release the owner lease", { error: String(err).slice(0, 200) })
    );
    logger.info("lifecycle shut down", { sessions_ended: live });
  }
}
