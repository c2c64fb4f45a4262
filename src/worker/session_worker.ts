/**
 * The session worker: what a session host does for the sessions it runs. It drives the runtime (engine
 * connection and media plane) and writes the transitions only the host that runs a session can know of:
 * `activating` and `active` at start, the final status when the session ends — whoever asked (the API, a
 * lifetime limit, the engine or the media plane hanging up, a shutdown) — and `failed` when a start fails.
 *
 * Ends are durable: the runtime is stopped first (that needs no storage), then the final transition is
 * handed to the {@link EndJournal}, which lands it when KV is available, now or later. A session ending by
 * itself while it is still starting makes the start fail with the mapped error, so a dead session is never
 * reported `active`.
 *
 * @module
 */
import type { Clock } from "../clock.ts";
import type { Config } from "../config.ts";
import { ApiError, type ErrorCode } from "../errors.ts";
import { listOwnedSessions, removeOwnedSession } from "../kv/owner_leases.ts";
import { getSession, getSessions, transitionSession } from "../kv/sessions.ts";
import type { Logger } from "../log.ts";
import type { CredentialHolder } from "../auth/credential_holder.ts";
import type { SelfEnded, SessionRuntime } from "./session_runtime.ts";
import { type EndOptions, type StartSpec, TEARDOWN_TIMEOUT_MS } from "../vocabulary/host_requests.ts";
import type { EndedSession, SessionMetricsSnapshot, StreamEndpoints } from "../vocabulary/schemas.ts";
import { endAnswer } from "../vocabulary/end_answer.ts";
import { notActiveError } from "../vocabulary/not_active_error.ts";
import type { EndReason } from "../vocabulary/end_reasons.ts";
import { durationS } from "../vocabulary/lifecycle_events.ts";
import { LifetimeMonitor } from "./lifetime_monitor.ts";
import type { SessionRecord } from "../vocabulary/session_record.ts";
import {
  emptyEndpoints,
  TRANSPORT_KINDS,
  transportEntry,
  type TransportKind,
} from "../vocabulary/transports.ts";
import { isEnded, type SessionStatus } from "../vocabulary/session_states.ts";
import { EndJournal, type EndJournalOptions, type PendingEnd } from "./end_journal.ts";
import { claimUnansweredEnd, type TransitionResult, UNANSWERED_END_TTL_MS } from "../kv/sessions.ts";
import { ATTR, SPAN } from "../telemetry/names.ts";
import { inSpan, SpanKind } from "../telemetry/tracing.ts";
import { MetricsRegistry } from "../metrics/registry.ts";
import { recordSessionFigures } from "../telemetry/figures.ts";

/** How long an end answer waits for storage before answering 503 (the end is recorded later anyway). */
export const END_RECORD_WAIT_MS = 2500;

/** Dependencies of a worker. */
/** The media plane, as the session worker needs it (its port; `MediaPlane` of src/media/ implements it). */
export interface MediaPlaneInfo {
  /** Whether a render slot is free now (a cheap early check; the factory enforces the limit). */
  hasCapacity(): boolean;
  /** Whether this plane serves `kind` (a transport that needs a media server: when it is configured). */
  serves(kind: TransportKind): boolean;
  /**
   * The connection metadata of a session running here: `media_url` (fMP4), or `sfu_endpoint` and
   * `ice_servers` with TURN credentials minted now for the client token's lifetime (webrtc_sfu).
   */
  endpoints(sessionId: string, transport: TransportKind): Promise<StreamEndpoints>;
}

export interface SessionWorkerDeps {
  kv: Deno.Kv;
  clock: Clock;
  config: Pick<Config, "lifetimes" | "providerConnectTimeoutMs" | "media">;
  logger: Logger;
  /** Id of this process: the `owner` of the sessions it runs. */
  instanceId: string;
  runtime: SessionRuntime;
  /** The media plane, when this process renders (capacity and media URLs). */
  media?: MediaPlaneInfo;
  /** Teardown timeout of graceful ends (the spec's 10 s; tests shorten it). */
  teardownTimeoutMs?: number;
  /** How long an end answer waits for storage before answering 503 (default {@link END_RECORD_WAIT_MS}). */
  endRecordWaitMs?: number;
  /** Retry settings of the end journal. */
  journal?: EndJournalOptions;
  /** How often live session figures are flushed to KV (default 2 s). */
  metricsFlushMs?: number;
}

