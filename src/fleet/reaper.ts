/**
 * The reaper: finds owner leases that have expired (their process is gone), and ends the sessions indexed
 * under them: `active`/`ending` → `ended_with_warnings`, `created`/`activating` → `failed` with
 * `SVC_SESSION_CANCELLED`, both with `end_reason: owner_lost`. Each is one compare-and-set transition that
 * frees the concurrency slot and writes the session's terminal webhook event, so when several processes
 * reap at once each session is still ended exactly once. Every process runs one, at start and then
 * periodically; it never reaps its own lease.
 *
 * @module
 */
import type { Clock } from "../clock.ts";
import {
  listOwnedSessions,
  listOwnerLeases,
  markLeaseReaped,
  type OwnerLease,
  removeOwnedSession,
  TOMBSTONE_RETENTION_MS,
} from "../kv/owner_leases.ts";
import { getSession, transitionSession } from "../kv/sessions.ts";
import { LIVE_STATUSES } from "../vocabulary/session_states.ts";
import { readFlushedSessionMetrics } from "../kv/session_metrics.ts";
import type { Logger } from "../log.ts";
import { OWNER_LOST_WARNING } from "../vocabulary/end_reasons.ts";

/** Finds and ends the sessions of processes that are gone. */
export class Reaper {
  /** When storage last failed for this process (−∞: never). */
  #lastOutage = -Infinity;

  constructor(
    readonly deps: { kv: Deno.Kv; clock: Clock; logger: Logger; instanceId: string; leaseMs?: number },
  ) {}

  /** Storage failed just now (a lease renewal, a pass): leases are not reaped for a lease period. */
  noteOutage(): void {
    this.#lastOutage = this.deps.clock.now();
  }

  /** One pass over every lease. Returns the number of sessions it ended. */
  async sweep(): Promise<number> {
    const { kv, clock } = this.deps;
    let reaped = 0;
    let leases;
    try {
      leases = await listOwnerLeases(kv);
    } catch (err) {
      this.noteOutage();
      throw err;
    }
    if (clock.now() - this.#lastOutage < (this.deps.leaseMs ?? 0)) return 0;
    for (const entry of leases) {
      const lease = entry.value;
      if (lease.instance_id === this.deps.instanceId || lease.expires_at > clock.now()) continue;
      const owned = await listOwnedSessions(kv, lease.instance_id);
      for (const s of owned) if (await this.#reap(lease, s.projectId, s.sessionId)) reaped++;
      const tombstoneDone = lease.reaped_at !== null &&
        clock.now() - lease.reaped_at > TOMBSTONE_RETENTION_MS;
      if (lease.reaped_at === null || (tombstoneDone && owned.length === 0)) {
        await markLeaseReaped(kv, entry, clock.now());
      }
      if (owned.length > 0) {
        this.deps.logger.warn("reaped the sessions of a lost process", {
          instance_id: lease.instance_id,
          sessions: owned.length,
          last_renewed_at: lease.renewed_at,
        });
      }
    }
    return reaped;
  }

  async #reap(lease: OwnerLease, projectId: string, sessionId: string): Promise<boolean> {
    const { kv, clock, logger } = this.deps;
    try {
      const rec = await getSession(kv, projectId, sessionId);
      if (!rec || !LIVE_STATUSES.includes(rec.status) || rec.owner !== lease.instance_id) {
        // A stale index entry (cannot normally happen: it is removed with the final transition).
        await removeOwnedSession(kv, lease.instance_id, projectId, sessionId);
        return false;
      }
      const now = clock.now();
      // The owner was last known alive at its last renewal: the session ended no earlier than that.
      const endedAt = Math.min(now, Math.max(rec.started_at ?? rec.created_at, lease.renewed_at));
      // The figures its worker last flushed (a couple of seconds before it was lost) become the final ones.
      const metrics = rec.status === "active" || rec.status === "ending"
        ? await readFlushedSessionMetrics(kv, projectId, sessionId)
        : null;
      const ended = await transitionSession(
        kv,
        projectId,
        sessionId,
        ["active", "ending"],
        "ended_with_warnings",
        {
          ended_at: endedAt,
          warning: OWNER_LOST_WARNING,
          end_reason: "owner_lost",
          ...(metrics ? { metrics } : {}),
        },
        now,
      );
      if (ended.ok) return true;
      const failed = await transitionSession(kv, projectId, sessionId, ["created", "activating"], "failed", {
        ended_at: endedAt,
        error_code: "SVC_SESSION_CANCELLED",
        end_reason: "owner_lost",
      }, now);
      return failed.ok;
    } catch (err) {
      logger.error("could not reap a session", { session_id: sessionId, error: String(err).slice(0, 200) });
      return false;
    }
  }
}
