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
import { TokenService } from "../auth/tokens.ts";
import { memoryScrubWarning } from "../auth/memory_scrub.ts";
import { StackScrub } from "./stack_scrub.ts";
import { type Clock, systemClock } from "../clock.ts";
import type { Config } from "../config.ts";
import { openKv } from "../kv/open.ts";
import { setReadHandle, sharesDatabase } from "../kv/read_handle.ts";
import { setSessionRetention } from "../kv/session_retention.ts";
import { DEMO_PROJECT_ID } from "../api/demo_project.ts";
import { InternalAuth } from "../fleet/internal_auth.ts";
import { LocalWorkerClient } from "../fleet/local_worker_client.ts";
import { RemoteWorkerClient } from "../fleet/remote_worker_client.ts";
import { SessionRouter } from "../fleet/session_router.ts";
import { WorkerDirectory } from "../fleet/worker_directory.ts";
import { randomBase62 } from "../ids.ts";
import { createApiKey, revokeApiKey } from "../kv/api_keys.ts";
import { Lifecycle } from "./lifecycle.ts";
import { createLogger, type Logger } from "../log.ts";
import { TEARDOWN_TIMEOUT_MS } from "../vocabulary/host_requests.ts";
import { SessionService } from "../sessions/service.ts";
import type { Resolver } from "../webhooks/url_guard.ts";
import type {
  ComposedMedia,
  ComposedRuntime,
  ComposedWorker,
  WorkerOverrides,
  WorkerSide,
} from "./worker_side_port.ts";
import { ConfigError } from "../config.ts";
import { telemetry } from "../telemetry/state.ts";
import { samplerHonoursParent } from "../telemetry/tracing.ts";
import { observeWorker } from "../telemetry/metrics.ts";
import type { ReferenceEngineStats } from "../../engine/mod.ts";

export { DEMO_PROJECT_ID, openKv };

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

