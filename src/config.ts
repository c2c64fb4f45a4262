/**
 * Service configuration: the one module that reads environment variables.
 *
 * Every variable is validated with zod; {@link loadConfig} throws a {@link ConfigError} whose message is one
 * line naming the offending variable, and `main.ts` stops start-up with it. Defaults are the embedded
 * defaults documented in `docs/configuration.md`.
 *
 * @module
 */
import { z } from "zod";
import { PROVIDER_TYPES, PROVIDERS, type ProviderSettings } from "./providers/definitions/provider_types.ts";
import { bool, int, type Settings, type SettingValues } from "./settings.ts";

/**
 * The default delays of webhook deliveries after each failed attempt (Standard Webhooks' example schedule):
 * 5 s … 24 h (`SVC_WEBHOOK_RETRY_SCHEDULE`; see `src/webhooks/schedule.ts`).
 */
export const DEFAULT_RETRY_SCHEDULE = "5s,5m,30m,2h,5h,10h,14h,20h,24h";

const UNIT_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3600_000 };

/** Longest single delay accepted: 48 hours. */
export const MAX_RETRY_DELAY_MS = 48 * 3600_000;

/**
 * Parses `5s,5m,30m,2h` into milliseconds. Throws an Error (message safe to show) when an entry is not a
 * duration, a delay is outside 1 ms..48 h, delays decrease, or there are not 1..20 of them.
 */
export function parseRetrySchedule(text: string): number[] {
  const parts = text.split(",").map((p) => p.trim());
  if (parts.length < 1 || parts.length > 20) throw new Error("must list 1..20 delays");
  const out = parts.map((p) => {
    const m = /^(\d+)(ms|s|m|h)$/.exec(p);
    if (!m) throw new Error("must be comma-separated durations such as 5s,5m,2h");
    const ms = Number(m[1]) * UNIT_MS[m[2]];
    if (ms < 1 || ms > MAX_RETRY_DELAY_MS) throw new Error("each delay must be 1ms..48h");
    return ms;
  });
  for (let i = 1; i < out.length; i++) if (out[i] < out[i - 1]) throw new Error("delays must not decrease");
  return out;
}

/** How the token signing secret is provided. */
export type TokenSecretSetting =
  | { kind: "configured"; current: string; previous: string | null }
  | { kind: "ephemeral" }
  | { kind: "none" };

/** What a process may run: `SVC_ROLE`. */
export const ROLES = ["all", "api", "worker"] as const;
/** What a process runs: `SVC_ROLE`. */
export type Role = (typeof ROLES)[number];

