/**
 * The in-process runtime of live sessions: each holds its credentials, its provider connection and
 * (through {@link SessionMedia}) its media plane, for as long as the session lives.
 *
 * The runtime knows nothing of KV or HTTP: the session worker (`src/worker/session_worker.ts`) drives it
 * and records state. Every way a
 * session leaves the runtime (start failure, end, engine closing, shutdown) zeroes its credentials.
 *
 * @module
 */
import { type StartSpec, TEARDOWN_TIMEOUT_MS } from "../vocabulary/host_requests.ts";
import { type Clock, systemClock } from "../clock.ts";
import type { Logger } from "../log.ts";
import type { EndReason } from "../vocabulary/end_reasons.ts";
import type { TransportKind } from "../vocabulary/transports.ts";
import type {
  ProviderBridge,
  ProviderClosure,
  ProviderConnection,
  ProviderEvents,
  ToolCall,
} from "../providers/types.ts";
import type { ProviderType } from "../providers/definitions/provider_types.ts";
import { TOOL_ERRORS } from "../providers/tool_calls.ts";
import type { CredentialHolder } from "../auth/credential_holder.ts";
import { ATTR, SPAN } from "../telemetry/names.ts";
import { recordEngineConnect } from "../telemetry/metrics.ts";
import { errorType, inSpan, SpanKind, untraced } from "../telemetry/tracing.ts";
import type { SessionMetrics } from "../metrics/session_metrics.ts";

/**
 * Engine events kept while the media plane starts (the engine may speak right after its handshake);
 * ≈ 30 s of 20 ms audio frames. Later ones are dropped.
 */
export const MAX_EARLY_EVENTS = 1500;

/**
 * A session's media plane (renderer, encoder, client sockets), attached by a {@link SessionMediaFactory}.
 * It receives the engine's events and reports what it rendered.
 */
export interface SessionMedia extends Omit<ProviderEvents, "onClosed" | "onToolCall"> {
  /** Forwards a tool call to the session's clients; without it, tool calls get an error result at once. */
  onToolCall?(call: ToolCall): void;
  /** Media chunks rendered so far. */
  chunksRendered(): number;
  /** Stops the media plane; resolves with a warning when it did not stop cleanly. */
  stop(options: { graceful: boolean; timeoutMs: number }): Promise<string | null>;
}

/** Creates the media plane of a session once its engine is connected. */
export type SessionMediaFactory = (session: {
  sessionId: string;
  projectId: string;
  avatarId: string | null;
  bgId: string | null;
  /** How the session's media reaches its browser. */
  transport: TransportKind;
  connection: ProviderConnection;
  /**
   * Called by the media plane when it fails on its own: the session ends with `outcome` (default:
   * `render_failed`, "The avatar media plane failed.").
   */
  fail(reason: string, outcome?: { endReason: EndReason; warning: string }): void;
  /** Called by the media plane whenever the number of connected media clients changes. */
  clientsChanged(count: number): void;
  /** The session's figures (the media plane and its players feed them), when collected. */
  metrics?: SessionMetrics;
}) => Promise<SessionMedia>;

/**
 * What starting a session needs: the host request's facts (`StartSpec`: ids, provider type, transport,
 * avatar and background), its credentials, and the connect deadline. The transport may be left out (tests;
 * default `websocket_fmp4`).
 */
export interface StartRequest extends Omit<StartSpec, "transport"> {
  /** How the session's media reaches its browser (default `websocket_fmp4`). */
  transport?: TransportKind;
  credentials: CredentialHolder;
  timeoutMs: number;
  /** Where the session's figures are collected (engine connect time, the agent's audio, the media's). */
  metrics?: SessionMetrics;
}

/** How an end went. */
export interface EndOutcome {
  /** Null when teardown completed gracefully; otherwise what went wrong (provider-agnostic). */
  warning: string | null;
  chunksRendered: number;
}

