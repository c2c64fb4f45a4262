/**
 * The application factory: every dependency (KV, clock, config, tokens, logger, the session service, the
 * worker and its transports' sockets) is passed in; the composition root (`src/app/compose.ts`) builds
 * them. The worker side comes through ports (`WorkerPort`, `TransportSockets`), so this module loads
 * nothing of the session runtime, the bridges or the media plane (`tests/architecture/` checks it).
 *
 * @module
 */
import { OpenAPIHono } from "@hono/zod-openapi";
import { RegExpRouter } from "hono/router/reg-exp-router";
import type { Clock } from "../clock.ts";
import type { Config } from "../config.ts";
import { ApiError } from "../errors.ts";
import type { Logger } from "../log.ts";
import type { SessionService } from "../sessions/service.ts";
import { registerInternalRoutes } from "./routes/internal.ts";
import type { InternalAuth } from "../fleet/internal_auth.ts";
import { INTERNAL_PATHS } from "../fleet/internal_api.ts";
import type { TokenService } from "../auth/tokens.ts";
import type { AppEnv } from "./app_env.ts";
import { errorResponse, toApiError, validationHook } from "./error_handler.ts";
import { apiKeyAuth } from "./middleware/auth.ts";
import { RateLimiter } from "../kv/rate_limit.ts";
import { apiKeyCacheFor } from "../kv/handle_state.ts";
import { requestContext } from "./middleware/request_context.ts";
import { boundedBody } from "./middleware/body.ts";
import { closeAfterCredentials } from "./middleware/close_after.ts";
import { methodGuard } from "./middleware/methods.ts";
import { noStore } from "./middleware/no_store.ts";
import { registerApiKeyRoutes } from "./routes/api_keys.ts";
import { registerDocsRoutes } from "./routes/docs.ts";
import { registerSessionRoutes } from "./routes/sessions.ts";
import { registerSessionListRoute } from "./routes/session_list.ts";
import { registerWebhookRoutes } from "./routes/webhooks.ts";
import { AVATAR_BODY_BYTES, registerAvatarRoutes } from "./routes/avatars.ts";
import { AvatarService } from "../avatars/service.ts";
import { registerWebhookDocs } from "./webhook_schemas.ts";
import { registerCatalogRoutes } from "./routes/catalog.ts";
import { registerSessionMetricsRoutes } from "./routes/session_metrics.ts";
import { registerTransportSockets } from "./transport_socket.ts";
import { type ArtLookup, type ProjectArtLookup, registerArtRoute } from "./routes/art.ts";
import { AVATAR_CATALOG, type AvatarCatalog } from "../vocabulary/avatar_catalog.ts";
import type { TransportSockets } from "../vocabulary/transports.ts";
import type { WorkerPort } from "../fleet/worker_port.ts";
import { type DemoDeps, registerDemoRoutes } from "./routes/demo.ts";
import { telemetry } from "../telemetry/state.ts";
import { apiMetrics } from "./middleware/api_metrics.ts";

/** Prefix of the worker's internal API (`INTERNAL_PATHS` of src/fleet/internal_api.ts). */
const INTERNAL_PREFIX = "/internal/";

/** Version of the API document. */
export const API_VERSION = "1.0.0";

/** Everything the app needs. */
export interface AppDeps {
  kv: Deno.Kv;
  clock: Clock;
  config: Config;
  tokens: TokenService;
  logger: Logger;
  /** Id of this process (the rate limiter publishes its demand under it). */
  instanceId: string;
  /**
   * Run once a request that carried provider credentials has its answer (the composition root's
   * `StackScrub`: the runtime's reads of that connection, on the event loop thread's stack).
   */
  afterCredentials?: () => Promise<void>;
  /** The API side (`SVC_ROLE` all or api): the `/v1` routes, the docs, the catalog, the demo page. */
  api?: {
    sessions: SessionService;
    /** The project avatars (built here from the KV and clock when not given). */
    avatars?: AvatarService;
    /** The demo page's backend (its API key and engine); the page is served only when given. */
    demo?: Omit<DemoDeps, "call">;
  };
  /** The worker side (`SVC_ROLE` all or worker): the transports' client sockets and the internal API. */
  worker?: {
    worker: WorkerPort;
    /**
     * The client sockets of the transports the media plane serves, when this process renders (one route
     * each).
     */
    sockets?: readonly TransportSockets[];
    /** The media plane's avatar catalog (the art it renders), served by `GET /v1/catalog`. */
    catalog?: AvatarCatalog;
    /** The avatars' art documents (`GET /media/v0/art/{avatar_id}`), when this process renders. */
    art?: ArtLookup;
    /** Project avatars' art for the sessions running them (see `routes/art.ts`). */
    projectArt?: ProjectArtLookup;
    /** Signs the internal API; without it (an `all` process no one calls) the internal API is not served. */
    auth?: InternalAuth;
  };
}

/** The built app. */
export interface App {
  app: OpenAPIHono<AppEnv>;
  /** The OpenAPI 3.1 document emitted from the route definitions. */
  document(): Record<string, unknown>;
  /**
   * Resolves once the control plane's background KV work (key-cache polls, rate-limit syncs) has
   * settled: await it before closing the KV handle.
   */
  settled(): Promise<void>;
}

/** The OpenAPI document's top-level fields. */
export const DOCUMENT_INFO = {
  openapi: "3.1.0",
  info: {
    title: "Conversational avatar session service",
    version: API_VERSION,
    description:
      "Creates and runs real-time sessions in which a conversation engine drives a rendered talking avatar. The six canonical endpoints are the `/v1/api-keys` create/revoke and `/v1/sessions` create/get/end/client-token operations; routes marked non-canonical are not part of the contract. Lifecycle events POSTed to a session's `webhook_url` are under `webhooks`. Errors: see /docs/errors.",
  },
};