/** The parsed, validated configuration of one service process. */
export interface Config {
  /** `all`: API and sessions in one process; `api`: the HTTP API only; `worker`: a session host. */
  role: Role;
  /**
   * Shared by API processes and workers: authenticates every API → worker call and every worker
   * registration. Null in an `all` process that advertises no worker URL.
   */
  internalSecret: string | null;
  /** Where API processes reach this worker's internal API (null: other processes cannot call it). */
  workerUrl: string | null;
  /** Extra CA certificate (PEM file) trusted for API → worker calls over https, or null. */
  workerCaFile: string | null;
  /** TCP port of the HTTP server. */
  port: number;
  /** Interface the HTTP server binds to. */
  host: string;
  /** Deno KV location: a file path, `:memory:`, or a KV Connect URL; null: the Deno Deploy app's database. */
  kv: string | null;
  /** Public origin of this service (media-plane URLs are built from it). */
  publicUrl: string;
  /** Public https base of the documentation pages; `doc_url` = `${docsUrl}/errors#CODE`. */
  docsUrl: string;
  /** Client/session token signing secret. */
  tokenSecret: TokenSecretSetting;
  /** Per-API-key request rate limit, fleet-wide: sustained rate (0 = off) and burst. */
  rateLimit: { perMinute: number; burst: number };
  /** Ceiling of concurrently live sessions per project. */
  maxConcurrentSessions: number;
  /** Deadline for connecting a session's conversation engine (TCP + TLS + upgrade + handshake). */
  providerConnectTimeoutMs: number;
  /** Extra CA certificate (PEM file) trusted for engine connections, or null. */
  engineCaFile: string | null;
  /** The in-process reference engine of the embedded default. */
  referenceEngine: { enabled: boolean; port: number; dir: string };
  /**
   * Each provider type's settings (where its engine lives: `SVC_VENDOR*`), as its provider definition declares
   * them (`src/providers/definitions/<type>.ts`, `settings`; see docs/providers.md).
   */
  providers: ProviderSettings;
  /** Minimum level of log lines written. */
  logLevel: "debug" | "info" | "warn" | "error";
  /** Largest accepted request body, bytes. */
  maxBodyBytes: number;
  /** Deadline for receiving a whole request body, from the request's start, ms. */
  bodyTimeoutMs: number;
  /** When a live session ends by itself (measured from `started_at` / the last client leaving). */
  lifetimes: { joinWindowMs: number; idleTimeoutMs: number; maxDurationMs: number };
  /** Time-to-live of this process's owner lease (renewed every third of it). */
  ownerLeaseMs: number;
  /** Budget of a graceful shutdown: ending the sessions and delivering their events. */
  shutdownTimeoutMs: number;
  /** How long ended sessions (records and listing entries) are kept after they end; null: forever. */
  sessionRetentionMs: number | null;
  /**
   * `OTEL_TRACES_SAMPLER` as set (null: unset), read to check that a process running sessions with
   * tracing on uses a parent-based sampler (see `src/telemetry/tracing.ts`).
   */
  otelTracesSampler: string | null;
  /**
   * `GLIBC_TUNABLES` as the process was started with (null: unset), read to warn when a process that runs
   * sessions does not scrub the memory it frees (`src/auth/memory_scrub.ts`).
   */
  mallocTunables: string | null;
  /** Lifecycle webhook delivery. */
  webhooks: {
    timeoutMs: number;
    retrySchedule: number[];
    pollMs: number;
    concurrency: number;
    allowPrivate: boolean;
    caFile: string | null;
  };
  /** The media plane (rendering, encoding, the media WebSocket). */
  media: MediaConfig;
  /** The SFU (Janus) and TURN of the `webrtc_sfu` transport; null when no SFU is configured. */
  sfu: SfuConfig | null;
  /** Serve the demo page (needs the reference engine and the media plane). */
  demoPage: boolean;
}

/** Settings of the media plane. */
export interface MediaConfig {
  /** Whether this process renders and streams sessions (needs ffmpeg). */
  enabled: boolean;
  /** The ffmpeg executable. */
  ffmpegPath: string;
  /** Output width and height in pixels (even). */
  width: number;
  height: number;
  /** Frames per second (divides both 48000 and 90000). */
  fps: number;
  /** Concurrent renders this process accepts; more answer 503 SVC_RENDER_CAPACITY. */
  capacity: number;
  /** Deadline for a session's first encoded frame; past it, 504 SVC_RENDER_TIMEOUT. */
  firstFrameTimeoutMs: number;
  /** Memory for the shared cache of composited frames, bytes. */
  frameCacheBytes: number;
  /**
   * Video encoders kept started ahead and idle, so a video client does not wait ~170 ms for one to start
   * (`media/encoder_spares.ts`; 0: none). Optional for planes built by hand (default none there).
   */
  encoderSpares?: number;
  /**
   * Speech held back at the start of a response so lip sync can look ahead, ms (0–80, default 0: a frame's
   * visemes are decided at its deadline with the look-ahead that has arrived, and the sound is not delayed).
   */
  lipSyncHoldMs: number;
  /**
   * Which libopus encodes the sessions' audio: `auto` (the system's libopus through FFI where it loads,
   * else the WebAssembly build), `native` (start-up fails without it) or `wasm`.
   */
  opusEncoder: "auto" | "native" | "wasm";
}