/** A session that ended without the API asking (engine closed, media failed). */
export interface SelfEnded {
  sessionId: string;
  projectId: string;
  closure: ProviderClosure;
  /** `engine_ended`, `engine_failed`, `engine_quota_exceeded`, `render_failed` or `sfu_failed`. */
  reason: EndReason;
  warning: string | null;
  chunksRendered: number;
  /** When the runtime had stopped (the session's true `ended_at`). */
  endedAt: number;
}

interface LiveSession {
  sessionId: string;
  projectId: string;
  credentials: CredentialHolder;
  connection: ProviderConnection;
  media: SessionMedia | null;
  ending: boolean;
  /** Media clients connected now. */
  clients: number;
}

/** Dependencies of the runtime. */
export interface SessionRuntimeDeps {
  bridges: Record<ProviderType, ProviderBridge>;
  logger: Logger;
  /** Media plane factory; without one, sessions run their engine connection only. */
  media?: SessionMediaFactory;
  /** Clock of `SelfEnded.endedAt` (default: the wall clock). */
  clock?: Clock;
}

/** Runs live sessions in this process. */
export class SessionRuntime {
  readonly #live = new Map<string, LiveSession>();
  readonly #releases = new Set<Promise<void>>();
  #onSelfEnded: (e: SelfEnded) => void | Promise<void> = () => {};
  /** Sessions ending by themselves: settled once their end is torn down and recorded. */
  readonly #selfEnding = new Map<string, Promise<void>>();
  readonly #clientListeners = new Set<(sessionId: string, count: number) => void>();

  constructor(readonly deps: SessionRuntimeDeps) {}

  /** Registers who is told when a session ends by itself. */
  onSelfEnded(handler: (e: SelfEnded) => void | Promise<void>): void {
    this.#onSelfEnded = handler;
  }

  /**
   * Registers a listener told whenever a session's media client count changes (the media plane reports it
   * through `clientsChanged`). Returns a function that removes the listener.
   */
  onClientsChanged(listener: (sessionId: string, count: number) => void): () => void {
    this.#clientListeners.add(listener);
    return () => this.#clientListeners.delete(listener);
  }

