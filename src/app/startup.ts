/**
 * The checks and secrets a process settles before it opens anything: a tracing sampler that keeps Deno's
 * spans of credential-carrying URLs out of the export, the warning when freed memory is not scrubbed (see
 * `auth/memory_scrub.ts`), and the token signing secrets (configured, ephemeral, or none).
 *
 * @module
 */
import { memoryScrubWarning } from "../auth/memory_scrub.ts";
import { TokenService } from "../auth/tokens.ts";
import { type Config, ConfigError } from "../config.ts";
import type { Logger } from "../log.ts";
import { telemetry } from "../telemetry/state.ts";
import { samplerHonoursParent } from "../telemetry/tracing.ts";

/** Throws a {@link ConfigError} for a configuration a process must not start with; logs what it warns of. */
export function checkStartup(config: Config, logger: Logger, runsSessions: boolean): void {
  // Deno's spans of engine upgrades and webhook deliveries would record credentials in their URLs; they
  // are left unsampled (src/telemetry/tracing.ts), which only a parent-based sampler honours.
  if (runsSessions && telemetry().tracing && !samplerHonoursParent(config.otelTracesSampler)) {
    throw new ConfigError(
      "invalid configuration: OTEL_TRACES_SAMPLER must be parentbased_always_on (or parentbased_traceidratio, parentbased_always_off, always_off) when tracing is on in a process that runs sessions: the URLs of engine connections and webhook deliveries carry credentials, and only a parent-based sampler keeps Deno's spans of them out of the export",
    );
  }
  const unscrubbed = memoryScrubWarning({ os: Deno.build.os, runsSessions, tunables: config.mallocTunables });
  if (unscrubbed) logger.warn(unscrubbed);
}

/** The token signing secrets of this process (an ephemeral one is generated when allowed). */
export function tokenSecrets(
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