/** Settings of the `webrtc_sfu` transport (see docs/configuration.md, "WebRTC through an SFU"). */
export interface SfuConfig {
  /** Janus's WebSocket API as this worker reaches it (`ws://` or `wss://`). */
  janusUrl: string;
  /** Janus's `api_secret` and the Streaming/VideoRoom plugins' `admin_key` (null in an `api` process). */
  adminSecret: string | null;
  /** Public base of `sfu_endpoint` (the worker's signalling WebSocket); null: `SVC_PUBLIC_URL`. */
  publicUrl: string | null;
  /** Address of Janus's RTP ingest (mountpoint ports) as this worker reaches it. */
  rtpHost: string;
  /** Address of this worker as Janus reaches it, for the microphone's forwarded RTP. */
  workerRtpHost: string;
  /** How long a session waits for a lost Janus to come back before it ends (`sfu_failed`). */
  recoveryTimeoutMs: number;
  /**
   * A PEM file of CA certificates trusted for a `wss://` Janus beyond the default roots (Janus behind TLS
   * with a private CA); null: the default roots only. Read at start-up (`readSfuCa`).
   */
  caFile: string | null;
  /** STUN/TURN URLs returned in `stream_metadata.ice_servers`. */
  iceUrls: string[];
  /** coturn's `static-auth-secret` (time-limited TURN credentials); null without TURN URLs. */
  turnSecret: string | null;
}

/**
 * Raised when a process cannot start as configured (e.g. the ffmpeg it names is missing: the media
 * plane's `FfmpegUnavailableError`); the message is one line. `main.ts` prints it and exits 1.
 */
export class StartupError extends Error {
  override name = "StartupError";
}

/** Raised for an invalid environment; the message is one line and names the variable. */
export class ConfigError extends StartupError {
  override name = "ConfigError";
}

const secret = z.string().min(32, "must be at least 32 characters (e.g. `openssl rand -base64 48`)");
const evenSize = int(128, 1920).refine((n) => n % 2 === 0, "must be even");
const fps = int(5, 60).refine(
  (n) => 48_000 % n === 0 && 90_000 % n === 0,
  "must divide 48000 and 90000 (e.g. 24, 25, 30, 50, 60)",
);
const httpUrl = z.url({ protocol: /^https?$/ }).transform((u) => u.replace(/\/+$/, ""));

