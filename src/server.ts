/**
 * Assembles and runs one service process: KV, tokens, the in-process reference engine (embedded
 * default), the media plane, the session runtime, the HTTP app, and the lifecycle machinery (owner lease,
 * reaper, session lifetimes, webhook delivery). Used by `main.ts` and by tests that need a real server.
 *
 * @module
 */
import { createApp } from "./api/app.ts";
import { TokenService } from "./auth/tokens.ts";
import { type Clock, systemClock } from "./clock.ts";
import type { Config } from "./config.ts";
import { createLogger, type Logger } from "./log.ts";
import { createConnectors } from "./providers/registry.ts";
import { type SessionMediaFactory, SessionRuntime } from "./runtime/session_runtime.ts";
import { randomBase62 } from "./ids.ts";
import { Lifecycle } from "./lifecycle.ts";
import { MediaPlane, type MediaPlaneOptions } from "./media/plane.ts";
import { createApiKey, revokeApiKey } from "./kv/api_keys.ts";
import type { ReferenceEngineStats } from "../engine/mod.ts";

/** Project of the demo page's sessions. */
export const DEMO_PROJECT_ID = "proj_demo";

/** A running service. */
export interface RunningService {
  /** Base URL the HTTP server listens on (loopback form). */
  url: string;
  /** The reference engine, when the embedded default runs one. */
  referenceEngine:
    | { url: string; caFile: string; tokenFile: string; token: string; stats(): ReferenceEngineStats }
    | null;
  /** Id of this process (its owner lease). */
  instanceId: string;
  /** The media plane, when this process runs one. */
  media: MediaPlane | null;
  /** The session runtime (live sessions of this process). */
  runtime: SessionRuntime;
  /** Owner lease, reaper, webhook worker. */
  lifecycle: Lifecycle;
  /** URL of the demo page, when served. */
  demoUrl: string | null;
  /**
   * Graceful stop: stops accepting requests, ends every live session (`service_shutdown`), delivers the
   * events due within `SVC_SHUTDOWN_TIMEOUT_S`, gives the owner lease up, closes KV. Idempotent.
   */
  close(): Promise<void>;
}

/** Opens the configured Deno KV (creating the parent folder of a file path). */
export async function openKv(location: string): Promise<Deno.Kv> {
  if (location !== ":memory:" && !/^https?:\/\//.test(location)) {
    const dir = location.includes("/") ? location.slice(0, location.lastIndexOf("/")) : "";
    if (dir) await Deno.mkdir(dir, { recursive: true });
  }
  return await Deno.openKv(location);
}