interface Starting {
  /** Set when the session ended by itself before its start was decided. */
  selfEnded: SelfEnded | null;
}

/** Runs sessions on this process and keeps their records true. */
export class SessionWorker {
  /** Ends this process's sessions when their join window, idle timeout or maximum duration is up. */
  readonly lifetimes: LifetimeMonitor;
  /** Final transitions waiting for storage. */
  readonly journal: EndJournal;
  /** The figures of the sessions running here (flushed to KV; final ones go into the end's record). */
  readonly metrics: MetricsRegistry;
  readonly #background = new Set<Promise<unknown>>();
  readonly #starting = new Map<string, Starting>();
  /** Ends under way, one per session: every caller waits for the same one. */
  readonly #stopping = new Map<string, Promise<EndedSession | null>>();
  /** Provider type and transport of the sessions started here (for the telemetry's gauges). */
  readonly #kinds = new Map<string, { providerType: string; transport: string }>();

  constructor(readonly deps: SessionWorkerDeps) {
    this.journal = new EndJournal({ kv: deps.kv, clock: deps.clock, logger: deps.logger, ...deps.journal });
    this.metrics = new MetricsRegistry({ kv: deps.kv, logger: deps.logger, flushMs: deps.metricsFlushMs });
    deps.runtime.onSelfEnded((e) => this.#onSelfEnded(e));
    this.lifetimes = new LifetimeMonitor({
      runtime: deps.runtime,
      clock: deps.clock,
      limits: deps.config.lifetimes,
      onExpired: (projectId, sessionId, reason) =>
        this.#inBackground(this.endBySelf(projectId, sessionId, reason)),
    });
  }

  /** Id of this worker. */
  get instanceId(): string {
    return this.deps.instanceId;
  }

  /** The transports this worker serves (those needing a media server: when its media plane has it). */
  get transports(): TransportKind[] {
    return TRANSPORT_KINDS.filter((t) => !transportEntry(t).unavailable || this.deps.media?.serves(t));
  }

  /** Whether a render slot is free (always true without a media plane). */
  hasCapacity(): boolean {
    return this.deps.media?.hasCapacity() ?? true;
  }

  /** Sessions running here now. */
  get size(): number {
    return this.deps.runtime.size;
  }

  /** The provider type and transport of each session running here now. */
  *liveKinds(): Iterable<{ providerType: string; transport: string }> {
    for (const id of [...this.#kinds.keys()]) {
      if (!this.deps.runtime.has(id) && !this.#starting.has(id)) this.#kinds.delete(id);
    }
    for (const s of this.deps.runtime.liveSessions()) {
      const kind = this.#kinds.get(s.sessionId);
      if (kind) yield kind;
    }
  }

  /** Resolves once the ends and records running in the background have settled. */
  async settled(): Promise<void> {
    while (this.#background.size) await Promise.allSettled([...this.#background]);
  }

  #inBackground(p: Promise<unknown>): void {
    this.#background.add(p);
    p.finally(() => this.#background.delete(p));
  }

  /**
   * Starts a `created` session placed on this worker: `activating`, engine and media, then `active`.
   * Resolves with its endpoints; throws the mapped {@link ApiError} (the record is then `failed`, or
   * `failed` as soon as storage allows). The credentials are zeroed whatever happens.
   */
  start(spec: StartSpec, credentials: CredentialHolder): Promise<StreamEndpoints> {
    return inSpan(SPAN.start, {
      kind: SpanKind.INTERNAL,
      attributes: {
        [ATTR.sessionId]: spec.sessionId,
        [ATTR.projectId]: spec.projectId,
        [ATTR.providerType]: spec.providerType,
        [ATTR.transport]: spec.transport,
        [ATTR.workerId]: this.deps.instanceId,
      },
    }, () => this.#start(spec, credentials));
  }

  async #start(spec: StartSpec, credentials: CredentialHolder): Promise<StreamEndpoints> {
    const { kv, clock, runtime, logger } = this.deps;
    const { projectId, sessionId } = spec;
    if (!this.hasCapacity()) {
      credentials.zero();
      throw new ApiError("SVC_RENDER_CAPACITY");
    }
    let moved;
    try {
      moved = await transitionSession(kv, projectId, sessionId, ["created"], "activating", {}, clock.now());
    } catch (err) {
      credentials.zero();
      throw err;
    }
    if (!moved.ok) {
      credentials.zero();
      throw new ApiError("SVC_SESSION_CANCELLED");
    }
    const starting: Starting = { selfEnded: null };
    this.#starting.set(sessionId, starting);
    this.#kinds.set(sessionId, { providerType: spec.providerType, transport: spec.transport });
    const metrics = this.metrics.open(sessionId, projectId);
    let started = false;
    try {
      try {
        await runtime.start({
          ...spec,
          credentials,
          timeoutMs: this.deps.config.providerConnectTimeoutMs,
          metrics,
        });
      } catch (err) {
        await this.#fail(projectId, sessionId, err instanceof ApiError ? err.code : "SVC_INTERNAL_ERROR");
        throw err;
      }
      if (starting.selfEnded) {
        // The engine (or the media plane) hung up right after its handshake: the start failed.
        const err = startFailure(starting.selfEnded);
        await this.#fail(projectId, sessionId, err.code);
        throw err;
      }
      const endpoints = await this.endpoints(sessionId, spec.transport);
      let activated;
      try {
        const startedAt = clock.now();
        activated = await transitionSession(kv, projectId, sessionId, ["activating"], "active", {
          started_at: startedAt,
          stream: { media_url: endpoints.media_url, sfu_endpoint: endpoints.sfu_endpoint },
        }, startedAt);
      } catch (err) {
        await runtime.end(sessionId, { force: true, reason: "start_failed" });
        await this.#fail(projectId, sessionId, "SVC_SESSION_STATE_UNAVAILABLE");
        throw err;
      }
      if (!activated.ok) {
        await runtime.end(sessionId, { force: true, reason: "cancelled" });
        throw new ApiError("SVC_SESSION_CANCELLED");
      }
      this.#starting.delete(sessionId);
      if (starting.selfEnded) {
        // It ended while `active` was being written: record that end now (the engine's end wins).
        this.#inBackground(this.#recordSelfEnd(starting.selfEnded));
      } else {
        this.lifetimes.track(projectId, sessionId, activated.record!.started_at!);
      }
      logger.info("session active", { session_id: sessionId, project_id: projectId });
      started = true;
      return endpoints;
    } finally {
      this.#starting.delete(sessionId);
      // A failed start has no figures to keep (a start that ended by itself meanwhile recorded them).
      if (!started && this.metrics.get(sessionId) === metrics) this.metrics.close(sessionId);
    }
  }

  /** The media endpoints of a session running here (fresh TURN credentials for a webrtc_sfu session). */
  async endpoints(sessionId: string, transport: SessionRecord["transport"]): Promise<StreamEndpoints> {
    return await this.deps.media?.endpoints(sessionId, transport) ?? emptyEndpoints();
  }

  /** The endpoints of an `active` session of this worker (for a fresh client token). */
  async stream(projectId: string, sessionId: string, known?: SessionRecord): Promise<StreamEndpoints> {
    // In one process the API has just read the record (`known`): the runtime below says whether it runs.
    const rec = known ?? await getSession(this.deps.kv, projectId, sessionId);
    if (!rec || rec.status !== "active") throw notActiveError(rec);
    if (!this.deps.runtime.has(sessionId)) throw notActiveError({ ...rec, status: "ending" });
    return await this.endpoints(sessionId, rec.transport);
  }

  /**
   * Ends a session of this worker at the API's request: `active` → `ending`, teardown (graceful within the
   * teardown timeout, or forced), then the final status. When storage is out at the end, answers 503 and
   * records the end when it comes back; a retried end then answers with it.
   */
  async end(projectId: string, sessionId: string, options: EndOptions): Promise<EndedSession> {
    const { kv, clock, runtime } = this.deps;
    // A session ending by itself right now answers with that end (409 SVC_SESSION_ENDED), not a second one.
    await runtime.selfEndSettled(sessionId);
    const pending = this.journal.pending(sessionId);
    if (pending && pending.to !== "failed") {
      // Its teardown is done, its record not yet written (storage was out): complete it now, answering
      // this call (503 again while storage is still out).
      this.journal.amend(sessionId, { end_unanswered_until: null });
      const landed = await this.#landAnswering(sessionId, pending);
      if (landed.ok) return endAnswer(landed.record!, options.reason);
    }
    const rec = await getSession(kv, projectId, sessionId);
    if (!rec) throw new ApiError("SVC_SESSION_NOT_FOUND");
    if (isEnded(rec.status)) {
      const answer = await claimUnansweredEnd(kv, rec, clock.now());
      if (answer) return answer;
    }
    if (rec.status !== "active") throw notActiveError(rec);
    // Being torn down already (a lifetime limit, a concurrent end): not active any more.
    if (this.#stopping.has(sessionId) || !runtime.has(sessionId)) throw notActiveError({ status: "ending" });
    const moved = await transitionSession(kv, projectId, sessionId, ["active"], "ending", {}, clock.now());
    if (!moved.ok) throw notActiveError(moved.record);
    const ended = await this.#stopAndRecord(moved.record!, options.force, options.reason, ["ending"], {
      timeoutMs: this.deps.teardownTimeoutMs ?? TEARDOWN_TIMEOUT_MS,
      answer: true,
    });
    return ended!;
  }

  /**
   * Ends a session of this worker for a reason of its own (a lifetime limit, shutdown, an end request
   * found in KV). Never throws; resolves with the end, or null when the session was not running here or its
   * record could not be written yet (the journal writes it later).
   */
  async endBySelf(
    projectId: string,
    sessionId: string,
    reason: EndReason,
    options: { timeoutMs?: number; force?: boolean; from?: SessionStatus[] } = {},
  ): Promise<EndedSession | null> {
    if (!this.deps.runtime.has(sessionId)) {
      return await (this.#stopping.get(sessionId)?.catch(() => null) ?? null);
    }
    const rec: Pick<SessionRecord, "project_id" | "session_id" | "started_at"> = {
      project_id: projectId,
      session_id: sessionId,
      started_at: null,
    };
    try {
      return await this.#stopAndRecord(
        rec,
        options.force ?? false,
        reason,
        options.from ?? ["active", "ending"],
        {
          timeoutMs: options.timeoutMs ?? this.deps.teardownTimeoutMs ?? TEARDOWN_TIMEOUT_MS,
          answer: false,
        },
      );
    } catch (err) {
      this.deps.logger.error("could not end a session", {
        session_id: sessionId,
        reason,
        error: String(err),
      });
      return null;
    }
  }

  /**
   * Stops a session's runtime and records its final status (one stop per session: concurrent callers
   * share it). `answer: true` (an API end) throws 503 when storage does not take the record in time.
   */
  #stopAndRecord(
    rec: Pick<SessionRecord, "project_id" | "session_id" | "started_at">,
    force: boolean,
    reason: EndReason,
    from: readonly SessionStatus[],
    options: { timeoutMs: number; answer: boolean },
  ): Promise<EndedSession | null> {
    const sessionId = rec.session_id;
    const existing = this.#stopping.get(sessionId);
    if (existing) {
      return existing.then((ended) => {
        if (options.answer) throw new ApiError("SVC_SESSION_ENDED");
        return ended;
      });
    }
    const stop = (async () => {
      const { runtime, clock } = this.deps;
      this.lifetimes.untrack(sessionId);
      const outcome = await runtime.end(sessionId, { force, timeoutMs: options.timeoutMs, reason });
      const metrics = this.#finalFigures(sessionId);
      const endedAt = clock.now();
      const status = outcome.warning ? "ended_with_warnings" : "ended";
      const answer: EndedSession = {
        session_id: sessionId,
        status,
        ended_at: endedAt,
        chunks_rendered: outcome.chunksRendered,
        duration_s: durationS(rec.started_at, endedAt),
        ...(outcome.warning ? { warning: outcome.warning } : {}),
        end_reason: reason,
      };
      const end: PendingEnd = {
        projectId: rec.project_id,
        sessionId,
        from,
        to: status,
        patch: {
          ended_at: endedAt,
          warning: outcome.warning,
          chunks_rendered: outcome.chunksRendered,
          end_reason: reason,
          ...(metrics ? { metrics } : {}),
        },
      };
      const landed = options.answer
        ? await this.#landAnswering(sessionId, end)
        : await this.journal.record(end, this.#endWait());
      if (!landed.ok) {
        // Ended some other way meanwhile (e.g. the owner was presumed lost): that end stands.
        if (options.answer) throw notActiveError(landed.record);
        return null;
      }
      return { ...answer, duration_s: durationS(landed.record!.started_at, endedAt) };
    })();
    this.#stopping.set(sessionId, stop);
    stop.catch(() => {}).finally(() => this.#stopping.delete(sessionId));
    return stop;
  }

  /**
   * Stops collecting a session's figures at its end: the final ones (null if they were not collected
   * here), which go into its record (the `session.ended` webhook's `metrics`) and into the OpenTelemetry
   * metrics (turn latency, avatar latency, A/V offset, first frame; nothing with metrics off).
   */
  #finalFigures(sessionId: string): SessionMetricsSnapshot | null {
    const figures = this.metrics.close(sessionId);
    const kind = this.#kinds.get(sessionId);
    if (figures && kind) recordSessionFigures(figures, kind);
    return figures;
  }

  #endWait(): number {
    return this.deps.endRecordWaitMs ?? END_RECORD_WAIT_MS;
  }

  /**
   * Records the end of an API end call, which is waiting for the answer. When storage does not take it in
   * time, the call answers 503 and the record is marked so that a retried end (on any API process)
   * answers 200 with this end once it has landed (see `claimUnansweredEnd` in `src/kv/sessions.ts`).
   */
  async #landAnswering(sessionId: string, end: PendingEnd): Promise<TransitionResult> {
    try {
      return await this.journal.record(end, this.#endWait());
    } catch (err) {
      if (!(err instanceof ApiError) || err.code !== "SVC_SESSION_STATE_UNAVAILABLE") throw err;
      if (
        this.journal.amend(sessionId, { end_unanswered_until: this.deps.clock.now() + UNANSWERED_END_TTL_MS })
      ) {
        throw err;
      }
      // It landed just now.
      return await this.journal.record(end, this.#endWait());
    }
  }

  /** Ends every session this worker runs, gracefully within `timeoutMs` (service shutdown). */
  async endAll(reason: EndReason, timeoutMs: number): Promise<void> {
    await Promise.all(
      this.deps.runtime.liveSessions().map((s) =>
        this.endBySelf(s.projectId, s.sessionId, reason, { timeoutMs })
      ),
    );
  }

  /**
   * This process's lease was reaped by another (it was presumed dead): the records of its sessions are
   * final already, so tear down what still runs here and record `owner_lost` where nothing was recorded.
   */
  async abandonAll(): Promise<void> {
    await Promise.all(
      this.deps.runtime.liveSessions().map((s) =>
        this.endBySelf(s.projectId, s.sessionId, "owner_lost", { force: true, timeoutMs: 0 })
      ),
    );
  }

  /**
   * Brings this worker in line with the session records (every lifecycle tick): carries out end requests
   * recorded in KV for sessions that run here, releases sessions whose record was ended elsewhere, and fails
   * sessions placed here whose start never arrived (the API process that placed them is gone).
   */
  async reconcile(options: { staleStartMs?: number } = {}): Promise<void> {
    const { kv, runtime } = this.deps;
    const local = runtime.liveSessions();
    for (let i = 0; i < local.length; i += 10) {
      const batch = local.slice(i, i + 10);
      let records: (SessionRecord | null)[];
      try {
        records = await getSessions(kv, batch);
      } catch {
        return; // storage unavailable: next tick
      }
      for (const [k, s] of batch.entries()) {
        const rec = records[k];
        if (!rec || !runtime.has(s.sessionId) || this.#starting.has(s.sessionId)) continue;
        if (rec.status === "ending" && rec.end_request) {
          const req = rec.end_request;
          this.#inBackground(
            this.endBySelf(s.projectId, s.sessionId, req.reason, { force: req.force, from: ["ending"] }).then(
              (ended) => {
                if (ended) {
                  this.deps.logger.info("session ended at another process's request", {
                    session_id: s.sessionId,
                  });
                }
              },
            ),
          );
        } else if (isEnded(rec.status) || rec.status === "failed") {
          // Ended elsewhere (a remote end that timed out, a reaper): release what still runs here.
          this.lifetimes.untrack(s.sessionId);
          this.#inBackground(
            runtime.end(s.sessionId, { force: true, reason: rec.end_reason ?? "owner_lost" }),
          );
        }
      }
    }
    if (options.staleStartMs !== undefined) await this.#failStaleStarts(options.staleStartMs);
  }

  /** Fails records placed on this worker that are still `created`/`activating` long after any start. */
  async #failStaleStarts(staleMs: number): Promise<void> {
    const { kv, clock, runtime } = this.deps;
    let owned: { projectId: string; sessionId: string }[];
    try {
      owned = await listOwnedSessions(kv, this.deps.instanceId);
    } catch {
      return;
    }
    for (const s of owned) {
      if (runtime.has(s.sessionId) || this.#starting.has(s.sessionId)) continue;
      const rec = await getSession(kv, s.projectId, s.sessionId).catch(() => undefined);
      if (rec === undefined) return;
      if (!rec) {
        await removeOwnedSession(kv, this.deps.instanceId, s.projectId, s.sessionId).catch(() => {});
        continue;
      }
      if (
        (rec.status === "created" || rec.status === "activating") && clock.now() - rec.created_at > staleMs
      ) {
        await this.#fail(s.projectId, s.sessionId, "SVC_SESSION_CANCELLED");
        this.deps.logger.warn("failed a session whose start never completed", { session_id: s.sessionId });
      }
    }
  }

  /** Records a failed start (durably: the journal lands it once storage allows). */
  async #fail(projectId: string, sessionId: string, code: ErrorCode): Promise<void> {
    await this.journal.record({
      projectId,
      sessionId,
      from: ["created", "activating"],
      to: "failed",
      patch: { error_code: code, end_reason: "start_failed", ended_at: this.deps.clock.now() },
    }, this.#endWait()).catch(() => {
      this.deps.logger.warn("storage unavailable: a failed start will be recorded later", {
        session_id: sessionId,
      });
    });
  }