  /** The sessions live in this process now. */
  liveSessions(): { sessionId: string; projectId: string }[] {
    return [...this.#live.values()].filter((s) => !s.ending).map((s) => ({
      sessionId: s.sessionId,
      projectId: s.projectId,
    }));
  }

  /** Number of live sessions in this process. */
  get size(): number {
    return this.#live.size;
  }

  /** Whether this process runs the session. */
  has(sessionId: string): boolean {
    return this.#live.has(sessionId);
  }

  /** Media clients connected to the session now (0 if it does not run here). */
  clientCount(sessionId: string): number {
    return this.#live.get(sessionId)?.clients ?? 0;
  }

  /**
   * Connects the session's engine and media plane. On failure the credentials are zeroed and the
   * mapped {@link import("../errors.ts").ApiError} is thrown.
   */
  async start(req: StartRequest): Promise<void> {
    const bridge = this.deps.bridges[req.providerType];
    let session: LiveSession | null = null;
    // Events that arrive before the media plane is up are replayed to it once it is.
    let early: ((m: SessionMedia) => void)[] | null = this.deps.media ? [] : null;
    const toMedia = (deliver: (m: SessionMedia) => void) => {
      const media = session?.media;
      if (media) deliver(media);
      else if (early && early.length < MAX_EARLY_EVENTS) early.push(deliver);
    };
    const metrics = req.metrics;
    const events: ProviderEvents = {
      onAudio: (pcm, id) => {
        metrics?.agentAudio(id);
        // `pcm` may be a view of the engine socket's read buffer (valid during this call): kept, a copy.
        const media = session?.media;
        if (media) media.onAudio(pcm, id);
        else {
          const kept = pcm.slice();
          toMedia((m) => m.onAudio(kept, id));
        }
      },
      onResponseStarted: (id) => toMedia((m) => m.onResponseStarted(id)),
      onResponseDone: (id, status) => toMedia((m) => m.onResponseDone(id, status)),
      onInterrupt: (id) => toMedia((m) => m.onInterrupt(id)),
      onTranscript: (line) => toMedia((m) => m.onTranscript(line)),
      onToolCall: (call) => {
        // No media plane (none in this wiring, or it failed to start), or no room to keep the call until it
        // is up: the engine gets its error result at once instead of waiting for its own timeout.
        const noClient = () => call.respond({ output: TOOL_ERRORS.noClient, isError: true });
        const media = session?.media;
        if (session?.ending) return noClient();
        if (media) return media.onToolCall ? media.onToolCall(call) : noClient();
        if (!early || early.length >= MAX_EARLY_EVENTS) return noClient();
        early.push((m) => m.onToolCall ? m.onToolCall(call) : noClient());
      },
      onAgentWords: (id, words) => toMedia((m) => m.onAgentWords?.(id, words)),
      onAgentAlignment: (id, alignment) => toMedia((m) => m.onAgentAlignment?.(id, alignment)),
      onClosed: (closure) => {
        const reason: EndReason = closure.kind === "failed"
          ? "engine_failed"
          : closure.kind === "quota_exhausted"
          ? "engine_quota_exceeded"
          : "engine_ended";
        if (session) void this.#selfEnd(session, closure, reason, null);
      },
    };
    let connection: ProviderConnection;
    const connectStarted = performance.now();
    const connectStart = metrics?.now();
    try {
      // The engine's URL may carry its credential (a query token, a signed URL): Deno's own span of the
      // connection is left unsampled, and this span records the provider type only (src/telemetry/).
      connection = await inSpan(
        SPAN.engineConnect,
        { kind: SpanKind.CLIENT, attributes: { [ATTR.providerType]: req.providerType } },
        () =>
          untraced(() =>
            bridge.connect({
              sessionId: req.sessionId,
              credentials: req.credentials,
              timeoutMs: req.timeoutMs,
              events,
              metadata: {
                ...(req.avatarId ? { avatar_id: req.avatarId } : {}),
                ...(req.bgId ? { bg_id: req.bgId } : {}),
              },
            })
          ),
      );
      recordEngineConnect(req.providerType, (performance.now() - connectStarted) / 1000, null);
    } catch (err) {
      req.credentials.zero();
      recordEngineConnect(req.providerType, (performance.now() - connectStarted) / 1000, errorType(err));
      throw err;
    }
    if (metrics && connectStart !== undefined) metrics.engineConnected(metrics.now() - connectStart);
    this.#track(connection.released);
    session = {
      sessionId: req.sessionId,
      projectId: req.projectId,
      credentials: req.credentials,
      connection,
      media: null,
      ending: false,
      clients: 0,
    };
    this.#live.set(req.sessionId, session);
    if (this.deps.media) {
      try {
        const media = this.deps.media;
        session.media = await inSpan(
          SPAN.firstFrame,
          { attributes: { [ATTR.transport]: req.transport } },
          () =>
            media({
              sessionId: req.sessionId,
              projectId: req.projectId,
              avatarId: req.avatarId,
              bgId: req.bgId,
              transport: req.transport ?? "websocket_fmp4",
              connection,
              metrics,
              fail: (reason, outcome) => {
                if (session) {
                  void this.#selfEnd(
                    session,
                    { kind: "failed", reason },
                    outcome?.endReason ?? "render_failed",
                    outcome?.warning ?? "The avatar media plane failed.",
                  );
                }
              },
              clientsChanged: (count) => {
                if (!session || session.ending || session.clients === count) return;
                session.clients = count;
                for (const listener of this.#clientListeners) listener(req.sessionId, count);
              },
            }),
        );
        if (session.ending) {
          // The engine went away while the media plane started: release it at once.
          await session.media.stop({ graceful: false, timeoutMs: 0 });
        } else {
          for (const deliver of early!.splice(0)) deliver(session.media);
        }
        early = null;
      } catch (err) {
        early = null;
        this.#live.delete(req.sessionId);
        session.ending = true;
        await connection.close({ graceful: false, timeoutMs: 0, reason: "start_failed" });
        req.credentials.zero();
        throw err;
      }
    }
  }

  /**
   * Ends a session run by this process: graceful (engine handshake, bounded by `timeoutMs`) or forced.
   * A session this process does not run ends with a warning.
   */
  async end(
    sessionId: string,
    options: { force: boolean; timeoutMs?: number; reason?: string },
  ): Promise<EndOutcome> {
    const session = this.#live.get(sessionId);
    if (!session || session.ending) {
      return {
        warning: "The session's runtime was no longer running; its resources were already released.",
        chunksRendered: 0,
      };
    }
    session.ending = true;
    const timeoutMs = options.timeoutMs ?? TEARDOWN_TIMEOUT_MS;
    const warnings: string[] = [];
    try {
      // The media plane and the engine connection stop side by side, each within the whole budget.
      const [mediaWarning, res] = await Promise.all([
        session.media?.stop({ graceful: !options.force, timeoutMs }) ?? Promise.resolve(null),
        session.connection.close({
          graceful: !options.force,
          timeoutMs,
          reason: options.reason ?? "ended_by_api",
        }),
      ]);
      if (mediaWarning) warnings.push(mediaWarning);
      if (!res.clean && res.detail) warnings.push(res.detail);
    } catch (err) {
      this.deps.logger.warn("teardown error", { session_id: sessionId, error: String(err).slice(0, 200) });
      warnings.push("Part of the session's teardown failed.");
    } finally {
      session.credentials.zero();
      this.#live.delete(sessionId);
    }
    return {
      warning: warnings.length ? warnings.join(" ") : null,
      chunksRendered: session.media?.chunksRendered() ?? 0,
    };
  }

  /** Force-ends every session (process shutdown) and waits for every connection to be released. */
  async shutdown(): Promise<void> {
    await Promise.all([...this.#live.keys()].map((id) => this.end(id, { force: true, reason: "shutdown" })));
    await Promise.all(this.#releases);
  }

  #track(p: Promise<void>): void {
    this.#releases.add(p);
    p.finally(() => this.#releases.delete(p));
  }

  /**
   * Resolves once a session that is ending by itself (engine closed, media failed) has been torn down and
   * its end recorded; at once when it is not ending by itself. An end asked for meanwhile waits for this, so
   * that it answers with what really happened.
   */
  async selfEndSettled(sessionId: string): Promise<void> {
    await this.#selfEnding.get(sessionId);
  }

  #selfEnd(
    session: LiveSession,
    closure: ProviderClosure,
    reason: EndReason,
    warning: string | null,
  ): Promise<void> {
    if (session.ending) return Promise.resolve();
    session.ending = true;
    this.#live.delete(session.sessionId);
    const done = this.#tearDownSelfEnded(session, closure, reason, warning)
      .finally(() => this.#selfEnding.delete(session.sessionId));
    this.#selfEnding.set(session.sessionId, done);
    return done;
  }

  async #tearDownSelfEnded(
    session: LiveSession,
    closure: ProviderClosure,
    reason: EndReason,
    warning: string | null,
  ): Promise<void> {
    let mediaWarning: string | null = null;
    try {
      if (session.media) mediaWarning = await session.media.stop({ graceful: false, timeoutMs: 2000 });
      await session.connection.close({ graceful: false, timeoutMs: 0, reason: closure.reason });
    } catch { /* best effort: the session is over either way */ }
    session.credentials.zero();
    this.deps.logger.info("session ended by itself", {
      session_id: session.sessionId,
      reason: closure.reason,
    });
    await this.#onSelfEnded({
      sessionId: session.sessionId,
      projectId: session.projectId,
      closure,
      reason,
      warning: warning ?? mediaWarning,
      chunksRendered: session.media?.chunksRendered() ?? 0,
      endedAt: (this.deps.clock ?? systemClock).now(),
    });
  }
}
