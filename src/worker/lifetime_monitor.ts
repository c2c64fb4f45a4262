/**
 * Session lifetimes: ends a live session of this process, with its reason, when
 *
 * - no media client connected within the join window after it became active (`no_client_joined`),
 * - clients had connected but none has been connected for the idle timeout (`idle_timeout`),
 * - it has been active for the maximum duration (`max_duration`).
 *
 * Client counts come from the runtime's `clientsChanged` hook (called by the media plane). Time is read
 * from the injected clock on every check, so tests move it instead of waiting.
 *
 * @module
 */
import type { Clock } from "../clock.ts";
import type { SessionRuntime } from "./session_runtime.ts";
import type { EndReason } from "../vocabulary/end_reasons.ts";

/** The limits (from the configuration). */
export interface LifetimeLimits {
  joinWindowMs: number;
  idleTimeoutMs: number;
  maxDurationMs: number;
}

/** Reasons a lifetime ends a session. */
export type LifetimeReason = Extract<EndReason, "no_client_joined" | "idle_timeout" | "max_duration">;

interface Tracked {
  projectId: string;
  startedAt: number;
  clients: number;
  everJoined: boolean;
  /** When the client count last dropped to zero (the start, until a client joins). */
  emptySince: number;
}

/** Watches the lifetimes of the sessions this process runs. */
export class LifetimeMonitor {
  readonly #tracked = new Map<string, Tracked>();
  readonly #unsubscribe: () => void;
  #timer: ReturnType<typeof setInterval> | null = null;

  constructor(
    readonly deps: {
      runtime: SessionRuntime;
      clock: Clock;
      limits: LifetimeLimits;
      /** Ends the session (called once per session, when its lifetime is up). */
      onExpired: (projectId: string, sessionId: string, reason: LifetimeReason) => void;
    },
  ) {
    this.#unsubscribe = deps.runtime.onClientsChanged((id, count) => this.#clientsChanged(id, count));
  }

  /** Starts watching a session that just became active at `startedAt`. */
  track(projectId: string, sessionId: string, startedAt: number): void {
    const clients = this.deps.runtime.clientCount(sessionId);
    this.#tracked.set(sessionId, {
      projectId,
      startedAt,
      clients,
      everJoined: clients > 0,
      emptySince: startedAt,
    });
  }

  /** Stops watching a session (it ended another way). */
  untrack(sessionId: string): void {
    this.#tracked.delete(sessionId);
  }

  /** Sessions being watched. */
  get size(): number {
    return this.#tracked.size;
  }

  /** Checks every `tickMs` (wall clock) until {@link stop}. */
  start(tickMs: number): void {
    if (this.#timer !== null) return;
    this.#timer = setInterval(() => this.check(), tickMs);
  }

  /** Stops checking and stops listening to the runtime. */
  stop(): void {
    if (this.#timer !== null) clearInterval(this.#timer);
    this.#timer = null;
    this.#unsubscribe();
  }

  /** Which limit, if any, a session has reached at `now`. */
  static due(t: Tracked, now: number, limits: LifetimeLimits): LifetimeReason | null {
    if (now - t.startedAt >= limits.maxDurationMs) return "max_duration";
    if (!t.everJoined && now - t.startedAt >= limits.joinWindowMs) return "no_client_joined";
    if (t.everJoined && t.clients === 0 && now - t.emptySince >= limits.idleTimeoutMs) return "idle_timeout";
    return null;
  }

  /** Ends every watched session whose lifetime is up (sessions no longer running here are dropped). */
  check(): void {
    const now = this.deps.clock.now();
    for (const [sessionId, t] of this.#tracked) {
      if (!this.deps.runtime.has(sessionId)) {
        this.#tracked.delete(sessionId);
        continue;
      }
      const reason = LifetimeMonitor.due(t, now, this.deps.limits);
      if (!reason) continue;
      this.#tracked.delete(sessionId);
      this.deps.onExpired(t.projectId, sessionId, reason);
    }
  }

  #clientsChanged(sessionId: string, count: number): void {
    const t = this.#tracked.get(sessionId);
    if (!t) return;
    if (count > 0) t.everJoined = true;
    if (count === 0 && t.clients > 0) t.emptySince = this.deps.clock.now();
    t.clients = count;
  }
}