/** Starts a service process from a configuration. */
export async function startService(
  config: Config,
  options: {
    logger?: Logger;
    clock?: Clock;
    signal?: AbortSignal;
    /** Overrides of the media plane's options (tests and the bench). */
    media?: Partial<Pick<MediaPlaneOptions, "renderer" | "limits" | "observer">>;
    /**
     * A media factory used instead of the media plane (tests and the soak simulate media clients with it);
     * no ffmpeg is started then.
     */
    mediaFactory?: SessionMediaFactory;
    /** Period of lifetime checks, lease renewals and reaper passes (see {@link Lifecycle}). */
    tickMs?: number;
  } = {},
): Promise<RunningService> {
  const logger = options.logger ?? createLogger({ level: config.logLevel });
  const clock = options.clock ?? systemClock;
  const instanceId = `inst_${randomBase62(12)}`;

  // First, so that a missing ffmpeg stops start-up before anything is opened.
  const media = config.media.enabled && !options.mediaFactory
    ? await MediaPlane.create({ config: config.media, publicUrl: config.publicUrl, logger, ...options.media })
    : null;
  if (media) {
    logger.info("media plane ready", {
      ffmpeg: media.ffmpegVersion,
      format: media.renderer.format,
      capacity: media.capacity,
    });
  }

  let secrets: { current: string; previous: string | null } | null = null;
  if (config.tokenSecret.kind === "configured") {
    secrets = { current: config.tokenSecret.current, previous: config.tokenSecret.previous };
  } else if (config.tokenSecret.kind === "ephemeral") {
    secrets = { current: TokenService.generateEphemeralSecret(), previous: null };
    logger.warn(
      "SVC_TOKEN_SECRET is not set: using an ephemeral token signing secret; tokens will not survive a restart and other instances cannot verify them",
    );
  } else {
    logger.warn(
      "no token signing secret: session creation and client tokens will answer 503 SVC_TOKEN_SECRET_NOT_CONFIGURED",
    );
  }
  const tokens = new TokenService(secrets, clock);

  const kv = await openKv(config.kv);
  const caCerts: string[] = [];
  if (config.engineCaFile) caCerts.push(await Deno.readTextFile(config.engineCaFile));

  let engine: Awaited<ReturnType<typeof startEmbeddedEngine>> | null = null;
  if (config.referenceEngine.enabled) {
    engine = await startEmbeddedEngine(config, logger);
    caCerts.push(engine.caPem);
  }
  const httpClient = caCerts.length ? Deno.createHttpClient({ caCerts }) : undefined;
  const webhookHttpClient = config.webhooks.caFile
    ? Deno.createHttpClient({ caCerts: [await Deno.readTextFile(config.webhooks.caFile)] })
    : undefined;

  const runtime = new SessionRuntime({
    connectors: createConnectors({ config, logger, clock, caCerts, httpClient }),
    logger,
    media: options.mediaFactory ?? media?.factory,
  });
  // The demo page's backend holds a demo project's API key, minted now and kept in memory only.
  let demo: { apiKey: string; keyId: string; engine: { url: string; token: string } } | null = null;
  if (config.demoPage && engine && media && tokens.available) {
    const { plaintext, record } = await createApiKey(kv, {
      projectId: DEMO_PROJECT_ID,
      name: "demo page (in memory)",
      scopes: ["sessions:read", "sessions:write"],
      now: clock.now(),
      createdBy: instanceId,
    });
    demo = {
      apiKey: plaintext,
      keyId: record.key_id,
      engine: { url: engine.engine.url, token: engine.token },
    };
  }
  const { app, sessions } = createApp({
    kv,
    clock,
    config,
    runtime,
    tokens,
    logger,
    instanceId,
    media: media ?? undefined,
    demo: demo ? { apiKey: demo.apiKey, engine: demo.engine } : undefined,
  });
  const lifecycle = new Lifecycle({
    kv,
    clock,
    config,
    logger,
    instanceId,
    runtime,
    sessions,
    webhookHttpClient,
    tickMs: options.tickMs,
  });
  await lifecycle.start();

  const server = Deno.serve({
    hostname: config.host,
    port: config.port,
    signal: options.signal,
    onListen: () => {},
  }, app.fetch);
  const host = config.host.includes(":") ? `[${config.host}]` : config.host;
  const url = `http://${host === "0.0.0.0" ? "127.0.0.1" : host}:${server.addr.port}`;
  // With PORT=0 and no SVC_PUBLIC_URL, the default public URL names port 0: use the bound port.
  if (config.port === 0 && config.publicUrl === "http://localhost:0") {
    media?.setPublicUrl(`http://localhost:${server.addr.port}`);
  }
  logger.info("listening", {
    url,
    ...(demo ? { demo: `${url}/demo` } : {}),
    public_url: config.publicUrl,
    kv: /^https?:/.test(config.kv) ? "remote" : config.kv,
  });

  let closing: Promise<void> | null = null;
  return {
    url,
    referenceEngine: engine
      ? {
        url: engine.engine.url,
        caFile: engine.caFile,
        tokenFile: engine.tokenFile,
        token: engine.token,
        stats: () => engine!.engine.stats(),
      }
      : null,
    instanceId,
    media,
    runtime,
    lifecycle,
    demoUrl: demo ? `${url}/demo` : null,
    close() {
      closing ??= (async () => {
        await server.shutdown();
        await lifecycle.shutdown();
        await runtime.shutdown();
        await engine?.engine.close();
        if (demo) await revokeApiKey(kv, DEMO_PROJECT_ID, demo.keyId, clock.now()).catch(() => {});
        httpClient?.close();
        webhookHttpClient?.close();
        kv.close();
      })();
      return closing;
    },
  };
}

async function startEmbeddedEngine(config: Config, logger: Logger) {
  const { loadOrCreateEngineTls, loadOrCreateToken, startReferenceEngine } = await import("../engine/mod.ts");
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
