/**
 * The session state machine, in one table: every status, every allowed transition, and the lifecycle
 * event each transition writes. Storage (`src/kv/sessions.ts`) refuses any transition not in the table and
 * writes the event the table names in the same atomic operation; nothing else decides which edge emits what.
 *
 * ```text
 *   (insert) ─► created ──► activating ──► active ──► ending ──► ended | ended_with_warnings
 *                  │             │            │                        ▲
 *                  └──► failed ◄─┘            └────────────────────────┘ (ended by itself: engine, media,
 *                                                                        lifetime, owner lost)
 * ```
 *
 * - `created`: the record and its concurrency slot are written; the session is placed on a worker.
 * - `activating`: the worker accepted the start and is connecting the engine and media.
 * - `active`: the only status a create answers 200 with.
 * - `ending`: an end was asked for through the API (`end_request` names it when the owner must carry it out).
 * - `ended` / `ended_with_warnings`: terminal after `active`; `failed`: terminal before it.
 *
 * A session holds a concurrency slot (and a place on its worker) in every live status; the transition into a
 * terminal status frees both, in the same atomic operation.
 *
 * @module
 */

/** Every session status, in contract order. */
export const SESSION_STATUSES = [
  "created",
  "activating",
  "active",
  "ending",
  "ended",
  "ended_with_warnings",
  "failed",
] as const;
/** One session status. */
export type SessionStatus = (typeof SESSION_STATUSES)[number];

/** Statuses that hold a concurrency slot. */
export const LIVE_STATUSES: readonly SessionStatus[] = ["created", "activating", "active", "ending"];
/** Terminal statuses. */
export const TERMINAL_STATUSES: readonly SessionStatus[] = ["ended", "ended_with_warnings", "failed"];
/** Terminal statuses of a session that was active (reported as ended on a second end). */
export const ENDED_STATUSES: readonly SessionStatus[] = ["ended", "ended_with_warnings"];

/** Lifecycle event types (the webhooks a session with a `webhook_url` receives). */
export const LIFECYCLE_EVENT_TYPES = ["session.started", "session.ended", "session.failed"] as const;
/** One lifecycle event type. */
export type LifecycleEventType = (typeof LIFECYCLE_EVENT_TYPES)[number];

/** One allowed transition. */
export interface Edge {
  /** The lifecycle event this transition writes, if any. */
  emits: LifecycleEventType | null;
}

const quiet: Edge = { emits: null };
const started: Edge = { emits: "session.started" };
const ended: Edge = { emits: "session.ended" };
const failed: Edge = { emits: "session.failed" };

/** The transition table: `TRANSITIONS[from][to]` is the edge, absent when the transition is not allowed. */
export const TRANSITIONS: Readonly<Record<SessionStatus, Readonly<Partial<Record<SessionStatus, Edge>>>>> = {
  created: { activating: quiet, failed },
  activating: { active: started, failed },
  active: { ending: quiet, ended, ended_with_warnings: ended },
  ending: { ended, ended_with_warnings: ended },
  ended: {},
  ended_with_warnings: {},
  failed: {},
};

/** The edge from `from` to `to`, or null when the table does not allow it. */
export function edge(from: SessionStatus, to: SessionStatus): Edge | null {
  return TRANSITIONS[from][to] ?? null;
}

/** True when leaving `from` for `to` frees the session's slots (live → terminal). */
export function freesSlot(from: SessionStatus, to: SessionStatus): boolean {
  return LIVE_STATUSES.includes(from) && TERMINAL_STATUSES.includes(to);
}

/** True for `ended` and `ended_with_warnings`. */
export function isEnded(status: SessionStatus): boolean {
  return ENDED_STATUSES.includes(status);
}

/** True for the statuses that hold a slot. */
export function isLive(status: SessionStatus): boolean {
  return LIVE_STATUSES.includes(status);
}
