/**
 * The application factory: every dependency (KV, clock, config, runtime, tokens, logger) is passed in.
 *
 * @module
 */
import { OpenAPIHono } from "@hono/zod-openapi";
import type { Clock } from "../clock.ts";
import type { Config } from "../config.ts";
import { ApiError } from "../errors.ts";
import type { Logger } from "../log.ts";
import type { SessionRuntime } from "../runtime/session_runtime.ts";
import { SessionService } from "../sessions/service.ts";
import type { TokenService } from "../auth/tokens.ts";
import type { AppEnv } from "./env.ts";
import { errorResponse, toApiError, validationHook } from "./error_handler.ts";
import { apiKeyAuth } from "./middleware/auth.ts";
import { requestContext } from "./middleware/request_context.ts";
import { boundedBody } from "./middleware/body.ts";
import { noStore } from "./middleware/no_store.ts";
import { registerApiKeyRoutes } from "./routes/api_keys.ts";
import { registerDocsRoutes } from "./routes/docs.ts";
import { registerSessionRoutes } from "./routes/sessions.ts";
import { registerWebhookRoutes } from "./routes/webhooks.ts";
import { registerWebhookDocs } from "./webhook_schemas.ts";
import type { Resolver } from "../webhooks/url_guard.ts";
import { registerCatalogRoutes } from "./routes/catalog.ts";
import { registerMediaRoutes } from "./routes/media.ts";
import { CATALOG } from "../media/catalog.ts";
import type { MediaPlane } from "../media/plane.ts";
import { type DemoDeps, registerDemoRoutes } from "../demo/routes.ts";

/** Version of the API document. */
export const API_VERSION = "1.0.0";

/** Everything the app needs. */
export interface AppDeps {
  kv: Deno.Kv;
  clock: Clock;
  config: Config;
  runtime: SessionRuntime;
  tokens: TokenService;
  logger: Logger;
  /** Id of this process (owner of the sessions it runs). */
  instanceId: string;
  /** The media plane, when this process runs one (its WebSocket route is registered then). */
  media?: MediaPlane;
  /** The demo page's backend (its API key and engine); the page is served only when given. */
  demo?: Omit<DemoDeps, "call">;
  /** Overrides for tests (the spec's 10 s teardown timeout by default). */
  teardownTimeoutMs?: number;
  /** Overrides the margin a remote end waits for the owner process (see SessionService). */
  remoteEndMarginMs?: number;
  idempotencyWaitMs?: number;
  /** Resolver for the webhook_url check at creation (default: the system DNS). */
  resolve?: Resolver;
}

/** The built app and the services behind it. */
export interface App {
  app: OpenAPIHono<AppEnv>;
  sessions: SessionService;
  /** The OpenAPI 3.1 document emitted from the route definitions. */
  document(): Record<string, unknown>;
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
 * Builds the HTTP app.
 *
 * @example Usage
 * ```ts ignore
 * const { app } = createApp({ kv, clock: systemClock, config, runtime, tokens, logger, instanceId: "i1" });
 * Deno.serve(app.fetch);
 * ```
 */
export function createApp(deps: AppDeps): App {
  const { kv, clock, config, logger } = deps;
  const app = new OpenAPIHono<AppEnv>({ defaultHook: validationHook });
  const sessions = new SessionService({
    kv,
    clock,
    config,
    runtime: deps.runtime,
    tokens: deps.tokens,
    logger,
    instanceId: deps.instanceId,
    teardownTimeoutMs: deps.teardownTimeoutMs,
    remoteEndMarginMs: deps.remoteEndMarginMs,
    idempotencyWaitMs: deps.idempotencyWaitMs,
    resolve: deps.resolve,
    media: deps.media,
  });

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
  app.use("*", boundedBody({ maxBytes: config.maxBodyBytes, timeoutMs: config.bodyTimeoutMs }));
  app.use("/v1/*", noStore());
  app.use("/demo/api/*", noStore());
  app.use("/v1/*", apiKeyAuth({ kv, clock, rateLimit: config.rateLimit }));

  registerApiKeyRoutes(app, { kv, clock });
  registerSessionRoutes(app, { sessions });
  registerWebhookRoutes(app, { kv, clock });
  registerWebhookDocs(app);
  registerCatalogRoutes(app, { catalog: deps.media?.catalog ?? CATALOG });
  if (deps.media) registerMediaRoutes(app, { tokens: deps.tokens, plane: deps.media, logger });
  registerDemoRoutes(
    app,
    deps.demo ? { ...deps.demo, call: (req) => Promise.resolve(app.fetch(req)) } : undefined,
  );
  const document = () => app.getOpenAPI31Document(DOCUMENT_INFO) as unknown as Record<string, unknown>;
  registerDocsRoutes(app, document);

  app.notFound((c) => errorResponse(c, new ApiError("SVC_ROUTE_NOT_FOUND"), config.docsUrl));
  app.onError((err, c) => errorResponse(c, toApiError(err, logger, c.get("requestId")), config.docsUrl));
  return { app, sessions, document };
}
