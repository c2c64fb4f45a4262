/**
 * The composition root: the one place a service process is assembled, for `main.ts`, the tests, the
 * OpenAPI emitter and the benches. What it builds depends on `SVC_ROLE`:
 *
 * | part | all | api | worker |
 * |---|---|---|---|
 * | KV, tokens, lease (instance registry), reaper | ✓ | ✓ | ✓ |
 * | `/v1` API, docs, error reference, catalog | ✓ | ✓ | |
 * | session service (validation, idempotency, slots, placement) | ✓ | ✓ | |
 * | session worker: engine bridges, renderer, encoders, media WebSocket, lifetimes, end journal | ✓ | | ✓ |
 * | internal API (signed, for API processes) | with `SVC_WORKER_URL` | | ✓ |
 * | webhook delivery, reconcile | ✓ | | ✓ |
 * | reference engine (embedded default) | ✓ | | ✓ |
 * | demo page (in `api`: vendor engines only) | ✓ | ✓ | |
 *
 * An `api` process starts no subprocess, writes no file, loads no FFI and opens no engine connection, so
 * it runs on Deno Deploy (see docs/deployment.md). It does not even load that code: the worker side (media
 * plane, bridges, session runtime and worker: `worker_side.ts`) and the embedded engine are loaded with
 * `await import()` on the roles that run sessions only, and this module names them through
 * `worker_side_port.ts` (`tests/architecture/module_graph_test.ts` checks it on `main.ts`).
 *
 * @module
 */
import type { OpenAPIHono } from "@hono/zod-openapi";
import { createApp } from "../api/app.ts";
import type { AppEnv } from "../api/app_env.ts";
import { DEMO_PROJECT_ID } from "../api/demo_project.ts";
import { TokenService } from "../auth/tokens.ts";
import { type Clock, systemClock } from "../clock.ts";
import type { Config } from "../config.ts";
import { randomBase62 } from "../ids.ts";
import { openKv } from "../kv/open.ts";
import { createLogger, type Logger } from "../log.ts";
import type { SessionService } from "../sessions/service.ts";
import { observeWorker } from "../telemetry/metrics.ts";
import type { Resolver } from "../webhooks/url_guard.ts";
import { workerAdvert } from "./advert.ts";
import { createApiSide } from "./api_side.ts";
import { Cleanup } from "./cleanup.ts";
import { type DemoBackend, mintDemoKey } from "./demo_key.ts";
import { type EmbeddedEngine, type StartedEngine, startEmbeddedEngine } from "./embedded_engine.ts";
import { Lifecycle } from "./lifecycle.ts";
import { listen } from "./listen.ts";
import { outboundTrust } from "./outbound.ts";
import { StackScrub } from "./stack_scrub.ts";
import { checkStartup, tokenSecrets } from "./startup.ts";
import { openStorage } from "./storage.ts";
import type {
  ComposedMedia,
  ComposedRuntime,
  ComposedWorker,
  WorkerOverrides,
  WorkerSide,
} from "./worker_side_port.ts";

export { DEMO_PROJECT_ID, type EmbeddedEngine, openKv };

/** What the caller of {@link compose} may supply or override (tests, benches). */
export interface ComposeOptions {
  logger?: Logger;
  clock?: Clock;
  /** Id of this process (default: a fresh `inst_…`). */
  instanceId?: string;
  /** Use this KV instead of opening `SVC_KV` (not closed by the service). */
  kv?: Deno.Kv;
  /** Stops the HTTP server when aborted. */
  signal?: AbortSignal;
  /** Serve HTTP (default true). Without it, use {@link Service.fetch}. */
  listen?: boolean;
  /** Start the lifecycle machinery (lease, reaper, lifetimes, webhooks; default true). */
  lifecycle?: boolean;
  /**
   * Overrides of the worker side (tests and benches: bridges, a media plane or factory, renderer options),
   * made with `workerOverrides()` of `worker_side.ts`.
   */
  worker?: WorkerOverrides;
  /** CA certificates trusted for engine connections, beyond `SVC_ENGINE_CA_FILE`. */
  caCerts?: string[];
  /** CA certificates trusted for webhook deliveries, beyond `SVC_WEBHOOK_CA_FILE`. */
  webhookCaCerts?: string[];
  /** Token secret replacing the configured one (tests); null for none. */
  tokenSecret?: string | null;
  /** fetch used for webhook deliveries. */
  fetch?: typeof fetch;
  /** Resolver of the webhook destination checks (tests never reach the real DNS). */
  resolve?: Resolver;
  /** Jitter source of the webhook retry schedule. */
  random?: () => number;
  /** Period of lifetime checks, reconcile passes, lease renewals and reaper passes (wall-clock ms). */
  tickMs?: number;
  /** Teardown timeout of graceful ends (the spec's 10 s; tests shorten it). */
  teardownTimeoutMs?: number;
  /** Margin an end recorded in KV waits for the owner beyond the teardown timeout. */
  remoteEndMarginMs?: number;
  /** How long a concurrent duplicate create (same Idempotency-Key) waits. */
  idempotencyWaitMs?: number;
  /** How long an end answer waits for storage before answering 503. */
  endRecordWaitMs?: number;
  /** Retry settings of the end journal (`EndJournalOptions` of src/worker/end_journal.ts). */
  journal?: { firstDelayMs?: number; maxDelayMs?: number };
}

