/**
 * Machine-readable reasons a session ended or failed, reported as `end_reason` by `GET
 * /v1/sessions/{session_id}`, the end answer and the `session.ended` / `session.failed` webhooks.
 *
 * @module
 */

/** Every end reason, in documentation order. */
export const END_REASONS = [
  "ended_by_api",
  "ended_by_api_forced",
  "no_client_joined",
  "idle_timeout",
  "max_duration",
  "engine_ended",
  "engine_failed",
  "engine_quota_exceeded",
  "render_failed",
  "sfu_failed",
  "owner_lost",
  "service_shutdown",
  "start_failed",
] as const;

/** One end reason. */
export type EndReason = (typeof END_REASONS)[number];

/** What each reason means (the documentation table in docs/api.md follows this). */
export const END_REASON_DESCRIPTIONS: Record<EndReason, string> = {
  ended_by_api: "`POST /v1/sessions/{session_id}/end` (graceful teardown).",
  ended_by_api_forced: "`POST /v1/sessions/{session_id}/end?force=true`.",
  no_client_joined: "No media client connected within the join window (`SVC_SESSION_JOIN_WINDOW_S`).",
  idle_timeout: "No media client was connected for the idle timeout (`SVC_SESSION_IDLE_TIMEOUT_S`).",
  max_duration: "The session reached its maximum duration (`SVC_SESSION_MAX_DURATION_S`).",
  engine_ended: "The conversation engine ended the session (`session.end` then a normal close).",
  engine_failed: "The conversation engine connection failed (drop, error close, fatal error).",
  engine_quota_exceeded:
    "The conversation engine ended the session because the provider account's quota or rate limit is exhausted (its error or close said so; status `ended_with_warnings`). New sessions answer `429 SVC_RATE_LIMIT_PROVIDER_QUOTA` until the account is topped up.",
  render_failed: "The avatar media plane (renderer or encoder) failed.",
  sfu_failed:
    "A `webrtc_sfu` session's media server (SFU) became unreachable and did not come back within `SVC_SFU_RECOVERY_TIMEOUT_S` (status `ended_with_warnings`).",
  owner_lost:
    "The process running the session stopped without ending it; another process found its expired owner lease and ended it.",
  service_shutdown: "The service process running the session shut down (SIGINT/SIGTERM).",
  start_failed: "The session never became active: its start failed (status `failed`, see `error_code`).",
};

/** True when `s` is a known end reason. */
export function isEndReason(s: string): s is EndReason {
  return (END_REASONS as readonly string[]).includes(s);
}

/** Warning of a session ended by a process that does not run it, when its owner did not answer in time. */
export const REMOTE_END_WARNING =
  "The service process running the session did not complete the end in time; its resources are released when that process sees the end or its lease runs out.";

/** Warning of a session whose owner process was lost. */
export const OWNER_LOST_WARNING =
  "The service process running the session stopped without ending it; its resources were released.";
