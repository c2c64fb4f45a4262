/**
 * The session service: the six endpoints' session logic over KV records and the in-process runtime.
 *
 * States: a new session is written `created` (taking a concurrency slot), moves to `activating` while its
 * engine connects, then `active` (the only state a create answers 200 with), or `failed` (slot freed, the
 * mapped error returned). End moves `active` → `ending` → `ended` | `ended_with_warnings`, whether the API
 * asked (`ended_by_api[_forced]`), a lifetime limit was reached, or the service is shutting down; the engine
 * or the media plane ending a session moves it from `active` straight to its final state. Every final state
 * carries its `end_reason` (see `end_reasons.ts`), and the webhook event it causes is written with it.
 *
 * @module
 */
import type { Clock } from "../clock.ts";
import type { Config } from "../config.ts";
import { ApiError, type ErrorCode } from "../errors.ts";
import { newSessionId } from "../ids.ts";
import {
  canonicalJson,
  claimIdempotencyKey,
  completeIdempotencyKey,
  dropIdempotencyRecord,
  type IdempotencyRecord,
  releaseIdempotencyKey,
} from "../kv/idempotency.ts";
import { retryUnavailable } from "../kv/guard.ts";
import { sessionKey } from "../kv/keys.ts";
import {
  getSession,
  insertSession,
  type SessionRecord,
  TERMINAL_STATUSES,
  transitionSession,
} from "../kv/sessions.ts";
import { getOrCreateWebhookSecret } from "../kv/webhook_secrets.ts";
import type { Logger } from "../log.ts";
import { checkProviderConfigShape } from "../providers/config_schema.ts";
import type { ProviderType } from "../providers/types.ts";
import { CredentialHolder } from "../runtime/credential_holder.ts";
import { type SelfEnded, type SessionRuntime, TEARDOWN_TIMEOUT_MS } from "../runtime/session_runtime.ts";
import type { TokenService } from "../auth/tokens.ts";
import { durationS } from "../webhooks/events.ts";
import { checkWebhookUrl, dnsResolver, type Resolver, WebhookUrlError } from "../webhooks/url_guard.ts";
import { type EndReason, OWNER_LOST_WARNING, REMOTE_END_WARNING } from "./end_reasons.ts";
import { LifetimeMonitor } from "./lifetime.ts";
import { resolveTransport, type Transport } from "./transport.ts";
import { CATALOG, resolveAvatarConfig } from "../media/catalog.ts";
import type { MediaPlaneInfo } from "../media/plane.ts";

/** The authenticated caller. */
export interface Caller {
  projectId: string;
  keyId: string;
}

/** A validated create-session body. */
export interface CreateSessionInput {
  provider_type: ProviderType;
  provider_config: Record<string, Record<string, unknown> | undefined>;
  avatar_config?: { avatar_id?: string; bg_id?: string };
  transport: Transport;
  webhook_url?: string;
}

/** `stream_metadata` of create and client-token answers. */
export interface StreamMetadata {
  ice_servers: { urls: string | string[]; username?: string; credential?: string }[];
  session_token: string;
  sfu_endpoint: string | null;
  /** The media WebSocket of a websocket_fmp4 session (null when this process runs no media plane). */
  media_url: string | null;
}

/** The create-session answer. */
export interface CreatedSession {
  client_token: string;
  expires_at: number;
  session_id: string;
  status: SessionRecord["status"];
  stream_metadata: StreamMetadata;
  transport: SessionRecord["transport"];
}

/** The public view of a session (GET). */
export interface SessionView {
  session_id: string;
  status: SessionRecord["status"];
  provider_type: ProviderType;
  transport: SessionRecord["transport"];
  created_at?: number;
  started_at?: number;
  ended_at?: number;
  /** Why the session ended or failed (absent while it is live). */
  end_reason?: EndReason;
}

/** The end answer. */
export interface EndedSession {
  session_id: string;
  status: SessionRecord["status"];
  ended_at: number;
  chunks_rendered: number;
  duration_s: number;
  warning?: string;
  end_reason: EndReason;
}

/** The client-token answer. */
export interface MintedToken {
  client_token: string;
  expires_at: number;
  stream_metadata: StreamMetadata;
  transport: SessionRecord["transport"];
}