  #onSelfEnded(e: SelfEnded): Promise<void> | void {
    const starting = this.#starting.get(e.sessionId);
    if (starting) {
      starting.selfEnded = e;
      return;
    }
    this.lifetimes.untrack(e.sessionId);
    return this.#recordSelfEnd(e);
  }

  async #recordSelfEnd(e: SelfEnded): Promise<void> {
    const warning = e.closure.kind === "failed"
      ? (e.warning ?? "The conversation engine connection was lost.")
      : e.closure.kind === "quota_exhausted"
      ? (e.warning ?? "The conversation engine's quota or rate limit is exhausted.")
      : e.warning;
    const metrics = this.#finalFigures(e.sessionId);
    await this.journal.record({
      projectId: e.projectId,
      sessionId: e.sessionId,
      from: ["active", "ending"],
      to: warning ? "ended_with_warnings" : "ended",
      patch: {
        ended_at: e.endedAt,
        warning,
        chunks_rendered: e.chunksRendered,
        end_reason: e.reason,
        ...(metrics ? { metrics } : {}),
      },
    }, this.#endWait()).catch(() => {
      this.deps.logger.warn("storage unavailable: a session's end will be recorded when it is back", {
        session_id: e.sessionId,
        reason: e.reason,
      });
    });
  }

  /** Stops the background machinery (the journal's retry loop); sessions are left as they are. */
  async close(): Promise<void> {
    await this.settled();
    await this.metrics.stop();
    await this.journal.stop();
  }
}

/** The error a start answers when the session ended by itself before it was active. */
function startFailure(e: SelfEnded): ApiError {
  if (e.reason === "render_failed") return new ApiError("SVC_RENDER_FAILED");
  if (e.reason === "sfu_failed") return new ApiError("SVC_SFU_CONNECTION_FAILED");
  if (e.closure.kind === "quota_exhausted") return new ApiError("SVC_RATE_LIMIT_PROVIDER_QUOTA");
  return new ApiError(
    "SVC_PROVIDER_DOWNSTREAM_FAILED",
    e.closure.kind === "failed"
      ? "The conversation engine failed right after accepting the session."
      : "The conversation engine ended the session right after accepting it.",
  );
}
