/**
 * Where the per-session figures live while sessions run: in the memory of the worker that runs them (one
 * {@link SessionMetrics} per session, fed by its engine bridge, media plane and players), flushed to KV
 * every {@link FLUSH_MS} when they changed (`["project", pid, "session_metrics", sid]`, expiring after a
 * day), so that an API process on another host answers `GET /v1/sessions/{id}/metrics` from KV at most a
 * couple of seconds behind. When a session ends, its final figures are written into its record with its
 * end (and ride in the `session.ended` webhook as `metrics`). `readSessionMetrics` of
 * `src/kv/session_metrics.ts` is the one read path: the record's final figures, else this process's memory
 * ({@link MetricsRegistry.snapshotOf}), else KV.
 *
 * {@link MetricsRegistry.live} is the one call an exporter (e.g. OpenTelemetry) needs to read every live
 * session's figures in this process.
 *
 * @module
 */
import { FLUSH_BATCH, writeFlushedSessionMetrics } from "../kv/session_metrics.ts";
import type { Logger } from "../log.ts";
import type { SessionMetricsSnapshot } from "../vocabulary/schemas.ts";
import { SessionMetrics } from "./session_metrics.ts";

/** How often changed figures are written to KV (ms). */
export const FLUSH_MS = 2000;

interface Entry {
  metrics: SessionMetrics;
  flushed: number;
}

/** The figures of the sessions this process runs. */
export class MetricsRegistry {
  readonly #entries = new Map<string, Entry>();
  #timer: ReturnType<typeof setInterval> | undefined;
  #flushing: Promise<void> | null = null;
  #stopped = false;

  constructor(
    readonly deps: {
      kv: Deno.Kv;
      logger: Logger;
      flushMs?: number;
      /** Clocks of the figures (tests): monotonic and wall, ms. */
      clocks?: { now?: () => number; wallNow?: () => number };
    },
  ) {}

  /** Starts collecting a session's figures (flushed to KV from now on). */
  open(sessionId: string, projectId: string): SessionMetrics {
    const metrics = new SessionMetrics(sessionId, projectId, this.deps.clocks);
    this.#entries.set(sessionId, { metrics, flushed: 0 });
    if (!this.#timer && !this.#stopped) {
      this.#timer = setInterval(() => void this.flush(), this.deps.flushMs ?? FLUSH_MS);
    }
    return metrics;
  }

  /** The figures of a session running here. */
  get(sessionId: string): SessionMetrics | undefined {
    return this.#entries.get(sessionId)?.metrics;
  }

  /** The figures now of a session running here, or null (the API's read path, `readSessionMetrics`). */
  snapshotOf = (sessionId: string): SessionMetricsSnapshot | null =>
    this.#entries.get(sessionId)?.metrics.snapshot() ?? null;

  /** Stops collecting a session's figures; returns its final snapshot (null if it was not collected here). */
  close(sessionId: string): SessionMetricsSnapshot | null {
    const e = this.#entries.get(sessionId);
    if (!e) return null;
    this.#entries.delete(sessionId);
    this.#idle();
    return e.metrics.snapshot();
  }

  /** Every live session's figures in this process (for exporters). */
  *live(): Iterable<{ sessionId: string; projectId: string; snapshot: SessionMetricsSnapshot }> {
    for (const [sessionId, e] of this.#entries) {
      yield { sessionId, projectId: e.metrics.projectId, snapshot: e.metrics.snapshot() };
    }
  }

  /** Writes the figures that changed since their last flush. */
  flush(): Promise<void> {
    this.#flushing ??= (async () => {
      try {
        const changed = [...this.#entries.values()]
          .filter((e) => e.metrics.version !== e.flushed)
          .map((e) => ({ e, version: e.metrics.version, snapshot: e.metrics.snapshot() }));
        for (let i = 0; i < changed.length; i += FLUSH_BATCH) {
          const batch = changed.slice(i, i + FLUSH_BATCH);
          try {
            await writeFlushedSessionMetrics(
              this.deps.kv,
              batch.map(({ e, snapshot }) => ({ projectId: e.metrics.projectId, snapshot })),
            );
            for (const { e, version } of batch) e.flushed = version;
          } catch (err) {
            this.deps.logger.debug("session figures not flushed (storage unavailable)", {
              sessions: batch.length,
              error: String(err).slice(0, 120),
            });
            return;
          }
        }
      } finally {
        this.#flushing = null;
      }
    })();
    return this.#flushing;
  }

  #idle(): void {
    if (this.#entries.size === 0 && this.#timer) {
      clearInterval(this.#timer);
      this.#timer = undefined;
    }
  }

  /** Stops flushing (process shutdown); waits for a flush in progress. */
  async stop(): Promise<void> {
    this.#stopped = true;
    clearInterval(this.#timer);
    this.#timer = undefined;
    await this.#flushing;
  }
}