/** Dependencies of the session service. */
export interface SessionServiceDeps {
  kv: Deno.Kv;
  clock: Clock;
  config: Config;
  runtime: SessionRuntime;
  tokens: TokenService;
  logger: Logger;
  /** Id of this process, recorded as the owner of the sessions it runs. */
  instanceId: string;
  /**
   * How long an end asked of another process waits beyond the teardown timeout for that process to carry
   * it out before ending the session itself (default 5 s).
   */
  remoteEndMarginMs?: number;
  /** Teardown timeout for graceful ends (the spec's 10 s; tests may shorten it). */
  teardownTimeoutMs?: number;
  /** How long a concurrent duplicate (same Idempotency-Key) waits for the first request. */
  idempotencyWaitMs?: number;
  /** Resolves webhook hosts for the destination check at creation (default: the system DNS). */
  resolve?: Resolver;
  /** The media plane, when this process runs one. */
  media?: MediaPlaneInfo;
}

/** The session logic behind the `/v1/sessions` routes. */
export class SessionService {
  /** Ends this process's sessions when their join window, idle timeout or maximum duration is up. */
  readonly lifetimes: LifetimeMonitor;
  /** Ends and records running in the background (lifetime ends, engine/media self-ends). */
  readonly #background = new Set<Promise<unknown>>();

  constructor(readonly deps: SessionServiceDeps) {
    deps.runtime.onSelfEnded((e) => {
      const recorded = this.#recordSelfEnd(e);
      this.#inBackground(recorded);
      return recorded;
    });
    this.lifetimes = new LifetimeMonitor({
      runtime: deps.runtime,
      clock: deps.clock,
      limits: deps.config.lifetimes,
      onExpired: (projectId, sessionId, reason) =>
        this.#inBackground(this.endBySelf(projectId, sessionId, reason)),
    });
  }