/** Each variable: its schema and its default (as the string a user would write). */
const VARIABLES = {
  SVC_ROLE: {
    schema: z.enum(ROLES, { error: "must be all, api or worker" }),
    default: "all",
  },
  SVC_INTERNAL_SECRET: { schema: secret, default: undefined },
  SVC_WORKER_URL: {
    schema: z.string().refine(isWorkerUrl, "must be an https:// URL, or http:// on a loopback address")
      .transform((u) => u.replace(/\/+$/, "")),
    default: undefined,
  },
  SVC_WORKER_CA_FILE: { schema: z.string().min(1), default: undefined },
  PORT: { schema: int(0, 65535), default: "8787" },
  SVC_HOST: { schema: z.string().min(1), default: "127.0.0.1" },
  SVC_KV: { schema: z.string().min(1), default: undefined },
  SVC_PUBLIC_URL: { schema: httpUrl, default: undefined },
  SVC_DOCS_URL: {
    schema: z.url({ protocol: /^https$/, error: "must be an https:// URL" }).transform((u) =>
      u.replace(/\/+$/, "")
    ),
    default: undefined,
  },
  SVC_TOKEN_SECRET: { schema: secret, default: undefined },
  SVC_TOKEN_SECRET_PREVIOUS: { schema: secret, default: undefined },
  SVC_TOKEN_SECRET_EPHEMERAL: { schema: bool, default: "true" },
  SVC_RATE_LIMIT_PER_MINUTE: { schema: int(0, 100_000_000), default: "600" },
  SVC_RATE_LIMIT_BURST: { schema: int(1, 100_000), default: "60" },
  SVC_MAX_CONCURRENT_SESSIONS: { schema: int(1, 100_000), default: "10" },
  SVC_PROVIDER_CONNECT_TIMEOUT_MS: { schema: int(100, 60_000), default: "8000" },
  SVC_ENGINE_CA_FILE: { schema: z.string().min(1), default: undefined },
  SVC_REFERENCE_ENGINE: { schema: bool, default: "true" },
  SVC_REFERENCE_ENGINE_PORT: { schema: int(0, 65535), default: "8788" },
  SVC_REFERENCE_ENGINE_DIR: { schema: z.string().min(1), default: ".data/reference-engine" },
  SVC_LOG_LEVEL: { schema: z.enum(["debug", "info", "warn", "error"]), default: "info" },
  SVC_MAX_BODY_BYTES: { schema: int(1024, 1_048_576), default: "65536" },
  SVC_BODY_TIMEOUT_S: { schema: int(1, 600), default: "30" },
  SVC_SESSION_JOIN_WINDOW_S: { schema: int(5, 3600), default: "120" },
  SVC_SESSION_IDLE_TIMEOUT_S: { schema: int(5, 3600), default: "60" },
  SVC_SESSION_MAX_DURATION_S: { schema: int(60, 86_400), default: "3600" },
  SVC_OWNER_LEASE_S: { schema: int(3, 600), default: "30" },
  SVC_SHUTDOWN_TIMEOUT_S: { schema: int(1, 300), default: "20" },
  SVC_SESSION_RETENTION_DAYS: { schema: int(0, 36_500), default: "30" },
  OTEL_TRACES_SAMPLER: { schema: z.string().max(64), default: undefined },
  GLIBC_TUNABLES: { schema: z.string().max(4096), default: undefined },
  SVC_WEBHOOK_TIMEOUT_MS: { schema: int(200, 30_000), default: "10000" },
  SVC_WEBHOOK_RETRY_SCHEDULE: {
    schema: z.string().transform((v, ctx) => {
      try {
        return parseRetrySchedule(v);
      } catch (err) {
        ctx.addIssue({ code: "custom", message: (err as Error).message });
        return z.NEVER;
      }
    }),
    default: DEFAULT_RETRY_SCHEDULE,
  },
  SVC_WEBHOOK_POLL_MS: { schema: int(10, 60_000), default: "1000" },
  SVC_WEBHOOK_CONCURRENCY: { schema: int(1, 64), default: "8" },
  SVC_WEBHOOK_ALLOW_PRIVATE: { schema: bool, default: "false" },
  SVC_WEBHOOK_CA_FILE: { schema: z.string().min(1), default: undefined },
  SVC_MEDIA_ENABLED: { schema: bool, default: "true" },
  SVC_FFMPEG_PATH: { schema: z.string().min(1), default: "ffmpeg" },
  SVC_RENDER_WIDTH: { schema: evenSize, default: "512" },
  SVC_RENDER_HEIGHT: { schema: evenSize, default: "512" },
  SVC_RENDER_FPS: { schema: fps, default: "25" },
  SVC_RENDER_CAPACITY: { schema: int(1, 10_000), default: "20" },
  SVC_RENDER_FIRST_FRAME_TIMEOUT_MS: { schema: int(500, 60_000), default: "5000" },
  SVC_RENDER_FRAME_CACHE_MB: { schema: int(16, 65_536), default: "256" },
  SVC_RENDER_ENCODER_SPARES: { schema: int(0, 8), default: "1" },
  SVC_LIPSYNC_HOLD_MS: { schema: int(0, 80), default: "0" },
  SVC_OPUS_ENCODER: {
    schema: z.enum(["auto", "native", "wasm"], { error: "must be auto, native or wasm" }),
    default: "auto",
  },
  SVC_DEMO_PAGE: { schema: bool, default: "true" },
  SVC_SFU_JANUS_URL: {
    schema: z.url({ protocol: /^wss?$/, error: "must be a ws:// or wss:// URL (Janus's WebSocket API)" }),
    default: undefined,
  },
  SVC_SFU_ADMIN_SECRET: { schema: z.string().min(16, "must be at least 16 characters"), default: undefined },
  SVC_SFU_PUBLIC_URL: { schema: httpUrl, default: undefined },
  SVC_SFU_RTP_HOST: {
    schema: z.string().regex(/^[\w.:-]+$/, "must be a host name or IP address"),
    default: undefined,
  },
  SVC_SFU_WORKER_RTP_HOST: {
    schema: z.string().regex(/^[\w.:-]+$/, "must be a host name or IP address"),
    default: "127.0.0.1",
  },
  SVC_SFU_RECOVERY_TIMEOUT_S: { schema: int(1, 600), default: "15" },
  SVC_SFU_CA_FILE: { schema: z.string().min(1), default: undefined },
  SVC_TURN_URLS: {
    schema: z.string().transform((v) => v.split(",").map((u) => u.trim()).filter(Boolean)).pipe(
      z.array(z.string().regex(/^(stun|stuns|turn|turns):[^\s,]+$/, "must list stun:, turn: or turns: URLs")),
    ),
    default: undefined,
  },
  SVC_TURN_SECRET: { schema: z.string().min(16, "must be at least 16 characters"), default: undefined },
} as const;

