/**
 * Test harness: a service composed by the one composition root (`src/app/compose.ts`, role `all`) over an
 * in-memory KV with an offset clock, not listening (requests are answered in-process unless `serve()` is
 * called), captured logs, and helpers to bootstrap keys and make requests.
 *
 * @module
 */
import { compose } from "../src/app/compose.ts";
import { workerOverrides } from "../src/app/worker_side.ts";
import { type Scope, SCOPES } from "../src/auth/scopes.ts";
import type { TokenService } from "../src/auth/tokens.ts";
import { OffsetClock } from "../src/clock.ts";
import { type Config, loadConfig } from "../src/config.ts";
import { createApiKey } from "../src/kv/api_keys.ts";
import { createLogger } from "../src/log.ts";
import type { ProviderBridge } from "../src/providers/types.ts";
import type { ProviderType } from "../src/providers/definitions/provider_types.ts";
import type { SessionMediaFactory, SessionRuntime } from "../src/worker/session_runtime.ts";
import type { SessionService } from "../src/sessions/service.ts";
import type { Lifecycle } from "../src/app/lifecycle.ts";
import type { Resolver } from "../src/webhooks/url_guard.ts";
import type { MediaPlane } from "../src/media/media_plane.ts";
import type { SessionWorker } from "../src/worker/session_worker.ts";

/** Options of {@link createHarness}. */
export interface HarnessOptions {
  /** Environment overrides (validated like the real environment). */
  env?: Record<string, string>;
  /** CA certificates trusted for engine connections. */
  caCerts?: string[];
  /** Use this KV instead of a fresh in-memory one (not closed by the harness). */
  kv?: Deno.Kv;
  /** Token secret; `null` for none. Default: a fixed test secret. */
  tokenSecret?: string | null;
  teardownTimeoutMs?: number;
  /** Margin a remote end waits for the owning process (default 5 s). */
  remoteEndMarginMs?: number;
  idempotencyWaitMs?: number;
  bridges?: Partial<Record<ProviderType, ProviderBridge>>;
  media?: SessionMediaFactory;
  /** Id of this "process" (default: a fresh one; share a KV between harnesses to model processes). */
  instanceId?: string;
  /** CA certificates trusted for webhook deliveries (a client is created and closed by the harness). */
  webhookCaCerts?: string[];
  /** fetch used for webhook deliveries. */
  fetch?: typeof fetch;
  /** Resolver for webhook destination checks (tests never reach the real DNS). */
  resolve?: Resolver;
  /** Jitter source of the retry schedule (default: none, so schedules are exact). */
  random?: () => number;
  /** Period of lifetime checks, lease renewals and reaper passes, wall-clock ms (default 20). */
  tickMs?: number;
  /**
   * Start the lifecycle machinery (owner lease, reaper, lifetime checks, webhook worker). Default false,
   * so tests that move the clock for other reasons are not ended by session lifetimes.
   */
  lifecycle?: boolean;
  /** A media plane: its factory runs session media and its WebSocket route is served (closed with the harness). */
  mediaPlane?: MediaPlane;
  /** How long an end answer waits for storage before answering 503 (default 2.5 s). */
  endRecordWaitMs?: number;
  /** Retry settings of the worker's end journal. */
  journal?: { firstDelayMs?: number; maxDelayMs?: number };
}

/** A JSON response. */
export interface JsonResponse {
  status: number;
  headers: Headers;
  // deno-lint-ignore no-explicit-any
  body: any;
  text: string;
}

/** The harness. */
export interface Harness {
  kv: Deno.Kv;
  clock: OffsetClock;
  config: Config;
  runtime: SessionRuntime;
  sessions: SessionService;
  /** This "process"'s session worker (start, end, reconcile of the sessions it runs). */
  worker: SessionWorker;
  lifecycle: Lifecycle;
  instanceId: string;
  tokens: TokenService;
  logs: string[];
  fetch(req: Request): Promise<Response>;
  /** Serves the app on 127.0.0.1 (port 0) until `close`; returns its base URL (http://…). */
  serve(): string;
  /** Bootstraps a key for a project (default: all scopes); returns its plaintext. */
  key(projectId: string, scopes?: Scope[]): Promise<string>;
  /** Makes an in-process request. `key` is sent as Bearer unless `via: "x-api-key"`. */
  req(
    method: string,
    path: string,
    options?: {
      key?: string;
      via?: "bearer" | "x-api-key";
      body?: unknown;
      headers?: Record<string, string>;
    },
  ): Promise<JsonResponse>;
  close(): Promise<void>;
}