/**
 * Builds the HTTP app of one process, with the API side, the worker side or both.
 *
 * @example An app with neither side (health check, error answers); `src/app/compose.ts` passes the sides
 * ```ts
 * import { createApp } from "./app.ts";
 * import { TokenService } from "../auth/tokens.ts";
 * import { systemClock } from "../clock.ts";
 * import { loadConfig } from "../config.ts";
 * import { silentLogger } from "../log.ts";
 *
 * const kv = await Deno.openKv(":memory:");
 * const config = loadConfig({ SVC_KV: ":memory:" });
 * const tokens = new TokenService(null, systemClock);
 * const deps = { kv, clock: systemClock, config, tokens, logger: silentLogger, instanceId: "example" };
 * const { app, settled } = createApp(deps);
 * (await app.request("/healthz")).status; // 200
 * await settled();
 * kv.close();
 * ```
 */
export function createApp(deps: AppDeps): App {
  const { kv, clock, config, logger } = deps;
  // Hono's RegExpRouter, named rather than left to SmartRouter's choice: it matches a request with one
  // regular expression (~0.5 µs), while the TrieRouter SmartRouter falls back to when one route shape is
  // beyond RegExpRouter cost ~2 µs per request. A route it cannot take (e.g. a static path beside a
  // parametric one at the same place) then fails every request at once, in every test, instead of
  // silently slowing all of them.
  const app = new OpenAPIHono<AppEnv>({ defaultHook: validationHook, router: new RegExpRouter() });

  app.openAPIRegistry.registerComponent("securitySchemes", "Bearer", {
    type: "http",
    scheme: "bearer",
    description: "`Authorization: Bearer <API key>`",
  });
  app.openAPIRegistry.registerComponent("securitySchemes", "ApiKey", {
    type: "apiKey",
    in: "header",
    name: "x-api-key",
    description: "`x-api-key: <API key>`",
  });

  app.use("*", requestContext(logger));
  // Before anything reads or rebuilds the request: a method no route serves answers 405 (or 404).
  app.use("*", methodGuard(() => app.routes, config.docsUrl));
  // Every route's body is bounded; the internal API's start body carries the public body plus its envelope.
  const internalMaxBodyBytes = config.maxBodyBytes + 8192;
  app.use(
    "*",
    boundedBody({
      maxBytes: (path) =>
        path.startsWith(INTERNAL_PREFIX)
          ? internalMaxBodyBytes
          : path === "/v1/avatars" || path === "/demo/api/avatars"
          ? Math.max(AVATAR_BODY_BYTES, config.maxBodyBytes)
          : config.maxBodyBytes,
      timeoutMs: config.bodyTimeoutMs,
    }),
  );
  // The requests whose bodies carry credentials end their connection (close_after.ts says why).
  app.use("/v1/sessions", closeAfterCredentials({ afterward: deps.afterCredentials }));
  app.use(INTERNAL_PATHS.start, closeAfterCredentials({ afterward: deps.afterCredentials }));
  app.use("/v1/*", noStore());
  app.use("/demo/api/*", noStore());
  app.get("/healthz", (c) => c.json({ status: "ok" }, 200));
  // The rate limiter of this API process (none when `SVC_RATE_LIMIT_PER_MINUTE=0`).
  const limiter = deps.api && config.rateLimit.perMinute > 0
    ? new RateLimiter({ kv, clock, policy: config.rateLimit, instanceId: deps.instanceId })
    : null;
  if (deps.api) {
    // Creates and rate-limit refusals (before authentication, so its refusals count); only with metrics on.
    if (telemetry().metrics) app.use("/v1/*", apiMetrics());
    app.use("/v1/*", apiKeyAuth({ kv, limiter, burst: config.rateLimit.burst }));
    registerApiKeyRoutes(app, { kv, clock });
    registerSessionRoutes(app, { sessions: deps.api.sessions });
    registerSessionListRoute(app, { kv, clock });
    registerSessionMetricsRoutes(app, { kv, live: deps.worker?.worker.metrics.snapshotOf });
    registerWebhookRoutes(app, { kv, clock });
    registerAvatarRoutes(app, {
      avatars: deps.api.avatars ??
        new AvatarService({ kv, clock, keepDeletedMs: 2 * config.lifetimes.maxDurationMs }),
    });
    registerWebhookDocs(app);
    registerCatalogRoutes(app, { catalog: deps.worker?.catalog ?? AVATAR_CATALOG });
  }
  if (deps.worker?.art) {
    registerArtRoute(app, { art: deps.worker.art, projectArt: deps.worker.projectArt, tokens: deps.tokens });
  }
  if (deps.worker?.sockets) {
    registerTransportSockets(app, { tokens: deps.tokens, sockets: deps.worker.sockets, logger });
  }
  if (deps.worker?.auth) {
    registerInternalRoutes(app, {
      worker: deps.worker.worker,
      auth: deps.worker.auth,
      maxBodyBytes: internalMaxBodyBytes,
    });
  }
  const document = () => app.getOpenAPI31Document(DOCUMENT_INFO) as unknown as Record<string, unknown>;
  if (deps.api) {
    const demo = deps.api.demo;
    registerDemoRoutes(app, demo ? { ...demo, call: (req) => Promise.resolve(app.fetch(req)) } : undefined);
    registerDocsRoutes(app, document);
  }

  app.notFound((c) => errorResponse(c, new ApiError("SVC_ROUTE_NOT_FOUND"), config.docsUrl));
  app.onError((err, c) => errorResponse(c, toApiError(err, logger, c.get("requestId")), config.docsUrl));
  const settled = async () => {
    await limiter?.settled();
    await apiKeyCacheFor(kv).settled();
  };
  return { app, document, settled };
}