/** True for https URLs, and http URLs on a loopback host (a worker's internal API carries credentials). */
function isWorkerUrl(value: string): boolean {
  let u: URL;
  try {
    u = new URL(value);
  } catch {
    return false;
  }
  if (/\s/.test(value) || u.username || u.password || u.search || u.hash) return false;
  if (u.protocol === "https:") return true;
  if (u.protocol !== "http:") return false;
  const host = u.hostname.replace(/^\[|\]$/g, "");
  return host === "localhost" || host === "::1" || /^127\.\d+\.\d+\.\d+$/.test(host);
}

/**
 * Names of every environment variable the service reads: its own, then each provider type's (declared by
 * its provider definition).
 */
export const CONFIG_VARIABLES: readonly string[] = [
  ...Object.keys(VARIABLES),
  ...PROVIDER_TYPES.flatMap((t) => Object.values(PROVIDERS[t].settings as Settings).map((s) => s.env)),
];

type Parsed = { [K in keyof typeof VARIABLES]: z.output<(typeof VARIABLES)[K]["schema"]> | undefined };

/** Parses one variable (unset or empty: its default; no default: undefined). */
function parseVariable(
  env: Record<string, string | undefined>,
  name: string,
  spec: { schema: z.ZodType; default: string | undefined },
): unknown {
  const raw = env[name] === undefined || env[name] === "" ? spec.default : env[name];
  if (raw === undefined) return undefined;
  const r = spec.schema.safeParse(raw);
  if (!r.success) {
    const reason = r.error.issues[0]?.message ?? "invalid value";
    // Never echo the value: it may be a secret.
    throw new ConfigError(`invalid configuration: ${name} ${reason}`);
  }
  return r.data;
}

function parseAll(env: Record<string, string | undefined>): Parsed {
  const out: Record<string, unknown> = {};
  for (const [name, spec] of Object.entries(VARIABLES)) out[name] = parseVariable(env, name, spec);
  return out as Parsed;
}

/** One provider type's settings, as its provider definition declares them. */
function settingsOf<T extends Settings>(
  env: Record<string, string | undefined>,
  settings: T,
): SettingValues<T> {
  const out: Record<string, unknown> = {};
  for (const [key, s] of Object.entries(settings)) out[key] = parseVariable(env, s.env, s);
  return out as SettingValues<T>;
}

/** Every provider type's settings. */
function providerSettings(env: Record<string, string | undefined>): ProviderSettings {
  return Object.fromEntries(
    PROVIDER_TYPES.map((t) => [t, settingsOf(env, PROVIDERS[t].settings as Settings)]),
  ) as ProviderSettings;
}

/**
 * Parses and validates a configuration from an environment map.
 *
 * @example Usage
 * ```ts
 * import { loadConfig } from "./config.ts";
 * const config = loadConfig({ PORT: "0", SVC_KV: ":memory:" });
 * console.log(config.port); // 0
 * ```
 */