/** A fixed secret for tests. */
export const TEST_TOKEN_SECRET = "test-secret-0123456789abcdef0123456789abcdef";

/** Builds the harness. */
export async function createHarness(options: HarnessOptions = {}): Promise<Harness> {
  const kv = options.kv ?? await Deno.openKv(":memory:");
  const clock = new OffsetClock();
  const config = loadConfig({
    SVC_KV: ":memory:",
    SVC_REFERENCE_ENGINE: "false",
    SVC_MEDIA_ENABLED: "false",
    SVC_DEMO_PAGE: "false",
    SVC_WEBHOOK_POLL_MS: "20",
    // An attempt that times out is retried 5 s later on the injected clock, which most tests never move: with
    // both cores busy a TLS handshake to a test receiver took over 2 s on CI. Tests of timeouts set their own.
    SVC_WEBHOOK_TIMEOUT_MS: "15000",
    ...options.env,
  });
  const instanceId = options.instanceId ?? `inst_test_${crypto.randomUUID().slice(0, 8)}`;
  const noDns: Resolver = () => Promise.resolve([]);
  const logs: string[] = [];
  const logger = createLogger({ level: "debug", sink: (l) => logs.push(l) });
  const secret = options.tokenSecret === undefined ? TEST_TOKEN_SECRET : options.tokenSecret;
  const service = await compose(config, {
    logger,
    clock,
    instanceId,
    kv,
    listen: false,
    lifecycle: options.lifecycle === true,
    caCerts: options.caCerts,
    webhookCaCerts: options.webhookCaCerts,
    worker: workerOverrides({
      bridges: options.bridges,
      mediaFactory: options.media,
      mediaPlane: options.mediaPlane,
    }),
    tokenSecret: secret,
    fetch: options.fetch,
    resolve: options.resolve ?? noDns,
    random: options.random ?? (() => 0),
    tickMs: options.tickMs ?? 20,
    teardownTimeoutMs: options.teardownTimeoutMs,
    remoteEndMarginMs: options.remoteEndMarginMs,
    idempotencyWaitMs: options.idempotencyWaitMs,
    endRecordWaitMs: options.endRecordWaitMs,
    journal: options.journal,
  });
  const { app, tokens } = service;
  // The composed process names its worker side through ports (src/app/worker_side_port.ts); these are
  // the classes behind them.
  const runtime = service.runtime as SessionRuntime;
  const sessions = service.sessions!;
  const worker = service.worker as SessionWorker;
  const lifecycle = service.lifecycle;
  const fetch = async (req: Request) => await app.fetch(req);
  let server: Deno.HttpServer<Deno.NetAddr> | null = null;
  return {
    kv,
    clock,
    config,
    runtime,
    sessions,
    worker,
    lifecycle,
    instanceId,
    tokens,
    logs,
    fetch,
    serve() {
      server ??= Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, app.fetch);
      return `http://127.0.0.1:${server.addr.port}`;
    },
    async key(projectId, scopes = [...SCOPES]) {
      const { plaintext } = await createApiKey(kv, {
        projectId,
        name: "test",
        scopes,
        now: clock.now(),
        createdBy: "bootstrap",
      });
      return plaintext;
    },
    async req(method, path, o = {}) {
      const headers = new Headers(o.headers);
      if (o.key !== undefined) {
        if (o.via === "x-api-key") headers.set("x-api-key", o.key);
        else headers.set("authorization", `Bearer ${o.key}`);
      }
      let body: BodyInit | undefined;
      if (o.body !== undefined) {
        body = typeof o.body === "string" ? o.body : JSON.stringify(o.body);
        if (!headers.has("content-type")) headers.set("content-type", "application/json");
      }
      const res = await fetch(new Request(`http://svc.test${path}`, { method, headers, body }));
      const text = await res.text();
      let parsed: unknown = undefined;
      try {
        parsed = text ? JSON.parse(text) : undefined;
      } catch { /* not JSON */ }
      return { status: res.status, headers: res.headers, body: parsed, text };
    },
    async close() {
      await service.dispose();
      await server?.shutdown();
      // A media plane given to the harness is closed with it (its spare encoders stop).
      await options.mediaPlane?.close();
      if (!options.kv) kv.close();
    },
  };
}