/** A composed service process. */
export interface Service {
  role: Config["role"];
  config: Config;
  instanceId: string;
  kv: Deno.Kv;
  clock: Clock;
  logger: Logger;
  tokens: TokenService;
  /** The HTTP app. */
  app: OpenAPIHono<AppEnv>;
  /** The OpenAPI document of the public API. */
  document(): Record<string, unknown>;
  /** Answers a request in-process. */
  fetch(req: Request): Promise<Response>;
  /** Base URL the HTTP server listens on (loopback form), or null when not listening. */
  url: string | null;
  /** The API side (roles all and api). */
  sessions: SessionService | null;
  /** The session worker (roles all and worker; a `SessionWorker`). */
  worker: ComposedWorker | null;
  /** The session runtime of the worker (a `SessionRuntime`). */
  runtime: ComposedRuntime | null;
  /** The media plane, when this process renders (a `MediaPlane`). */
  media: ComposedMedia | null;
  /** Lease, reaper, lifetimes, reconcile and webhook delivery. */
  lifecycle: Lifecycle;
  /** The reference engine, when this process runs one. */
  referenceEngine: EmbeddedEngine | null;
  /** URL of the demo page, when served. */
  demoUrl: string | null;
  /**
   * Graceful stop: stops accepting requests, ends every live session (`service_shutdown`), records and
   * delivers the events due within `SVC_SHUTDOWN_TIMEOUT_S`, gives the lease up, closes KV. Idempotent.
   */
  close(): Promise<void>;
  /**
   * Stops everything without ending sessions in KV (as a crash would, but releasing this process's
   * resources): for tests. Idempotent.
   */
  dispose(): Promise<void>;
}

/**
 * Assembles (and, by default, starts) one service process: each part from its builder, in the order a
 * failed start undoes them (last opened, first closed; see {@link Cleanup}).
 */