export function loadConfig(env: Record<string, string | undefined>): Config {
  const v = parseAll(env);
  const port = v.PORT!;
  const publicUrl = v.SVC_PUBLIC_URL ?? `http://localhost:${port}`;
  const docsUrl = v.SVC_DOCS_URL ?? `${publicUrl.replace(/^http:/, "https:")}/docs`;
  const tokenSecret: TokenSecretSetting = v.SVC_TOKEN_SECRET
    ? {
      kind: "configured",
      current: v.SVC_TOKEN_SECRET,
      previous: v.SVC_TOKEN_SECRET_PREVIOUS ?? null,
    }
    : v.SVC_TOKEN_SECRET_EPHEMERAL
    ? { kind: "ephemeral" }
    : { kind: "none" };
  if (v.SVC_TOKEN_SECRET_PREVIOUS && !v.SVC_TOKEN_SECRET) {
    throw new ConfigError(
      "invalid configuration: SVC_TOKEN_SECRET_PREVIOUS is set but SVC_TOKEN_SECRET is not",
    );
  }
  const role = v.SVC_ROLE!;
  if (role !== "all") {
    if (!v.SVC_INTERNAL_SECRET) {
      throw new ConfigError(
        `invalid configuration: SVC_INTERNAL_SECRET is required when SVC_ROLE=${role} (shared by API processes and workers)`,
      );
    }
    if (!v.SVC_TOKEN_SECRET) {
      throw new ConfigError(
        `invalid configuration: SVC_TOKEN_SECRET is required when SVC_ROLE=${role} (tokens minted by API processes are verified by workers)`,
      );
    }
  }
  if (role === "worker" && !v.SVC_WORKER_URL) {
    throw new ConfigError("invalid configuration: SVC_WORKER_URL is required when SVC_ROLE=worker");
  }
  if (v.SVC_WORKER_URL && !v.SVC_INTERNAL_SECRET) {
    throw new ConfigError("invalid configuration: SVC_WORKER_URL is set but SVC_INTERNAL_SECRET is not");
  }
  // On Deno Deploy an unset SVC_KV means the database attached to the app; elsewhere, a local file.
  const kv = v.SVC_KV ?? (env.DENO_DEPLOYMENT_ID ? null : ".data/svc.kv");
  return {
    role,
    internalSecret: v.SVC_INTERNAL_SECRET ?? null,
    workerUrl: v.SVC_WORKER_URL ?? null,
    workerCaFile: v.SVC_WORKER_CA_FILE ?? null,
    port,
    host: v.SVC_HOST!,
    kv,
    publicUrl,
    docsUrl,
    tokenSecret,
    rateLimit: { perMinute: v.SVC_RATE_LIMIT_PER_MINUTE!, burst: v.SVC_RATE_LIMIT_BURST! },
    maxConcurrentSessions: v.SVC_MAX_CONCURRENT_SESSIONS!,
    providerConnectTimeoutMs: v.SVC_PROVIDER_CONNECT_TIMEOUT_MS!,
    engineCaFile: v.SVC_ENGINE_CA_FILE ?? null,
    referenceEngine: {
      // An API process runs no engine and no media (on Deno Deploy it cannot).
      enabled: v.SVC_REFERENCE_ENGINE! && role !== "api",
      port: v.SVC_REFERENCE_ENGINE_PORT!,
      dir: v.SVC_REFERENCE_ENGINE_DIR!,
    },
    providers: providerSettings(env),
    logLevel: v.SVC_LOG_LEVEL!,
    maxBodyBytes: v.SVC_MAX_BODY_BYTES!,
    bodyTimeoutMs: v.SVC_BODY_TIMEOUT_S! * 1000,
    lifetimes: {
      joinWindowMs: v.SVC_SESSION_JOIN_WINDOW_S! * 1000,
      idleTimeoutMs: v.SVC_SESSION_IDLE_TIMEOUT_S! * 1000,
      maxDurationMs: v.SVC_SESSION_MAX_DURATION_S! * 1000,
    },
    ownerLeaseMs: v.SVC_OWNER_LEASE_S! * 1000,
    shutdownTimeoutMs: v.SVC_SHUTDOWN_TIMEOUT_S! * 1000,
    sessionRetentionMs: v.SVC_SESSION_RETENTION_DAYS! === 0
      ? null
      : v.SVC_SESSION_RETENTION_DAYS! * 86_400_000,
    otelTracesSampler: v.OTEL_TRACES_SAMPLER ?? null,
    mallocTunables: v.GLIBC_TUNABLES ?? null,
    webhooks: {
      timeoutMs: v.SVC_WEBHOOK_TIMEOUT_MS!,
      retrySchedule: v.SVC_WEBHOOK_RETRY_SCHEDULE!,
      pollMs: v.SVC_WEBHOOK_POLL_MS!,
      concurrency: v.SVC_WEBHOOK_CONCURRENCY!,
      allowPrivate: v.SVC_WEBHOOK_ALLOW_PRIVATE!,
      caFile: v.SVC_WEBHOOK_CA_FILE ?? null,
    },
    media: {
      enabled: v.SVC_MEDIA_ENABLED! && role !== "api",
      ffmpegPath: v.SVC_FFMPEG_PATH!,
      width: v.SVC_RENDER_WIDTH!,
      height: v.SVC_RENDER_HEIGHT!,
      fps: v.SVC_RENDER_FPS!,
      capacity: v.SVC_RENDER_CAPACITY!,
      firstFrameTimeoutMs: v.SVC_RENDER_FIRST_FRAME_TIMEOUT_MS!,
      frameCacheBytes: v.SVC_RENDER_FRAME_CACHE_MB! * 1024 * 1024,
      encoderSpares: v.SVC_RENDER_ENCODER_SPARES!,
      lipSyncHoldMs: v.SVC_LIPSYNC_HOLD_MS!,
      opusEncoder: v.SVC_OPUS_ENCODER!,
    },
    // On by default on one host; an API process serves it only when asked to (each start mints a demo key).
    demoPage: role === "all" ? v.SVC_DEMO_PAGE! : role === "api" && !!env.SVC_DEMO_PAGE && v.SVC_DEMO_PAGE!,
    // An API process learns which workers serve webrtc_sfu from their registrations: no SFU setting of its own.
    sfu: role === "api" ? null : sfuConfig(v),
  };
}