  /** Resolves once the ends and records running in the background have settled. */
  async settled(): Promise<void> {
    while (this.#background.size) await Promise.allSettled([...this.#background]);
  }

  #inBackground(p: Promise<unknown>): void {
    this.#background.add(p);
    p.finally(() => this.#background.delete(p));
  }

  /** Creates and starts a session; answers only once it is `active` (or throws the mapped error). */
  async create(
    caller: Caller,
    input: CreateSessionInput,
    idempotencyKey: string | undefined,
  ): Promise<{ session: CreatedSession; replayed: boolean }> {
    const { kv, clock, config, tokens } = this.deps;
    const shapeError = checkProviderConfigShape(input.provider_type, input.provider_config, {
      vendors: config.vendors,
      now: clock.now(),
    });
    if (shapeError) throw new ApiError("SVC_PROVIDER_MISCONFIGURED", shapeError);
    const transport = resolveTransport(input.transport, false);
    // Unknown avatars are refused before anything is written; omitted ids take the catalog's defaults.
    const avatar = resolveAvatarConfig(CATALOG, input.avatar_config);
    if (!tokens.available) throw new ApiError("SVC_TOKEN_SECRET_NOT_CONFIGURED");
    if (input.webhook_url !== undefined) await this.#checkWebhookUrl(caller.projectId, input.webhook_url);

    let claim: { key: string; versionstamp: string; record: IdempotencyRecord } | null = null;
    if (idempotencyKey !== undefined) {
      const fingerprint = await this.#fingerprint(input);
      const outcome = await this.#claim(caller.projectId, idempotencyKey, fingerprint);
      if (outcome.kind === "replay") {
        return { session: await this.#replay(caller, outcome.sessionId), replayed: true };
      }
      claim = { key: idempotencyKey, versionstamp: outcome.versionstamp, record: outcome.record };
    }

    // A cheap early refusal when every render slot is taken (the media factory enforces it exactly).
    if (this.deps.media && !this.deps.media.hasCapacity()) {
      if (claim) {
        await releaseIdempotencyKey(kv, caller.projectId, claim.key, claim.record.claim_id).catch(() => {});
      }
      throw new ApiError("SVC_RENDER_CAPACITY");
    }

    // From here on the credentials live only in the holder.
    const credentials = CredentialHolder.fromObject(input.provider_config[input.provider_type]!);
    const sessionId = newSessionId();
    const record: SessionRecord = {
      session_id: sessionId,
      project_id: caller.projectId,
      status: "created",
      provider_type: input.provider_type,
      transport,
      avatar_id: avatar.avatarId,
      bg_id: avatar.bgId,
      webhook_url: input.webhook_url ?? null,
      created_at: clock.now(),
      started_at: null,
      ended_at: null,
      warning: null,
      error_code: null,
      end_reason: null,
      chunks_rendered: 0,
      created_by: caller.keyId,
      owner: this.deps.instanceId,
    };
    const release = async () => {
      if (claim) {
        await releaseIdempotencyKey(kv, caller.projectId, claim.key, claim.record.claim_id).catch(() => {});
      }
    };
    try {
      await insertSession(
        kv,
        record,
        config.maxConcurrentSessions,
        claim
          ? {
            key: claim.key,
            versionstamp: claim.versionstamp,
            value: { ...claim.record, session_id: sessionId },
          }
          : undefined,
      );
    } catch (err) {
      credentials.zero();
      await release();
      throw err;
    }

    try {
      await transitionSession(kv, caller.projectId, sessionId, ["created"], "activating", {}, clock.now());
    } catch (err) {
      credentials.zero();
      await this.#markFailed(caller.projectId, sessionId, "SVC_SESSION_STATE_UNAVAILABLE", ["created"]);
      await release();
      throw err;
    }

    try {
      await this.deps.runtime.start({
        sessionId,
        projectId: caller.projectId,
        providerType: input.provider_type,
        credentials,
        avatarId: record.avatar_id,
        bgId: record.bg_id,
        timeoutMs: config.providerConnectTimeoutMs,
      });
    } catch (err) {
      const code: ErrorCode = err instanceof ApiError ? err.code : "SVC_INTERNAL_ERROR";
      await this.#markFailed(caller.projectId, sessionId, code, ["activating"]);
      await release();
      throw err;
    }

    let activated: { ok: boolean; record: SessionRecord | null };
    try {
      const startedAt = clock.now();
      activated = await transitionSession(kv, caller.projectId, sessionId, ["activating"], "active", {
        started_at: startedAt,
      }, startedAt);
    } catch (err) {
      await this.deps.runtime.end(sessionId, { force: true, reason: "start_failed" });
      await this.#markFailed(caller.projectId, sessionId, "SVC_SESSION_STATE_UNAVAILABLE", ["activating"]);
      await release();
      throw err;
    }
    if (!activated.ok) {
      await this.deps.runtime.end(sessionId, { force: true, reason: "cancelled" });
      await release();
      throw new ApiError("SVC_SESSION_CANCELLED");
    }
    this.lifetimes.track(caller.projectId, sessionId, activated.record!.started_at!);
    if (claim) await completeIdempotencyKey(kv, caller.projectId, claim.key, sessionId).catch(() => {});
    this.deps.logger.info("session active", { session_id: sessionId, project_id: caller.projectId });
    return { session: await this.#answer(activated.record!), replayed: false };
  }

  /** The public view of one session of the caller's project. */
  async get(caller: Caller, sessionId: string): Promise<SessionView> {
    const rec = await getSession(this.deps.kv, caller.projectId, sessionId);
    if (!rec) throw new ApiError("SVC_SESSION_NOT_FOUND");
    return toView(rec);
  }

  /** Ends an active session (graceful with the 10 s teardown timeout, or forced). */
  async end(caller: Caller, sessionId: string, force: boolean): Promise<EndedSession> {
    const ended = await this.#finish(caller.projectId, sessionId, {
      force,
      reason: force ? "ended_by_api_forced" : "ended_by_api",
    });
    this.deps.logger.info("session ended", { session_id: sessionId, status: ended.status, forced: force });
    return ended;
  }

  /**
   * Ends an active session of this process for a reason of its own (a lifetime limit, shutdown). Never
   * throws: a session that is no longer active is left as it is.
   */
  async endBySelf(
    projectId: string,
    sessionId: string,
    reason: EndReason,
    options: { timeoutMs?: number } = {},
  ): Promise<EndedSession | null> {
    try {
      const ended = await this.#finish(projectId, sessionId, { force: false, reason, ...options });
      this.deps.logger.info("session ended", { session_id: sessionId, status: ended.status, reason });
      return ended;
    } catch (err) {
      if (!(err instanceof ApiError) || err.status >= 500) {
        this.deps.logger.error("could not end a session", {
          session_id: sessionId,
          reason,
          error: String(err),
        });
      }
      return null;
    }
  }

  /** Ends every session this process runs, gracefully within `timeoutMs` (service shutdown). */
  async endAllLocal(reason: EndReason, timeoutMs: number): Promise<void> {
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
  async abandonAllLocal(): Promise<void> {
    const { kv, clock, runtime } = this.deps;
    await Promise.all(
      runtime.liveSessions().map(async (s) => {
        this.lifetimes.untrack(s.sessionId);
        const outcome = await runtime.end(s.sessionId, { force: true, reason: "owner_lost" });
        await transitionSession(kv, s.projectId, s.sessionId, ["active", "ending"], "ended_with_warnings", {
          ended_at: clock.now(),
          warning: OWNER_LOST_WARNING,
          chunks_rendered: outcome.chunksRendered,
          end_reason: "owner_lost",
        }, clock.now()).catch((err) =>
          this.deps.logger.error("could not record a session's end", {
            session_id: s.sessionId,
            error: String(err),
          })
        );
      }),
    );
  }

  async #finish(
    projectId: string,
    sessionId: string,
    options: { force: boolean; reason: EndReason; timeoutMs?: number },
  ): Promise<EndedSession> {
    const { kv, clock, runtime } = this.deps;
    // A session ending by itself right now answers with that end (409 SVC_SESSION_ENDED), not a second one.
    await runtime.selfEndSettled(sessionId);
    if (!runtime.has(sessionId)) {
      const rec = await getSession(kv, projectId, sessionId);
      if (rec?.status === "active" && rec.owner !== null && rec.owner !== this.deps.instanceId) {
        return await this.#finishRemote(rec, options);
      }
    }
    const moved = await transitionSession(kv, projectId, sessionId, ["active"], "ending", {}, clock.now());
    if (!moved.ok) throw notActive(moved.record);
    return await this.#tearDown(projectId, sessionId, options);
  }

  /** Tears down a session of this process that is `ending`, and records its final state. */
  async #tearDown(
    projectId: string,
    sessionId: string,
    options: { force: boolean; reason: EndReason; timeoutMs?: number },
  ): Promise<EndedSession> {
    const { kv, clock, runtime } = this.deps;
    this.lifetimes.untrack(sessionId);
    const outcome = await runtime.end(sessionId, {
      force: options.force,
      timeoutMs: options.timeoutMs ?? this.deps.teardownTimeoutMs ?? TEARDOWN_TIMEOUT_MS,
      reason: options.reason,
    });
    const endedAt = clock.now();
    const status = outcome.warning ? "ended_with_warnings" : "ended";
    // The session is torn down: its final state must land, so brief storage failures are retried.
    const done = await retryUnavailable(() =>
      transitionSession(kv, projectId, sessionId, ["ending"], status, {
        ended_at: endedAt,
        warning: outcome.warning,
        chunks_rendered: outcome.chunksRendered,
        end_reason: options.reason,
      }, endedAt)
    );
    const rec = done.record!;
    return {
      session_id: sessionId,
      status: rec.status,
      ended_at: endedAt,
      chunks_rendered: outcome.chunksRendered,
      duration_s: durationS(rec.started_at, endedAt),
      ...(outcome.warning ? { warning: outcome.warning } : {}),
      end_reason: options.reason,
    };
  }

