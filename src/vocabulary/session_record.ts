/**
 * The stored session record (`["project", pid, "session", sid]`). It never holds provider credentials or
 * tokens.
 *
 * @module
 */
import type { ErrorCode } from "../errors.ts";
import type { ProviderType } from "../providers/definitions/provider_types.ts";
import type { EndReason } from "./end_reasons.ts";
import type { SessionMetricsSnapshot } from "./schemas.ts";
import type { SessionStatus } from "./session_states.ts";
import type { TransportKind } from "./transports.ts";

/** An end asked of the session's owner through KV (the fallback when the owner cannot be called). */
export interface EndRequest {
  reason: EndReason;
  force: boolean;
  requested_by: string;
}

/** The stored session record. */
export interface SessionRecord {
  session_id: string;
  project_id: string;
  status: SessionStatus;
  provider_type: ProviderType;
  /** The transport it runs on (`auto` is resolved at creation). */
  transport: TransportKind;
  avatar_id: string | null;
  bg_id: string | null;
  webhook_url: string | null;
  created_at: number;
  started_at: number | null;
  ended_at: number | null;
  /** Set with `ended_with_warnings`. */
  warning: string | null;
  /** Set with `failed`. */
  error_code: ErrorCode | null;
  /** Machine-readable reason the session ended or failed. */
  end_reason: EndReason | null;
  /** Media chunks rendered over the session's life. */
  chunks_rendered: number;
  /** key_id of the API key that created it. */
  created_by: string;
  /** Instance id of the worker running (or placed to run) the session. */
  owner: string | null;
  /**
   * Set with `ending` when the end could not be handed to the owner directly: the owner carries it out on
   * its next reconcile tick.
   */
  end_request?: EndRequest | null;
  /**
   * Where the session's media is reached, written when it becomes `active` (not secret: no tokens, no
   * TURN credentials). Answers an idempotent replay of an ended session.
   */
  stream?: { media_url: string | null; sfu_endpoint: string | null } | null;
  /**
   * Set with the final status when an API end was answered 503 (storage was out) after its teardown had
   * happened: until then, a retried end answers 200 with this end instead of 409 (see `claimUnansweredEnd` in `src/kv/sessions.ts`).
   */
  end_unanswered_until?: number | null;
  /**
   * The session's final figures, written with its end by the worker that ran it (see
   * `src/metrics/registry.ts`), or the reaper (the figures its lost worker last flushed); absent while it
   * runs.
   */
  metrics?: SessionMetricsSnapshot | null;
}