export async function compose(config: Config, o: ComposeOptions = {}): Promise<Service> {
  const logger = o.logger ?? createLogger({ level: config.logLevel });
  const clock = o.clock ?? systemClock;
  const instanceId = o.instanceId ?? `inst_${randomBase62(12)}`;
  const role = config.role;
  const runsSessions = role !== "api";
  const cleanup = new Cleanup();

  try {
    checkStartup(config, logger, runsSessions);
    // The worker side's code, loaded only by the roles that run sessions.
    const workerSide = runsSessions ? await import("./worker_side.ts") : null;
    // First, so that a missing ffmpeg stops start-up before anything is opened.
    const { plane, owned } = workerSide
      ? await workerSide.startMediaPlane({ config, logger, clock, overrides: o.worker })
      : { plane: null, owned: false };
    if (plane && owned) cleanup.push(() => plane.close());
    const tokens = new TokenService(tokenSecrets(config, o.tokenSecret, logger), clock);
    const kv = await openStorage(config, o.kv, cleanup);
    const outbound = await outboundTrust(config, o, cleanup);
    let engine: StartedEngine | null = null;
    if (runsSessions && config.referenceEngine.enabled) {
      const e = engine = await startEmbeddedEngine(config, logger);
      cleanup.push(() => e.close());
      outbound.engineCa.push(e.caPem);
    }

    // The worker side.
    const side: WorkerSide | null = workerSide
      ? await workerSide.createWorkerSide({
        kv,
        clock,
        config,
        logger,
        instanceId,
        media: plane,
        engineCa: outbound.engineCa,
        overrides: o.worker,
        teardownTimeoutMs: o.teardownTimeoutMs,
        endRecordWaitMs: o.endRecordWaitMs,
        journal: o.journal,
      })
      : null;
    const runtime = side?.runtime ?? null;
    const worker = side?.worker ?? null;
    const media = side?.media ?? null;

    // The API side, and how it reaches sessions.
    const { auth, sessions } = createApiSide({
      kv,
      clock,
      config,
      logger,
      instanceId,
      tokens,
      worker,
      workerHttpClient: outbound.workerHttpClient,
      teardownTimeoutMs: o.teardownTimeoutMs,
      remoteEndMarginMs: o.remoteEndMarginMs,
      idempotencyWaitMs: o.idempotencyWaitMs,
      resolve: o.resolve,
    });
    let demo: DemoBackend | null = null;
    if (config.demoPage && tokens.available && sessions && (role === "api" || (engine && media))) {
      const demoEngine = engine ? { url: engine.engine.url, token: engine.engine.token } : undefined;
      demo = await mintDemoKey(kv, clock, instanceId, demoEngine, cleanup);
    }

    const scrub = new StackScrub();
    cleanup.push(() => scrub.settled());
    const { app, document, settled } = createApp({
      kv,
      clock,
      config,
      tokens,
      logger,
      instanceId,
      afterCredentials: () => scrub.request(),
      api: sessions ? { sessions, demo: demo ?? undefined } : undefined,
      worker: side
        ? {
          worker: side.worker,
          sockets: side.sockets,
          catalog: side.catalog,
          art: side.art,
          projectArt: side.projectArt,
          auth: auth && config.workerUrl ? auth : undefined,
        }
        : undefined,
    });
    // The control plane's background KV reads and writes settle before the KV handle closes.
    cleanup.push(() => settled());

    let publicUrl = config.publicUrl;
    const lifecycle = new Lifecycle({
      kv,
      clock,
      config,
      logger,
      instanceId,
      role,
      worker: worker ?? undefined,
      advert: worker ? workerAdvert(config, instanceId, worker, auth, () => publicUrl) : undefined,
      webhookHttpClient: outbound.webhookHttpClient,
      fetch: o.fetch,
      resolve: o.resolve,
      random: o.random,
      tickMs: o.tickMs,
    });
    if (worker) {
      const capacity = config.media.capacity;
      cleanup.push(observeWorker({
        workerId: instanceId,
        capacity: () => capacity,
        freeSlots: () => Math.max(0, capacity - worker.size),
        live: () => worker.liveKinds(),
      }));
    }

    const listening = o.listen !== false ? listen(config, app.fetch, o.signal, cleanup) : null;
    if (listening && listening.publicUrl !== publicUrl) {
      publicUrl = listening.publicUrl;
      media?.setPublicUrl(publicUrl);
    }
    const url = listening?.url ?? null;
    if (o.lifecycle !== false) await lifecycle.start();
    if (url) {
      logger.info("listening", {
        url,
        role,
        ...(demo ? { demo: `${url}/demo` } : {}),
        public_url: publicUrl,
        kv: config.kv === null ? "deploy" : /^https?:/.test(config.kv) ? "remote" : config.kv,
      });
    }

    let closing: Promise<void> | null = null;
    let disposing: Promise<void> | null = null;
    const finish = async () => {
      await worker?.close();
      await cleanup.run();
    };
    return {
      role,
      config,
      instanceId,
      kv,
      clock,
      logger,
      tokens,
      app,
      document,
      fetch: async (req) => await app.fetch(req),
      url,
      sessions,
      worker,
      runtime,
      media,
      lifecycle,
      referenceEngine: engine?.engine ?? null,
      demoUrl: demo && url ? `${url}/demo` : null,
      close() {
        closing ??= (async () => {
          await listening?.server.shutdown();
          await lifecycle.shutdown();
          await runtime?.shutdown();
          await finish();
        })();
        return closing;
      },
      dispose() {
        disposing ??= (async () => {
          await lifecycle.stop();
          await runtime?.shutdown();
          await finish();
        })();
        return disposing;
      },
    };
  } catch (err) {
    await cleanup.run();
    throw err;
  }
}
