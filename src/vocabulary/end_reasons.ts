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