/** The reference engine running in this process (the embedded default). */
export interface EmbeddedEngine {
  url: string;
  caFile: string;
  tokenFile: string;
  token: string;
  stats(): ReferenceEngineStats;
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

/** Assembles (and, by default, starts) one service process. */
export async function compose(config: Config, o: ComposeOptions = {}): Promise<Service> {
  const logger = o.logger ?? createLogger({ level: config.logLevel });
  const clock = o.clock ?? systemClock;
  const instanceId = o.instanceId ?? `inst_${randomBase62(12)}`;
  const role = config.role;
  const runsSessions = role !== "api";
  const cleanup: (() => unknown)[] = [];
  const undo = async () => {
    for (const f of cleanup.reverse()) await Promise.resolve(f()).catch(() => {});
  };

  try {
    // Deno's spans of engine upgrades and webhook deliveries would record credentials in their URLs; they
    // are left unsampled (src/telemetry/tracing.ts), which only a parent-based sampler honours.
    if (runsSessions && telemetry().tracing && !samplerHonoursParent(config.otelTracesSampler)) {
      throw new ConfigError(
        "invalid configuration: OTEL_TRACES_SAMPLER must be parentbased_always_on (or parentbased_traceidratio, parentbased_always_off, always_off) when tracing is on in a process that runs sessions: the URLs of engine connections and webhook deliveries carry credentials, and only a parent-based sampler keeps Deno's spans of them out of the export",
      );
    }
    const unscrubbed = memoryScrubWarning({
      os: Deno.build.os,
      runsSessions,
      tunables: config.mallocTunables,
    });
    if (unscrubbed) logger.warn(unscrubbed);
    // The worker side's code, loaded only by the roles that run sessions.
    const workerSide = runsSessions ? await import("./worker_side.ts") : null;
    // First, so that a missing ffmpeg stops start-up before anything is opened.
    const { plane, owned } = workerSide
      ? await workerSide.startMediaPlane({ config, logger, clock, overrides: o.worker })
      : { plane: null, owned: false };
    if (plane && owned) cleanup.push(() => plane.close());
    const tokens = new TokenService(tokenSecrets(config, o.tokenSecret, logger), clock);
    const kv = o.kv ?? await openKv(config.kv);
    if (!o.kv) cleanup.push(() => kv.close());
    setSessionRetention(kv, config.sessionRetentionMs);
    if (!o.kv && role !== "worker" && sharesDatabase(config.kv)) {
      // The API's read caches read through a second handle, so they never queue behind this process's
      // writes and their fsyncs (src/kv/read_handle.ts). Closed after the caches have settled.
      const readKv = await openKv(config.kv);
      cleanup.push(() => readKv.close());
      setReadHandle(kv, readKv);
    }

    const engineCa: string[] = [...(o.caCerts ?? [])];
    if (config.engineCaFile) engineCa.push(await Deno.readTextFile(config.engineCaFile));
    let engine: Awaited<ReturnType<typeof startEmbeddedEngine>> | null = null;
    if (runsSessions && config.referenceEngine.enabled) {
      engine = await startEmbeddedEngine(config, logger);
      const e = engine;
      cleanup.push(() => e.engine.close());
      engineCa.push(engine.caPem);
    }
    const webhookCa = [...(o.webhookCaCerts ?? [])];
    if (config.webhooks.caFile) webhookCa.push(await Deno.readTextFile(config.webhooks.caFile));
    const webhookHttpClient = webhookCa.length ? Deno.createHttpClient({ caCerts: webhookCa }) : undefined;
    if (webhookHttpClient) cleanup.push(() => webhookHttpClient.close());
    const workerHttpClient = config.workerCaFile
      ? Deno.createHttpClient({ caCerts: [await Deno.readTextFile(config.workerCaFile)] })
      : undefined;
    if (workerHttpClient) cleanup.push(() => workerHttpClient.close());

    // The worker side.
    const side: WorkerSide | null = workerSide
      ? await workerSide.createWorkerSide({
        kv,
        clock,
        config,
        logger,
        instanceId,
        media: plane,
        engineCa,
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
    const auth = config.internalSecret ? new InternalAuth(config.internalSecret, clock) : null;
    const teardownMs = o.teardownTimeoutMs ?? TEARDOWN_TIMEOUT_MS;
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
            httpClient: workerHttpClient,
            startTimeoutMs: config.providerConnectTimeoutMs + config.media.firstFrameTimeoutMs + 10_000,
            endTimeoutMs: teardownMs + 10_000,
          }),
          directory: new WorkerDirectory({ kv, clock, auth, logger }),
        }
        : undefined,
      teardownTimeoutMs: teardownMs,
      remoteEndMarginMs: o.remoteEndMarginMs,
    });
    const sessions = role === "worker" ? null : new SessionService({
      kv,
      clock,
      config,
      host,
      tokens,
      logger,
      idempotencyWaitMs: o.idempotencyWaitMs,
      resolve: o.resolve,
    });

    // The demo page's backend holds a demo project's API key, minted now and kept in memory only.
    let demo: { apiKey: string; keyId: string; engine?: { url: string; token: string } } | null = null;
    // On one host it needs the embedded engine and media; an API process's page offers the vendor engines.
    if (config.demoPage && tokens.available && sessions && (role === "api" || (engine && media))) {
      const { plaintext, record } = await createApiKey(kv, {
        projectId: DEMO_PROJECT_ID,
        name: "demo page (in memory)",
        scopes: ["sessions:read", "sessions:write", "avatars:read", "avatars:write"],
        now: clock.now(),
        createdBy: instanceId,
      });
      demo = {
        apiKey: plaintext,
        keyId: record.key_id,
        engine: engine ? { url: engine.engine.url, token: engine.token } : undefined,
      };
      const keyId = record.key_id;
      cleanup.push(() => revokeApiKey(kv, DEMO_PROJECT_ID, keyId, clock.now()));
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
      api: sessions
        ? { sessions, demo: demo ? { apiKey: demo.apiKey, engine: demo.engine } : undefined }
        : undefined,
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
    const capacity = config.media.capacity;
    const lifecycle = new Lifecycle({
      kv,
      clock,
      config,
      logger,
      instanceId,
      role,
      worker: worker ?? undefined,
      advert: worker
        ? async () => ({
          url: config.workerUrl,
          public_url: publicUrl,
          capacity,
          free_slots: Math.max(0, capacity - worker!.size),
          transports: [...worker!.transports],
          signature: auth && config.workerUrl
            ? await auth.signAdvert(instanceId, config.workerUrl, publicUrl)
            : null,
        })
        : undefined,
      webhookHttpClient,
      fetch: o.fetch,
      resolve: o.resolve,
      random: o.random,
      tickMs: o.tickMs,
    });

    if (worker) {
      const w = worker;
      cleanup.push(observeWorker({
        workerId: instanceId,
        capacity: () => capacity,
        freeSlots: () => Math.max(0, capacity - w.size),
        live: () => w.liveKinds(),
      }));
    }

    let server: Deno.HttpServer<Deno.NetAddr> | null = null;
    let url: string | null = null;
    if (o.listen !== false) {
      server = Deno.serve(
        { hostname: config.host, port: config.port, signal: o.signal, onListen: () => {} },
        app.fetch,
      );
      const s = server;
      cleanup.push(() => s.shutdown());
      const hostPart = config.host.includes(":") ? `[${config.host}]` : config.host;
      url = `http://${hostPart === "0.0.0.0" ? "127.0.0.1" : hostPart}:${server.addr.port}`;
      // With PORT=0 and no SVC_PUBLIC_URL, the default public URL names port 0: use the bound port.
      if (config.port === 0 && config.publicUrl === "http://localhost:0") {
        publicUrl = `http://localhost:${server.addr.port}`;
        media?.setPublicUrl(publicUrl);
      }
    }
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
      await undo();
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
      referenceEngine: engine
        ? {
          url: engine.engine.url,
          caFile: engine.caFile,
          tokenFile: engine.tokenFile,
          token: engine.token,
          stats: () => engine!.engine.stats(),
        }
        : null,
      demoUrl: demo && url ? `${url}/demo` : null,
      close() {
        closing ??= (async () => {
          await server?.shutdown();
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
    await undo();
    throw err;
  }
}

/** The token signing secrets of this process (an ephemeral one is generated when allowed). */
function tokenSecrets(
  config: Config,
  override: string | null | undefined,
  logger: Logger,
): { current: string; previous: string | null } | null {
  if (override !== undefined) return override === null ? null : { current: override, previous: null };
  if (config.tokenSecret.kind === "configured") {
    return { current: config.tokenSecret.current, previous: config.tokenSecret.previous };
  }
  if (config.tokenSecret.kind === "ephemeral") {
    logger.warn(
      "SVC_TOKEN_SECRET is not set: using an ephemeral token signing secret; tokens will not survive a restart and other instances cannot verify them",
    );
    return { current: TokenService.generateEphemeralSecret(), previous: null };
  }
  logger.warn(
    "no token signing secret: session creation and client tokens will answer 503 SVC_TOKEN_SECRET_NOT_CONFIGURED",
  );
  return null;
}

async function startEmbeddedEngine(config: Config, logger: Logger) {
  const { loadOrCreateEngineTls, loadOrCreateToken, startReferenceEngine } = await import(
    "../../engine/mod.ts"
  );
  const dir = config.referenceEngine.dir;
  const tls = await loadOrCreateEngineTls(dir);
  const tokenFile = `${dir}/token`;
  const { token } = await loadOrCreateToken(tokenFile);
  const engine = await startReferenceEngine({
    hostname: "127.0.0.1",
    port: config.referenceEngine.port,
    tls: { certPem: tls.certPem, keyPem: tls.keyPem },
    authToken: token,
  });
  logger.info("reference engine listening", { url: engine.url, ca_file: tls.caFile, token_file: tokenFile });
  return { engine, caPem: tls.caPem, caFile: tls.caFile, tokenFile, token };
}