/** The `webrtc_sfu` settings: null without `SVC_SFU_JANUS_URL`. */
function sfuConfig(v: Parsed): SfuConfig | null {
  const iceUrls = v.SVC_TURN_URLS ?? [];
  if (!v.SVC_SFU_JANUS_URL) {
    for (
      const name of [
        "SVC_SFU_ADMIN_SECRET",
        "SVC_SFU_PUBLIC_URL",
        "SVC_SFU_CA_FILE",
        "SVC_TURN_URLS",
        "SVC_TURN_SECRET",
      ] as const
    ) {
      if (v[name] !== undefined) {
        throw new ConfigError(`invalid configuration: ${name} is set but SVC_SFU_JANUS_URL is not`);
      }
    }
    return null;
  }
  if (!v.SVC_SFU_ADMIN_SECRET) {
    throw new ConfigError(
      "invalid configuration: SVC_SFU_ADMIN_SECRET is required with SVC_SFU_JANUS_URL (Janus's api_secret and the plugins' admin_key)",
    );
  }
  if (iceUrls.some((u) => /^turns?:/.test(u)) && !v.SVC_TURN_SECRET) {
    throw new ConfigError(
      "invalid configuration: SVC_TURN_SECRET is required when SVC_TURN_URLS lists a turn: URL",
    );
  }
  if (v.SVC_SFU_CA_FILE !== undefined && new URL(v.SVC_SFU_JANUS_URL).protocol !== "wss:") {
    throw new ConfigError(
      "invalid configuration: SVC_SFU_CA_FILE is set but SVC_SFU_JANUS_URL is not a wss:// URL (the CA is for Janus's TLS certificate)",
    );
  }
  const janusHost = new URL(v.SVC_SFU_JANUS_URL).hostname.replace(/^\[|\]$/g, "");
  return {
    janusUrl: v.SVC_SFU_JANUS_URL,
    adminSecret: v.SVC_SFU_ADMIN_SECRET ?? null,
    publicUrl: v.SVC_SFU_PUBLIC_URL ?? null,
    rtpHost: v.SVC_SFU_RTP_HOST ?? (janusHost === "localhost" ? "127.0.0.1" : janusHost),
    workerRtpHost: v.SVC_SFU_WORKER_RTP_HOST!,
    recoveryTimeoutMs: v.SVC_SFU_RECOVERY_TIMEOUT_S! * 1000,
    caFile: v.SVC_SFU_CA_FILE ?? null,
    iceUrls,
    turnSecret: v.SVC_TURN_SECRET ?? null,
  };
}

/** Reads the process environment and validates it (see {@link loadConfig}). */
export function loadConfigFromEnv(): Config {
  return loadConfig(Deno.env.toObject());
}