  /**
   * Ends a session that another process runs: marks it `ending` with an end request, which its owner
   * carries out on its next reconcile tick (graceful teardown included), and waits for the final state. If
   * the owner does not answer within the teardown timeout plus a margin (it is stuck, or dead and not yet
   * reaped), the session is ended here as `ended_with_warnings`; the owner tears its runtime down when it
   * sees that, or the reaper when its lease runs out.
   */
  async #finishRemote(
    rec: SessionRecord,
    options: { force: boolean; reason: EndReason; timeoutMs?: number },
  ): Promise<EndedSession> {
    const { kv, clock } = this.deps;
    const { project_id: projectId, session_id: sessionId } = rec;
    const moved = await transitionSession(kv, projectId, sessionId, ["active"], "ending", {
      end_request: { reason: options.reason, force: options.force, requested_by: this.deps.instanceId },
    }, clock.now());
    if (!moved.ok) throw notActive(moved.record);
    const waitMs = (options.timeoutMs ?? this.deps.teardownTimeoutMs ?? TEARDOWN_TIMEOUT_MS) +
      (this.deps.remoteEndMarginMs ?? 5_000);
    const deadline = Date.now() + waitMs;
    let final: SessionRecord | null = null;
    while (Date.now() < deadline) {
      const cur = await getSession(kv, projectId, sessionId);
      if (cur && cur.status !== "ending") {
        final = cur;
        break;
      }
      await new Promise((r) => setTimeout(r, 50));
    }
    if (!final) {
      const endedAt = clock.now();
      const done = await retryUnavailable(() =>
        transitionSession(kv, projectId, sessionId, ["ending"], "ended_with_warnings", {
          ended_at: endedAt,
          warning: REMOTE_END_WARNING,
          end_reason: options.reason,
        }, endedAt)
      );
      final = done.record!;
    }
    return {
      session_id: sessionId,
      status: final.status,
      ended_at: final.ended_at ?? clock.now(),
      chunks_rendered: final.chunks_rendered,
      duration_s: durationS(final.started_at, final.ended_at ?? clock.now()),
      ...(final.warning ? { warning: final.warning } : {}),
      end_reason: final.end_reason ?? options.reason,
    };
  }

  /**
   * Brings this process's runtime in line with the session records (called every lifecycle tick): carries
   * out end requests other processes recorded for sessions that run here, and tears down sessions whose
   * record was ended elsewhere (a remote end that timed out, a reaper).
   */
  async reconcileLocal(): Promise<void> {
    const { kv, runtime } = this.deps;
    const local = runtime.liveSessions();
    for (let i = 0; i < local.length; i += 10) {
      const batch = local.slice(i, i + 10);
      let entries: Deno.KvEntryMaybe<SessionRecord>[];
      try {
        entries = await kv.getMany<SessionRecord[]>(batch.map((s) => sessionKey(s.projectId, s.sessionId)));
      } catch {
        return; // storage unavailable: try again next tick
      }
      for (const [k, s] of batch.entries()) {
        const rec = entries[k].value;
        if (!rec || !runtime.has(s.sessionId)) continue;
        if (rec.status === "ending" && rec.end_request) {
          const req = rec.end_request;
          this.#inBackground(
            this.#tearDown(s.projectId, s.sessionId, { force: req.force, reason: req.reason }).then(
              () =>
                this.deps.logger.info("session ended at another process's request", {
                  session_id: s.sessionId,
                }),
              (err) =>
                this.deps.logger.error("could not end a session", {
                  session_id: s.sessionId,
                  error: String(err),
                }),
            ),
          );
        } else if (TERMINAL_STATUSES.includes(rec.status)) {
          // Ended elsewhere (a remote end that timed out, a reaper): release what still runs here; the record
          // is final already. (`created`/`activating` are starting here, `active`/`ending` are this process's.)
          this.lifetimes.untrack(s.sessionId);
          this.#inBackground(
            runtime.end(s.sessionId, { force: true, reason: rec.end_reason ?? "owner_lost" }),
          );
        }
      }
    }
  }

  /** Mints a fresh client token and session token for an active session. */
  async mintClientToken(caller: Caller, sessionId: string): Promise<MintedToken> {
    if (!this.deps.tokens.available) {
      const rec = await getSession(this.deps.kv, caller.projectId, sessionId);
      if (!rec) throw new ApiError("SVC_SESSION_NOT_FOUND");
      throw new ApiError("SVC_TOKEN_SECRET_NOT_CONFIGURED");
    }
    const rec = await getSession(this.deps.kv, caller.projectId, sessionId);
    if (!rec || rec.status !== "active") throw notActive(rec);
    const { client_token, expires_at, stream_metadata, transport } = await this.#answer(rec);
    return { client_token, expires_at, stream_metadata, transport };
  }

  async #answer(rec: SessionRecord): Promise<CreatedSession> {
    const { tokens } = this.deps;
    const client = await tokens.mint(rec.session_id, rec.project_id, "client");
    const media = await tokens.mint(rec.session_id, rec.project_id, "media");
    return {
      client_token: client.token,
      expires_at: client.expiresAt,
      session_id: rec.session_id,
      status: rec.status,
      stream_metadata: {
        ice_servers: [],
        session_token: media.token,
        sfu_endpoint: null,
        media_url: this.deps.media?.urlFor(rec.session_id) ?? null,
      },
      transport: rec.transport,
    };
  }

  async #replay(caller: Caller, sessionId: string): Promise<CreatedSession> {
    const rec = await getSession(this.deps.kv, caller.projectId, sessionId);
    if (!rec) throw new ApiError("SVC_SESSION_NOT_FOUND");
    return await this.#answer(rec);
  }

  /** Refuses (400) a webhook_url that is not https or points at a blocked address; creates the secret. */
  async #checkWebhookUrl(projectId: string, url: string): Promise<void> {
    const { config, clock } = this.deps;
    try {
      await checkWebhookUrl(url, config.webhooks.allowPrivate, this.deps.resolve ?? dnsResolver(2000));
    } catch (err) {
      if (!(err instanceof WebhookUrlError)) throw err;
      // A name that does not resolve now may later: delivery checks again.
      if (!err.transient) throw new ApiError("SVC_INVALID_REQUEST", `${err.message}.`);
    }
    // Operators can read the signing secret before the first event is sent.
    await getOrCreateWebhookSecret(this.deps.kv, projectId, clock.now());
  }

  async #fingerprint(input: CreateSessionInput): Promise<string> {
    const key = await this.deps.tokens.deriveKey("idempotency-fingerprint/v1");
    const mac = await crypto.subtle.sign("HMAC", key!, new TextEncoder().encode(canonicalJson(input)));
    return Array.from(new Uint8Array(mac), (b) => b.toString(16).padStart(2, "0")).join("");
  }

  /** Claims the key, or waits for a concurrent duplicate to finish and replays it. */
  async #claim(
    projectId: string,
    key: string,
    fingerprint: string,
  ): Promise<
    { kind: "claimed"; versionstamp: string; record: IdempotencyRecord } | {
      kind: "replay";
      sessionId: string;
    }
  > {
    const { kv, clock } = this.deps;
    const waitUntil = Date.now() + (this.deps.idempotencyWaitMs ?? 15_000);
    for (;;) {
      const r = await claimIdempotencyKey(kv, projectId, key, fingerprint, clock.now());
      if (r.kind === "mismatch") throw new ApiError("SVC_IDEMPOTENCY_KEY_REUSED");
      if (r.kind === "claimed") return r;
      // "done", or in flight with its session already written: look at the session.
      if (r.record.session_id !== null) {
        const rec = await getSession(kv, projectId, r.record.session_id);
        // Replay only what a create answered (or is answering) 200 for; a failed or vanished session
        // frees the key.
        if (!rec || rec.status === "failed") {
          await dropIdempotencyRecord(kv, projectId, key, r.versionstamp);
          continue;
        }
        if (rec.status !== "created" && rec.status !== "activating") {
          return { kind: "replay", sessionId: rec.session_id };
        }
      }
      if (Date.now() >= waitUntil) throw new ApiError("SVC_IDEMPOTENCY_IN_PROGRESS");
      await new Promise((res) => setTimeout(res, 50));
    }
  }

  async #markFailed(
    projectId: string,
    sessionId: string,
    code: ErrorCode,
    from: SessionRecord["status"][],
  ): Promise<void> {
    try {
      await retryUnavailable(() =>
        transitionSession(this.deps.kv, projectId, sessionId, from, "failed", {
          error_code: code,
          end_reason: "start_failed",
          ended_at: this.deps.clock.now(),
        }, this.deps.clock.now())
      );
    } catch (err) {
      this.deps.logger.error("could not record a failed session", {
        session_id: sessionId,
        error: String(err),
      });
    }
  }

  async #recordSelfEnd(e: SelfEnded): Promise<void> {
    this.lifetimes.untrack(e.sessionId);
    const failed = e.closure.kind === "failed";
    const warning = failed ? (e.warning ?? "The conversation engine connection was lost.") : e.warning;
    try {
      await retryUnavailable(() =>
        transitionSession(
          this.deps.kv,
          e.projectId,
          e.sessionId,
          ["active"],
          warning ? "ended_with_warnings" : "ended",
          {
            ended_at: this.deps.clock.now(),
            warning,
            chunks_rendered: e.chunksRendered,
            end_reason: e.reason,
          },
          this.deps.clock.now(),
        )
      );
    } catch (err) {
      this.deps.logger.error("could not record a session's end", {
        session_id: e.sessionId,
        error: String(err),
      });
    }
  }
}

function notActive(rec: SessionRecord | null): ApiError {
  if (!rec) return new ApiError("SVC_SESSION_NOT_FOUND");
  if (rec.status === "ended" || rec.status === "ended_with_warnings") {
    return new ApiError("SVC_SESSION_ENDED");
  }
  return new ApiError("SVC_SESSION_CONFLICT", `The session is ${rec.status}, not active.`);
}

/** The public view of a record (no credentials, no tokens, no internal fields). */
export function toView(rec: SessionRecord): SessionView {
  return {
    session_id: rec.session_id,
    status: rec.status,
    provider_type: rec.provider_type,
    transport: rec.transport,
    created_at: rec.created_at,
    ...(rec.started_at !== null ? { started_at: rec.started_at } : {}),
    ...(rec.ended_at !== null ? { ended_at: rec.ended_at } : {}),
    ...(rec.end_reason !== null ? { end_reason: rec.end_reason } : {}),
  };
}
