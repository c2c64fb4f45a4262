/**
 * The machinery that lets sessions look after themselves, assembled for one process: the owner lease
 * keeper, the reaper, the lifetime monitor (inside the session service) and the webhook delivery worker.
 *
 * `start()` takes the lease, reaps what lost processes left behind, and starts the loops. `shutdown()` is
 * the graceful stop (SIGINT/SIGTERM): it ends this process's sessions with `service_shutdown`, delivers the
 * events due, and gives the lease up, within the configured budget. `stop()` only stops the loops, leaving
 * KV as a crash would (the lease expires and another process reaps and delivers).
 *
 * @module
 */
import type { Clock } from "./clock.ts";
import type { Config } from "./config.ts";
import type { Logger } from "./log.ts";
import { OwnerLeaseKeeper } from "./runtime/owner_lease.ts";
import type { SessionRuntime } from "./runtime/session_runtime.ts";
import { Reaper } from "./sessions/reaper.ts";
import type { SessionService } from "./sessions/service.ts";
import type { Resolver } from "./webhooks/url_guard.ts";
import { WebhookWorker } from "./webhooks/worker.ts";

/** Dependencies of the lifecycle machinery. */
export interface LifecycleDeps {
  kv: Deno.Kv;
  clock: Clock;
  config: Config;
  logger: Logger;
  instanceId: string;
  runtime: SessionRuntime;
  sessions: SessionService;
  /** HTTP client for webhook deliveries (e.g. trusting `SVC_WEBHOOK_CA_FILE`). */
  webhookHttpClient?: Deno.HttpClient;
  /** fetch used for deliveries (default: the global fetch). */
  fetch?: typeof fetch;
  /** Resolver for the webhook destination check (default: the system DNS). */
  resolve?: Resolver;
  /** Jitter source of the retry schedule (default Math.random). */
  random?: () => number;
  /**
   * Wall-clock period of the lifetime checks, lease renewals and reaper passes. Default: 1 s for
   * lifetimes, a third of the lease for the others. Tests shorten it.
   */
  tickMs?: number;
}

/** The lifecycle machinery of one process. */
export class Lifecycle {
  readonly worker: WebhookWorker;
  readonly reaper: Reaper;
  readonly lease: OwnerLeaseKeeper;
  #reaperTimer: ReturnType<typeof setInterval> | null = null;
  #reconcileTimer: ReturnType<typeof setInterval> | null = null;
  #reconciling: Promise<void> | null = null;
  #sweeping: Promise<unknown> | null = null;
  #started = false;

  constructor(readonly deps: LifecycleDeps) {
    const { kv, clock, config, logger, instanceId } = deps;
    this.worker = new WebhookWorker({
      kv,
      clock,
      logger,
      instanceId,
      settings: config.webhooks,
      httpClient: deps.webhookHttpClient,
      fetch: deps.fetch,
      resolve: deps.resolve,
      random: deps.random,
    });
    this.reaper = new Reaper({ kv, clock, logger, instanceId });
    this.lease = new OwnerLeaseKeeper({
      kv,
      clock,
      logger,
      instanceId,
      ttlMs: config.ownerLeaseMs,
      onReaped: () => deps.sessions.abandonAllLocal(),
    });
  }

  /** Takes the lease, reaps what lost processes left, starts the loops. */
  async start(): Promise<void> {
    if (this.#started) return;
    this.#started = true;
    const { config, sessions, logger } = this.deps;
    await this.lease.renew();
    await this.sweep();
    const slow = this.deps.tickMs ?? Math.floor(config.ownerLeaseMs / 3);
    this.lease.start(slow);
    this.#reaperTimer = setInterval(() => void this.sweep(), slow);
    sessions.lifetimes.start(this.deps.tickMs ?? 1000);
    // End requests recorded by other processes, and sessions ended elsewhere, reach this process here.
    this.#reconcileTimer = setInterval(() => {
      this.#reconciling ??= sessions.reconcileLocal().finally(() => (this.#reconciling = null));
    }, this.deps.tickMs ?? 1000);
    this.worker.start();
    logger.debug("lifecycle started", { instance_id: this.deps.instanceId });
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
    this.deps.sessions.lifetimes.stop();
    await this.lease.stop();
    await this.worker.stop();
    await this.#sweeping;
  }

  /**
   * Graceful shutdown within `budgetMs` (default `SVC_SHUTDOWN_TIMEOUT_S`): ends every session of this
   * process (`service_shutdown`, graceful teardown bounded by half the budget), delivers the events due,
   * then stops the loops and gives the lease up.
   */
  async shutdown(budgetMs = this.deps.config.shutdownTimeoutMs): Promise<void> {
    const { sessions, runtime, logger } = this.deps;
    const deadline = Date.now() + budgetMs;
    this.deps.sessions.lifetimes.stop();
    const live = runtime.liveSessions().length;
    await sessions.endAllLocal("service_shutdown", Math.min(10_000, Math.floor(budgetMs / 2)));
    await sessions.settled(); // self-ends already under way record their events too
    // Let the polling loop's attempts finish (not abort them), then deliver whatever is due.
    await this.worker.stop({ finishInflight: true });
    await this.worker.drain(deadline).catch((err) =>
      logger.warn("webhook delivery at shutdown failed", { error: String(err).slice(0, 200) })
    );
    await this.stop();
    await this.lease.release().catch((err) =>
      logger.warn("could not release the owner lease", { error: String(err).slice(0, 200) })
    );
    logger.info("lifecycle shut down", { sessions_ended: live });
  }
}
