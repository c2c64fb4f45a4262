/**
 * The API side of a process and how it reaches sessions: the internal API's signing (`SVC_INTERNAL_SECRET`),
 * the session router (`SessionHost`: this process's own worker, and remote workers found in the worker
 * directory), and the session service (roles `all` and `api`).
 *
 * @module
 */
import type { Clock } from "../clock.ts";
import type { Config } from "../config.ts";
import type { TokenService } from "../auth/tokens.ts";
import { InternalAuth } from "../fleet/internal_auth.ts";
import { LocalWorkerClient } from "../fleet/local_worker_client.ts";
import { RemoteWorkerClient } from "../fleet/remote_worker_client.ts";
import { SessionRouter } from "../fleet/session_router.ts";
import { WorkerDirectory } from "../fleet/worker_directory.ts";
import type { Logger } from "../log.ts";
import { SessionService } from "../sessions/service.ts";
import { TEARDOWN_TIMEOUT_MS } from "../vocabulary/host_requests.ts";
import type { Resolver } from "../webhooks/url_guard.ts";
import type { ComposedWorker } from "./worker_side_port.ts";

/** What {@link createApiSide} takes. */
export interface ApiSideArgs {
  kv: Deno.Kv;
  clock: Clock;
  config: Config;
  logger: Logger;
  instanceId: string;
  tokens: TokenService;
  /** This process's session worker (roles `all` and `worker`). */
  worker: ComposedWorker | null;
  workerHttpClient: Deno.HttpClient | undefined;
  teardownTimeoutMs?: number;
  remoteEndMarginMs?: number;
  idempotencyWaitMs?: number;
  resolve?: Resolver;
}

/** The API side: the internal API's auth (null without a secret), the router, the session service. */
export interface ApiSide {
  auth: InternalAuth | null;
  host: SessionRouter;
  sessions: SessionService | null;
}

/** Builds the API side (no session service in a `worker` process). */
export function createApiSide(a: ApiSideArgs): ApiSide {
  const { kv, clock, config, logger, instanceId, worker } = a;
  const auth = config.internalSecret ? new InternalAuth(config.internalSecret, clock) : null;
  const teardownMs = a.teardownTimeoutMs ?? TEARDOWN_TIMEOUT_MS;
  const host = new SessionRouter({
    kv,
    clock,
    logger,
    instanceId,
    local: worker ? new LocalWorkerClient(worker) : undefined,
    remote: auth
      ? {
        client: new RemoteWorkerClient({
          auth,
          logger,
          httpClient: a.workerHttpClient,
          startTimeoutMs: config.providerConnectTimeoutMs + config.media.firstFrameTimeoutMs + 10_000,
          endTimeoutMs: teardownMs + 10_000,
        }),
        directory: new WorkerDirectory({ kv, clock, auth, logger }),
      }
      : undefined,
    teardownTimeoutMs: teardownMs,
    remoteEndMarginMs: a.remoteEndMarginMs,
  });
  const sessions = config.role === "worker" ? null : new SessionService({
    kv,
    clock,
    config,
    host,
    tokens: a.tokens,
    logger,
    idempotencyWaitMs: a.idempotencyWaitMs,
    resolve: a.resolve,
  });
  return { auth, host, sessions };
}
